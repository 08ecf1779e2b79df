package plot

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/units"
)

func TestLinearTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		want   string
	}{
		{0, 120.6, "0 20 40 60 80 100 120"},
		{0, 33.4, "0 5 10 15 20 25 30"},
		{0, 1, "0.0 0.2 0.4 0.6 0.8 1.0"},
		{0, 0.0042, "0.000 0.001 0.002 0.003 0.004"},
		{1, 32, "5 10 15 20 25 30"},
		{3, 3, "3"},
		{1 << 62, 1<<62 + 1024, "4.61169e+18 4.61169e+18"},
	}
	for _, tt := range tests {
		var labels []string
		for _, tk := range linearTicks(tt.lo, tt.hi) {
			labels = append(labels, tk.Label)
			if tk.Value < tt.lo || tk.Value > tt.hi*(1+1e-9) {
				t.Errorf("linearTicks(%g, %g): tick %g outside the range", tt.lo, tt.hi, tk.Value)
			}
		}
		if got := strings.Join(labels, " "); got != tt.want {
			t.Errorf("linearTicks(%g, %g) = %q, want %q", tt.lo, tt.hi, got, tt.want)
		}
	}
}

func TestDash(t *testing.T) {
	length := func(run []point) float64 {
		var n float64
		for i := 1; i < len(run); i++ {
			n += math.Hypot(run[i].x-run[i-1].x, run[i].y-run[i-1].y)
		}
		return n
	}
	tests := []struct {
		name    string
		pts     []point
		pattern []float64
		runs    int
		drawn   float64
	}{
		{"solid", []point{{0, 0}, {10, 0}, {10, 10}}, nil, 1, 20},
		{"even dashes", []point{{0, 0}, {18, 0}}, []float64{6, 3}, 2, 12},
		{"dash ends inside", []point{{0, 0}, {20, 0}}, []float64{6, 3}, 3, 14},
		{"dash across a corner", []point{{0, 0}, {4, 0}, {4, 4}}, []float64{6, 3}, 1, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := dash(tt.pts, tt.pattern)
			var drawn float64
			for _, r := range runs {
				drawn += length(r)
			}
			if len(runs) != tt.runs || math.Abs(drawn-tt.drawn) > 1e-9 {
				t.Errorf("%d runs drawing %g, want %d drawing %g", len(runs), drawn, tt.runs, tt.drawn)
			}
		})
	}
}

// TestLegendClearsData checks that the legend, in the plot area's
// top-left corner, ends above every point and limit.
func TestLegendClearsData(t *testing.T) {
	for _, n := range []int{1, 3, 8} {
		c := Chart{Title: "t", XLabel: "x", LogX: true}
		for i := range n {
			c.Series = append(c.Series, Series{Name: "s", X: []int{1, 64}, Bytes: []units.Bytes{units.GiB, units.Bytes(i+1) * 10 * units.GiB}})
		}
		c.Limits = []Limit{{"gpu", 24 * units.GiB}}
		l, err := c.layout()
		if err != nil {
			t.Fatal(err)
		}
		legendBottom := l.top + legendInset + float64(n+1)*l.legendRow()
		if top := l.y(float64(n) * 10); top < legendBottom {
			t.Errorf("%d series: highest point at y %.1f, legend down to %.1f", n, top, legendBottom)
		}
		if l.left >= l.right || l.top >= l.bottom || l.right > Width || l.bottom > Height {
			t.Errorf("%d series: plot area %.1f-%.1f x %.1f-%.1f outside the chart", n, l.left, l.right, l.top, l.bottom)
		}
	}
}

// TestPNGDrawsLimitWhereSVGDoes checks that the rasterised limit line is
// where the layout puts it, in its colour.
func TestPNGDrawsLimitWhereSVGDoes(t *testing.T) {
	c := Chart{XLabel: "x", Series: []Series{{Name: "s", X: []int{1, 2}, Bytes: []units.Bytes{units.GiB, 2 * units.GiB}}},
		Limits: []Limit{{"gpu", 4 * units.GiB}}}
	l, err := c.layout()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, PNG, c); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	k := PNGDPI / 72.0
	// The middle of the sixth dash (6 points on, 3 off) of the limit line.
	x, y := int(math.Round((l.left+5*(6+3)+3)*k)), int(math.Floor(l.y(4)*k))
	if !near(img, x, y, limitColors[0]) {
		t.Errorf("pixel (%d, %d) = %v, want the limit colour %v", x, y, img.At(x, y), limitColors[0])
	}
	if !near(img, 2, 2, color.RGBA{0xff, 0xff, 0xff, 0xff}) {
		t.Errorf("corner pixel %v, want white", img.At(2, 2))
	}
}

// near reports whether a pixel at most one row from (x, y) has colour c,
// give or take the blending of anti-aliased edges (32 levels a channel).
func near(img image.Image, x, y int, c color.RGBA) bool {
	diff := func(a uint32, b uint8) int { return abs(int(a>>8) - int(b)) }
	for dy := -1; dy <= 1; dy++ {
		r, g, b, _ := img.At(x, y+dy).RGBA()
		if diff(r, c.R) <= 32 && diff(g, c.G) <= 32 && diff(b, c.B) <= 32 {
			return true
		}
	}
	return false
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// FuzzChart draws charts of arbitrary points and limits: Write returns an
// error or a chart, never panics or loops, and the SVG holds no NaN or
// infinity.
func FuzzChart(f *testing.F) {
	f.Add(512, 131072, int64(14<<30), int64(80<<30), int64(24<<30), true)
	f.Add(0, 0, int64(0), int64(0), int64(1), false)
	f.Add(1<<62, 1<<62+1000, int64(1), int64(2), int64(3), false)
	f.Fuzz(func(t *testing.T, x1, x2 int, b1, b2, limit int64, logX bool) {
		c := Chart{Title: "t", XLabel: "x", LogX: logX,
			Series: []Series{{Name: "s", X: []int{x1, x2}, Bytes: []units.Bytes{units.Bytes(b1), units.Bytes(b2)}}},
			Limits: []Limit{{"gpu", units.Bytes(limit)}}}
		var buf bytes.Buffer
		if err := Write(&buf, SVG, c); err != nil {
			return
		}
		if s := buf.String(); strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
			t.Errorf("chart of %+v holds NaN or Inf", c)
		}
	})
}
