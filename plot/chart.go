package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

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

// Chart sizes, in points (1/72 inch): 16 × 10 cm, fixed so that output
// is reproducible byte for byte. PNG charts are drawn at [PNGDPI].
const (
	Width  = 16 / 2.54 * 72
	Height = 10 / 2.54 * 72
)

// PNGDPI is the resolution of PNG charts in pixels per inch: a chart is
// 605 × 378 pixels.
const PNGDPI = 96

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
	l, err := c.layout()
	if err != nil {
		return err
	}
	switch f {
	case SVG:
		cv := newSVG(Width, Height)
		l.draw(cv)
		return cv.writeTo(w)
	case PNG:
		cv := newPNG(Width, Height, PNGDPI)
		l.draw(cv)
		return cv.writeTo(w)
	}
	return fmt.Errorf("plot format %q: want svg or png", f)
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
	seriesColors = []color.RGBA{
		{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
		{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
		{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	}
	limitColors = []color.RGBA{
		{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		{R: 0x33, G: 0x33, B: 0x33, A: 0xff},
		{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
		{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	}
	black     = color.RGBA{A: 0xff}
	gridColor = color.RGBA{R: 0xd9, G: 0xd9, B: 0xd9, A: 0xff}
)

// Sizes of the chart's parts, in points.
const (
	margin      = 6.0  // around the chart
	gap         = 4.0  // between a label and what it labels
	tickLength  = 4.0  // labelled ticks; others are half as long
	titleSize   = 12.0 // title and axis labels
	tickSize    = 10.0 // tick and legend labels
	lineWidth   = 1.5  // curves
	limitWidth  = 1.2  // GPU limits
	axisWidth   = 0.5  // axes, ticks and grid lines
	markerSize  = 2.0  // radius of the points on the curves
	legendLine  = 20.0 // length of the line shown before a legend entry
	legendInset = 6.0  // from the plot area's top-left corner
)

// limitDashes is the dash pattern of the limit lines: 6 points on, 3 off.
var limitDashes = []float64{6, 3}

// canvas is what a chart is drawn on, in points from the top-left corner.
type canvas interface {
	// line strokes the polyline through pts; dashes alternate lengths
	// drawn and skipped, nil for a solid line.
	line(pts []point, width float64, c color.RGBA, dashes []float64)
	// dot fills a circle.
	dot(center point, r float64, c color.RGBA)
	// text draws s with its baseline at p.y: starting at p.x (align 0),
	// centred on it (1) or ending at it (2); vertical text reads upwards
	// and is centred on p.
	text(p point, s string, size float64, align int, vertical bool)
}

// point is a position on the canvas, in points.
type point struct{ x, y float64 }

// Text alignments.
const (
	alignStart = iota
	alignCenter
	alignEnd
)

// tick is a mark on an axis; ticks without a label are drawn shorter and
// get no grid line.
type tick struct {
	Value float64
	Label string
}

// layout is a chart with its scales and plot area worked out.
type layout struct {
	c                        Chart
	xmin, xmax, ymax         float64
	xticks, yticks           []tick
	left, right, top, bottom float64 // plot area
	m                        metrics
}

// layout checks the data and places the chart's parts.
func (c Chart) layout() (*layout, error) {
	xmin, xmax, ymax, err := c.bounds()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics()
	if err != nil {
		return nil, err
	}
	l := &layout{c: c, xmin: xmin, xmax: xmax, m: m}
	l.c.LogX = c.LogX && xmin > 0
	if l.c.LogX {
		l.xticks = pow2Ticks{}.Ticks(xmin, xmax)
	} else {
		l.xticks = linearTicks(xmin, xmax)
	}

	l.top = margin
	if c.Title != "" {
		l.top += m.height(titleSize) + gap
	}
	l.bottom = Height - margin - m.height(tickSize) - tickLength - gap/2
	if c.XLabel != "" {
		l.bottom -= m.height(titleSize) + gap
	}
	// The y range leaves the legend, in the top-left corner, room above
	// the data (and 5 % more) so that it covers no curve or limit.
	rows := float64(len(c.Series) + len(c.Limits))
	legend := min(0.8, (legendInset+rows*l.legendRow()+gap)/(l.bottom-l.top))
	l.ymax = ymax * 1.05 / (1 - legend)
	l.yticks = linearTicks(0, l.ymax)
	var yw, xw float64
	for _, t := range l.yticks {
		yw = max(yw, m.width(t.Label, tickSize))
	}
	for _, t := range l.xticks {
		xw = max(xw, m.width(t.Label, tickSize))
	}
	l.left = margin + m.height(titleSize) + gap + yw + gap/2 + tickLength
	l.right = Width - margin - xw/2
	return l, nil
}

// x and y place a value on the plot area.
func (l *layout) x(v float64) float64 {
	lo, hi := l.xmin, l.xmax
	if l.c.LogX {
		v, lo, hi = math.Log2(v), math.Log2(lo), math.Log2(hi)
	}
	return l.left + (v-lo)/(hi-lo)*(l.right-l.left)
}

func (l *layout) y(v float64) float64 {
	return l.bottom - v/l.ymax*(l.bottom-l.top)
}

// legendRow is the height of a legend entry, in points.
func (l *layout) legendRow() float64 { return l.m.height(tickSize) + 2 }

// draw draws the chart: grid, axes, limits, curves, legend, labels.
func (l *layout) draw(cv canvas) {
	c, m := l.c, l.m
	for _, t := range l.xticks {
		if t.Label != "" {
			cv.line([]point{{l.x(t.Value), l.top}, {l.x(t.Value), l.bottom}}, axisWidth, gridColor, nil)
		}
	}
	for _, t := range l.yticks {
		cv.line([]point{{l.left, l.y(t.Value)}, {l.right, l.y(t.Value)}}, axisWidth, gridColor, nil)
	}
	cv.line([]point{{l.left, l.top}, {l.left, l.bottom}, {l.right, l.bottom}}, axisWidth, black, nil)
	for _, t := range l.xticks {
		x, n := l.x(t.Value), tickLength
		if t.Label == "" {
			n /= 2
		}
		cv.line([]point{{x, l.bottom}, {x, l.bottom + n}}, axisWidth, black, nil)
		if t.Label != "" {
			cv.text(point{x, l.bottom + tickLength + gap/2 + m.ascent(tickSize)}, t.Label, tickSize, alignCenter, false)
		}
	}
	for _, t := range l.yticks {
		y := l.y(t.Value)
		cv.line([]point{{l.left - tickLength, y}, {l.left, y}}, axisWidth, black, nil)
		cv.text(point{l.left - tickLength - gap/2, y + m.ascent(tickSize)/2 - m.descent(tickSize)/2}, t.Label, tickSize, alignEnd, false)
	}
	if c.Title != "" {
		cv.text(point{(l.left + l.right) / 2, margin + m.ascent(titleSize)}, c.Title, titleSize, alignCenter, false)
	}
	if c.XLabel != "" {
		cv.text(point{(l.left + l.right) / 2, Height - margin - m.descent(titleSize)}, c.XLabel, titleSize, alignCenter, false)
	}
	cv.text(point{margin + m.height(titleSize)/2, (l.top + l.bottom) / 2}, "memory per GPU (GiB)", titleSize, alignCenter, true)

	for i, lim := range c.Limits {
		y := l.y(lim.Bytes.GiBf())
		cv.line([]point{{l.left, y}, {l.right, y}}, limitWidth, limitColors[i%len(limitColors)], limitDashes)
	}
	for i, s := range c.Series {
		col := seriesColors[i%len(seriesColors)]
		pts := make([]point, len(s.X))
		for k := range s.X {
			pts[k] = point{l.x(float64(s.X[k])), l.y(s.Bytes[k].GiBf())}
		}
		cv.line(pts, lineWidth, col, nil)
		for _, p := range pts {
			cv.dot(p, markerSize, col)
		}
	}

	row := l.legendRow()
	x0, y := l.left+legendInset, l.top+legendInset
	entry := func(name string, col color.RGBA, width float64, dashes []float64, marker bool) {
		mid := y + row/2
		cv.line([]point{{x0, mid}, {x0 + legendLine, mid}}, width, col, dashes)
		if marker {
			cv.dot(point{x0 + legendLine/2, mid}, markerSize, col)
		}
		cv.text(point{x0 + legendLine + gap, mid + m.ascent(tickSize)/2 - m.descent(tickSize)/2}, name, tickSize, alignStart, false)
		y += row
	}
	for i, s := range c.Series {
		entry(s.Name, seriesColors[i%len(seriesColors)], lineWidth, nil, true)
	}
	for i, lim := range c.Limits {
		entry(fmt.Sprintf("%s (%s)", lim.Name, lim.Bytes), limitColors[i%len(limitColors)], limitWidth, limitDashes, false)
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

// pow2Ticks marks powers of two on a log axis, labelled 512, 1k, 32k, 1M.
type pow2Ticks struct{}

// Ticks returns the powers of two from lo to hi, labelling at most about
// ten of them.
func (pow2Ticks) Ticks(lo, hi float64) []tick {
	var ts []tick
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
		ts = append(ts, tick{Value: v, Label: label})
	}
	return ts
}

// linearTicks returns labelled ticks from lo to hi at a round step (1, 2
// or 5 times a power of ten) giving three to ten ticks.
func linearTicks(lo, hi float64) []tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 6, 64)}}
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, f := range []float64{2, 5, 10} {
		if raw/step < 1.5 {
			break
		}
		step = f * mag
	}
	decimals := max(0, -int(math.Floor(math.Log10(step))))
	k0, k1 := math.Ceil(lo/step), math.Floor(hi*(1+1e-9)/step)
	if k1-k0 > 20 || k0+1 == k0 {
		// A range narrow for its magnitude (2^62 to 2^62+1000) has no
		// round steps a float can count: label its ends.
		return []tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 6, 64)}, {Value: hi, Label: strconv.FormatFloat(hi, 'g', 6, 64)}}
	}
	var ts []tick
	for k := k0; k <= k1; k++ {
		v := k * step
		ts = append(ts, tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
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
