package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// Format is an image format the charts are written in.
type Format string

// Image formats.
const (
	SVG Format = "svg"
	PNG Format = "png"
)

// ParseFormat parses "svg" or "png" (case-insensitive).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case SVG, PNG:
		return f, nil
	}
	return "", fmt.Errorf("plot format %q: want svg or png", s)
}

// Chart sizes: fixed so that output is reproducible byte for byte.
const (
	Width  = 16 * vg.Centimeter
	Height = 10 * vg.Centimeter
)

// Series is one curve: memory (bytes) at each x.
type Series struct {
	Name  string
	X     []int
	Bytes []units.Bytes
}

// Limit is a horizontal line at a GPU's memory.
type Limit struct {
	Name  string
	Bytes units.Bytes
}

// Chart is a memory chart: curves against one job variable, and the GPU
// limits they must stay under.
type Chart struct {
	Title  string
	XLabel string
	Series []Series
	Limits []Limit
	// LogX draws x on a log2 scale (sequence lengths, batch sizes that
	// double).
	LogX bool
}

// ErrNoData reports a chart without any point to draw.
var ErrNoData = errors.New("plot: no data points")

// Write draws c in format f (SVG or PNG) to w. Y is in GiB.
func Write(w io.Writer, f Format, c Chart) error {
	p, err := c.build()
	if err != nil {
		return err
	}
	if f != SVG && f != PNG {
		return fmt.Errorf("plot format %q: want svg or png", f)
	}
	wt, err := p.WriterTo(Width, Height, string(f))
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	_, err = wt.WriteTo(w)
	return err
}

// MemoryVsSeqLen writes a chart of per-GPU memory against sequence length
// (log2 x axis) with the limits drawn as horizontal lines.
func MemoryVsSeqLen(w io.Writer, f Format, title string, series []Series, limits []Limit) error {
	return Write(w, f, Chart{Title: title, XLabel: "sequence length (tokens)", Series: series, Limits: limits, LogX: true})
}

// MemoryVsBatch writes a chart of per-GPU memory against batch size
// (log2 x axis) with the limits drawn as horizontal lines.
func MemoryVsBatch(w io.Writer, f Format, title string, series []Series, limits []Limit) error {
	return Write(w, f, Chart{Title: title, XLabel: "batch size per GPU", Series: series, Limits: limits, LogX: true})
}

// FromResults turns estimates at xs into the three curves users compare
// with their tools: torch's allocated and reserved peaks and the device
// peak nvidia-smi shows. Points whose level is zero are left out.
func FromResults(xs []int, rs []memory.Result) ([]Series, error) {
	if len(xs) != len(rs) {
		return nil, fmt.Errorf("plot: %d x values for %d results", len(xs), len(rs))
	}
	levels := []struct {
		name string
		get  func(memory.PerGPU) units.Bytes
	}{
		{"allocated peak", func(p memory.PerGPU) units.Bytes { return p.AllocatedPeakBytes }},
		{"reserved peak", func(p memory.PerGPU) units.Bytes { return p.ReservedPeakBytes }},
		{"device peak (nvidia-smi)", func(p memory.PerGPU) units.Bytes { return p.DevicePeakBytes }},
	}
	var out []Series
	for _, l := range levels {
		s := Series{Name: l.name}
		for i, r := range rs {
			if b := l.get(r.PerGPU); b > 0 {
				s.X = append(s.X, xs[i])
				s.Bytes = append(s.Bytes, b)
			}
		}
		if len(s.X) > 0 {
			out = append(out, s)
		}
	}
	return out, nil
}

// Line colours: the curves in dark tones, the limits in red shades.
var (
	seriesColors = []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
		color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	}
	limitColors = []color.Color{
		color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		color.RGBA{R: 0x33, G: 0x33, B: 0x33, A: 0xff},
		color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
		color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	}
)

// legendRowShare is the share of the y range kept free above the data per
// legend row, so the legend in the top-left corner does not cover curves.
const legendRowShare = 0.07

