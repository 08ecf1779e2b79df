package plot

import (
	"fmt"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
)

// fontFamily is the font charts are laid out with and PNG text is drawn
// in (Go Regular, a sans-serif face embedded in the binary), with the
// fallbacks an SVG viewer without it uses.
const fontFamily = "Go, Helvetica, Arial, sans-serif"

// goRegular is the parsed font. It is parsed on first use, when a chart
// is drawn, not when the program starts.
var goRegular = sync.OnceValues(func() (*opentype.Font, error) {
	f, err := opentype.Parse(goregular.TTF)
	if err != nil {
		return nil, fmt.Errorf("plot: parse the Go Regular font: %w", err)
	}
	return f, nil
})

// newFace returns a face of the font at size points and dpi.
func newFace(size, dpi float64) (font.Face, error) {
	f, err := goRegular()
	if err != nil {
		return nil, err
	}
	face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: dpi, Hinting: font.HintingNone})
	if err != nil {
		return nil, fmt.Errorf("plot: font face at %g points: %w", size, err)
	}
	return face, nil
}

// metrics measures text in points, for the sizes charts use. A face is
// not safe for concurrent use, so each chart has its own.
type metrics map[float64]font.Face

// newMetrics returns the faces of the chart's text sizes at 72 dpi, where
// a pixel is a point.
func newMetrics() (metrics, error) {
	m := metrics{}
	for _, size := range []float64{titleSize, tickSize} {
		face, err := newFace(size, 72)
		if err != nil {
			return nil, err
		}
		m[size] = face
	}
	return m, nil
}

// width is the advance of s at size, in points.
func (m metrics) width(s string, size float64) float64 {
	return fixedToFloat(font.MeasureString(m[size], s))
}

// ascent and descent are the font's extent above and below the
// baseline at size, in points; height is their sum.
func (m metrics) ascent(size float64) float64  { return fixedToFloat(m[size].Metrics().Ascent) }
func (m metrics) descent(size float64) float64 { return fixedToFloat(m[size].Metrics().Descent) }
func (m metrics) height(size float64) float64  { return m.ascent(size) + m.descent(size) }
