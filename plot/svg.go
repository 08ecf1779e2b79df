package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"strconv"
	"strings"

	"golang.org/x/image/math/fixed"
)

// svgCanvas writes SVG elements; a user unit is a point.
type svgCanvas struct {
	w, h float64
	buf  bytes.Buffer
}

func newSVG(w, h float64) *svgCanvas {
	return &svgCanvas{w: w, h: h}
}

func (s *svgCanvas) line(pts []point, width float64, c color.RGBA, dashes []float64) {
	if len(pts) < 2 {
		return
	}
	s.buf.WriteString(`<path d="`)
	for i, p := range pts {
		if i == 0 {
			s.buf.WriteByte('M')
		} else {
			s.buf.WriteByte('L')
		}
		fmt.Fprintf(&s.buf, "%s,%s", num(p.x), num(p.y))
	}
	fmt.Fprintf(&s.buf, `" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round"`, hex(c), num(width))
	if len(dashes) > 0 {
		d := make([]string, len(dashes))
		for i, v := range dashes {
			d[i] = num(v)
		}
		fmt.Fprintf(&s.buf, ` stroke-dasharray="%s"`, strings.Join(d, " "))
	}
	s.buf.WriteString("/>\n")
}

func (s *svgCanvas) dot(p point, r float64, c color.RGBA) {
	fmt.Fprintf(&s.buf, "<circle cx=\"%s\" cy=\"%s\" r=\"%s\" fill=\"%s\"/>\n", num(p.x), num(p.y), num(r), hex(c))
}

func (s *svgCanvas) text(p point, str string, size float64, align int, vertical bool) {
	anchor := [...]string{alignStart: "start", alignCenter: "middle", alignEnd: "end"}[align]
	fmt.Fprintf(&s.buf, `<text x="%s" y="%s" font-size="%s" text-anchor="%s"`, num(p.x), num(p.y), num(size), anchor)
	if vertical {
		// Rotated about p, then moved so that p is the text's centre
		// rather than a point on its baseline.
		fmt.Fprintf(&s.buf, ` dominant-baseline="central" transform="rotate(-90 %s %s)"`, num(p.x), num(p.y))
	}
	s.buf.WriteByte('>')
	escapeText(&s.buf, str)
	s.buf.WriteString("</text>\n")
}

// writeTo writes the document.
func (s *svgCanvas) writeTo(w io.Writer) error {
	var out bytes.Buffer
	fmt.Fprintf(&out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"+
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%spt\" height=\"%spt\" viewBox=\"0 0 %s %s\" font-family=\"%s\">\n"+
		"<rect width=\"%s\" height=\"%s\" fill=\"#ffffff\"/>\n",
		num(s.w), num(s.h), num(s.w), num(s.h), fontFamily, num(s.w), num(s.h))
	out.Write(s.buf.Bytes())
	out.WriteString("</svg>\n")
	_, err := out.WriteTo(w)
	return err
}

// num formats a length with at most two decimals, which is finer than
// any viewer draws.
func num(v float64) string {
	return strconv.FormatFloat(float64(int64(v*100+copySign(0.5, v)))/100, 'f', -1, 64)
}

func copySign(a, b float64) float64 {
	if b < 0 {
		return -a
	}
	return a
}

// hex formats an opaque colour as #rrggbb.
func hex(c color.RGBA) string {
	return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
}

// escapeText writes s with the characters XML reserves in text escaped.
func escapeText(b *bytes.Buffer, s string) {
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
}

// fixedToFloat converts a 26.6 fixed-point length to a float.
func fixedToFloat(v fixed.Int26_6) float64 { return float64(v) / 64 }