func (c Chart) build() (*gplot.Plot, error) {
	xmin, xmax, ymax, err := c.bounds()
	if err != nil {
		return nil, err
	}
	p := gplot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = "memory per GPU (GiB)"
	p.Y.Min, p.Y.Max = 0, ymax*(1.05+legendRowShare*float64(len(c.Series)+len(c.Limits)))
	p.X.Min, p.X.Max = xmin, xmax
	if c.LogX && xmin > 0 {
		p.X.Scale = gplot.LogScale{}
		p.X.Tick.Marker = pow2Ticks{}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	for i, s := range c.Series {
		xys := make(plotter.XYs, len(s.X))
		for k := range s.X {
			xys[k] = plotter.XY{X: float64(s.X[k]), Y: s.Bytes[k].GiBf()}
		}
		l, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("plot series %q: %w", s.Name, err)
		}
		l.Color = seriesColors[i%len(seriesColors)]
		l.Width = vg.Points(1.5)
		sc.Color = l.Color
		sc.Shape = draw.CircleGlyph{}
		sc.Radius = vg.Points(2)
		p.Add(l, sc)
		p.Legend.Add(s.Name, l, sc)
	}
	for i, lim := range c.Limits {
		y := lim.Bytes.GiBf()
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: y}, {X: xmax, Y: y}})
		if err != nil {
			return nil, fmt.Errorf("plot limit %q: %w", lim.Name, err)
		}
		l.Color = limitColors[i%len(limitColors)]
		l.Width = vg.Points(1.2)
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (%s)", lim.Name, lim.Bytes), l)
	}
	return p, nil
}

// bounds returns the x range and the largest y (GiB) to show, checking
// the data.
func (c Chart) bounds() (xmin, xmax, ymax float64, err error) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	n := 0
	for _, s := range c.Series {
		if len(s.X) != len(s.Bytes) {
			return 0, 0, 0, fmt.Errorf("plot series %q: %d x values for %d sizes", s.Name, len(s.X), len(s.Bytes))
		}
		for i, x := range s.X {
			if x < 0 || s.Bytes[i] < 0 || c.LogX && x == 0 {
				return 0, 0, 0, fmt.Errorf("plot series %q: point (%d, %d) out of range", s.Name, x, s.Bytes[i])
			}
			xmin, xmax = min(xmin, float64(x)), max(xmax, float64(x))
			ymax = max(ymax, s.Bytes[i].GiBf())
			n++
		}
	}
	if n == 0 {
		return 0, 0, 0, ErrNoData
	}
	for _, l := range c.Limits {
		if l.Bytes <= 0 {
			return 0, 0, 0, fmt.Errorf("plot limit %q: size %d, want a positive number of bytes", l.Name, l.Bytes)
		}
		ymax = max(ymax, l.Bytes.GiBf())
	}
	if xmax == xmin {
		xmin, xmax = xmin/2, xmax*2
		if xmax == 0 {
			xmax = 1
		}
	}
	if ymax == 0 {
		ymax = 1
	}
	return xmin, xmax, ymax, nil
}

// pow2Ticks marks powers of two on a log axis, labelled 512, 1k, 32k, 1M.
type pow2Ticks struct{}

// Ticks implements gonum's plot.Ticker.
func (pow2Ticks) Ticks(lo, hi float64) []gplot.Tick {
	var ts []gplot.Tick
	e0 := math.Floor(math.Log2(max(lo, 1)))
	e1 := math.Ceil(math.Log2(max(hi, 1)))
	step := math.Max(1, math.Ceil((e1-e0)/10))
	for e := e0; e <= e1; e++ {
		v := math.Exp2(e)
		if v < lo || v > hi {
			continue
		}
		label := ""
		if math.Mod(e-e0, step) == 0 {
			label = pow2Label(v)
		}
		ts = append(ts, gplot.Tick{Value: v, Label: label})
	}
	return ts
}

func pow2Label(v float64) string {
	switch {
	case v >= 1<<20:
		return fmt.Sprintf("%gM", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%gk", v/(1<<10))
	}
	return fmt.Sprintf("%g", v)
}
