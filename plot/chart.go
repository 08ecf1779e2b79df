package plot

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/go-analyze/charts/chartdraw"
	"github.com/go-analyze/charts/chartdraw/drawing"

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

// Chart sizes in pixels (16 × 10 cm at 96 dpi): fixed so that output is
// reproducible byte for byte.
const (
	Width  = 605
	Height = 378
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
	ch, err := c.build()
	if err != nil {
		return err
	}
	render := chartdraw.SVG
	switch f {
	case SVG:
	case PNG:
		render = chartdraw.PNG
	default:
		return fmt.Errorf("plot format %q: want svg or png", f)
	}
	if err := ch.Render(render, w); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
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
	seriesColors = []drawing.Color{
		{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
		{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
		{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	}
	limitColors = []drawing.Color{
		{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		{R: 0x33, G: 0x33, B: 0x33, A: 0xff},
		{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
		{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	}
	gridColor = drawing.Color{R: 0xdd, G: 0xdd, B: 0xdd, A: 0xff}
)

// legendRowShare is the share of the y range kept free above the data per
// legend row, so the legend in the top-left corner does not cover curves.
const legendRowShare = 0.07

// build lays the chart out with chartdraw, which parses its font on the
// first chart drawn rather than when the program starts.
func (c Chart) build() (*chartdraw.Chart, error) {
	xmin, xmax, ymax, err := c.bounds()
	if err != nil {
		return nil, err
	}
	ytop := ymax * (1.05 + legendRowShare*float64(len(c.Series)+len(c.Limits)))
	var xr chartdraw.Range = &chartdraw.ContinuousRange{Min: xmin, Max: xmax}
	xticks := linearTicks(xmin, xmax, 8, fmtTick)
	if c.LogX && xmin > 0 {
		xr = &log2Range{min: xmin, max: xmax}
		xticks = pow2Ticks(xmin, xmax)
	}
	// chartdraw sets an axis's range from its first and last ticks.
	if xticks[0].Value > xmin {
		xticks = append([]chartdraw.Tick{{Value: xmin}}, xticks...)
	}
	if xticks[len(xticks)-1].Value < xmax {
		xticks = append(xticks, chartdraw.Tick{Value: xmax})
	}
	grid := chartdraw.Style{StrokeColor: gridColor, StrokeWidth: 1}
	ch := &chartdraw.Chart{
		Title:      c.Title,
		TitleStyle: chartdraw.Style{FontStyle: chartdraw.FontStyle{FontSize: 12}},
		Width:      Width,
		Height:     Height,
		Background: chartdraw.Style{Padding: chartdraw.Box{Top: 36, Left: 30, Right: 24, Bottom: 8, IsSet: true}},
		XAxis: chartdraw.XAxis{Name: c.XLabel, Range: xr, Ticks: xticks,
			GridMajorStyle: grid, GridLines: gridLines(xticks)},
		YAxis: chartdraw.YAxis{Name: "memory per GPU (GiB)", AxisType: chartdraw.YAxisSecondary, // drawn on the left
			Range: &chartdraw.ContinuousRange{Min: 0, Max: ytop}, Ticks: linearTicks(0, ytop, 8, fmtTick),
			GridMajorStyle: grid},
		YAxisSecondary: chartdraw.HideYAxis(),
	}
	ch.YAxis.GridLines = gridLines(ch.YAxis.Ticks)
	for i, s := range c.Series {
		xs, ys := make([]float64, len(s.X)), make([]float64, len(s.X))
		for k := range s.X {
			xs[k], ys[k] = float64(s.X[k]), s.Bytes[k].GiBf()
		}
		col := seriesColors[i%len(seriesColors)]
		ch.Series = append(ch.Series, chartdraw.ContinuousSeries{Name: s.Name, XValues: xs, YValues: ys,
			Style: chartdraw.Style{StrokeColor: col, StrokeWidth: 2, DotColor: col, DotWidth: 2.5}})
	}
	for i, lim := range c.Limits {
		y := lim.Bytes.GiBf()
		ch.Series = append(ch.Series, chartdraw.ContinuousSeries{Name: fmt.Sprintf("%s (%s)", lim.Name, lim.Bytes),
			XValues: []float64{xmin, xmax}, YValues: []float64{y, y},
			Style: chartdraw.Style{StrokeColor: limitColors[i%len(limitColors)], StrokeWidth: 1.5, StrokeDashArray: []float64{6, 3}}})
	}
	ch.Elements = []chartdraw.Renderable{chartLegend(ch)}
	return ch, nil
}

// chartLegend draws the series' names with their line styles in a box at the
// top left of the plot, one compact row per series: chartdraw's own
// legends are spaced for a few series or laid out in one row, where six
// names (three peaks, three GPUs) do not fit.
func chartLegend(c *chartdraw.Chart) chartdraw.Renderable {
	return func(r chartdraw.Renderer, cb chartdraw.Box, defaults chartdraw.Style) {
		const pad, gap, lineLen, rowGap = 5, 5, 25, 4
		style := chartdraw.Style{
			FillColor:   drawing.ColorWhite,
			StrokeColor: chartdraw.DefaultAxisColor,
			StrokeWidth: chartdraw.DefaultAxisLineWidth,
			FontStyle:   chartdraw.FontStyle{FontColor: chartdraw.DefaultTextColor, FontSize: 8},
		}.InheritFrom(defaults)
		style.GetTextOptions().WriteToRenderer(r)
		rowH, textW := 0, 0
		for _, s := range c.Series {
			tb := r.MeasureText(s.GetName())
			rowH, textW = max(rowH, tb.Height()), max(textW, tb.Width())
		}
		box := chartdraw.Box{Top: cb.Top + pad, Left: cb.Left + pad, IsSet: true}
		box.Right = box.Left + pad + lineLen + gap + textW + pad
		box.Bottom = box.Top + pad + len(c.Series)*(rowH+rowGap) - rowGap + pad
		chartdraw.Draw.Box(r, box, style)
		for i, s := range c.Series {
			y := box.Top + pad + i*(rowH+rowGap) + rowH
			ls := s.GetStyle()
			r.SetStrokeColor(ls.StrokeColor)
			r.SetStrokeWidth(ls.StrokeWidth)
			r.SetStrokeDashArray(ls.StrokeDashArray)
			r.MoveTo(box.Left+pad, y-rowH/2)
			r.LineTo(box.Left+pad+lineLen, y-rowH/2)
			r.Stroke()
			style.GetTextOptions().WriteToRenderer(r)
			r.Text(s.GetName(), box.Left+pad+lineLen+gap, y)
		}
	}
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

// log2Range places x on a log scale, for sequence lengths and batch sizes
// that double; it implements chartdraw.Range (chartdraw's own logarithmic
// range measures from the minimum in linear terms).
type log2Range struct {
	min, max float64
	domain   int
}

func (r *log2Range) String() string {
	return fmt.Sprintf("log2Range [%g,%g] => %d", r.min, r.max, r.domain)
}
func (r *log2Range) IsZero() bool         { return r.min == 0 && r.max == 0 && r.domain == 0 }
func (r *log2Range) GetMin() float64      { return r.min }
func (r *log2Range) SetMin(v float64)     { r.min = v }
func (r *log2Range) GetMax() float64      { return r.max }
func (r *log2Range) SetMax(v float64)     { r.max = v }
func (r *log2Range) GetDelta() float64    { return r.max - r.min }
func (r *log2Range) GetDomain() int       { return r.domain }
func (r *log2Range) SetDomain(domain int) { r.domain = domain }
func (r *log2Range) IsDescending() bool   { return false }
func (r *log2Range) Translate(v float64) int {
	if v <= 0 || r.max <= r.min {
		return 0
	}
	f := (math.Log2(v) - math.Log2(r.min)) / (math.Log2(r.max) - math.Log2(r.min))
	return int(math.Round(f * float64(r.domain)))
}

// pow2Ticks marks the powers of two in [lo, hi] on a log axis, labelled
// 512, 1k, 32k, 1M; with more than ten, every second (or n-th) is labelled.
func pow2Ticks(lo, hi float64) []chartdraw.Tick {
	var ts []chartdraw.Tick
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
		ts = append(ts, chartdraw.Tick{Value: v, Label: label})
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

// linearTicks marks about n round values (1, 2 or 5 times a power of ten
// apart) from lo to hi.
func linearTicks(lo, hi float64, n int, label func(float64) string) []chartdraw.Tick {
	raw := (hi - lo) / float64(n)
	if raw <= 0 || math.IsInf(raw, 0) || math.IsNaN(raw) {
		return []chartdraw.Tick{{Value: lo, Label: label(lo)}, {Value: hi, Label: ""}}
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{2, 5, 10} {
		if step >= raw {
			break
		}
		step = m * mag
	}
	var ts []chartdraw.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		ts = append(ts, chartdraw.Tick{Value: v, Label: label(v)})
	}
	// The last tick closes the axis range (chartdraw takes the range from
	// the ticks), unlabelled when it is not round.
	if last := ts[len(ts)-1].Value; last < hi {
		ts = append(ts, chartdraw.Tick{Value: hi})
	}
	return ts
}

func fmtTick(v float64) string { return fmt.Sprintf("%g", math.Round(v*1e6)/1e6) }

// gridLines draws a grid line at each labelled tick.
func gridLines(ts []chartdraw.Tick) []chartdraw.GridLine {
	var gl []chartdraw.GridLine
	for _, t := range ts {
		if t.Label != "" {
			gl = append(gl, chartdraw.GridLine{Value: t.Value})
		}
	}
	return gl
}
