package plot

import (
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// pngCanvas rasterises a chart into an RGBA image with anti-aliasing.
type pngCanvas struct {
	img   *image.RGBA
	scale float64 // pixels per point
	faces map[float64]font.Face
	dpi   float64
}

// newPNG returns a white canvas of w × h points at dpi.
func newPNG(w, h, dpi float64) *pngCanvas {
	k := dpi / 72
	img := image.NewRGBA(image.Rect(0, 0, int(math.Round(w*k)), int(math.Round(h*k))))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	return &pngCanvas{img: img, scale: k, faces: map[float64]font.Face{}, dpi: dpi}
}

// fill fills the polygons, each a closed outline in points, in colour c.
func (p *pngCanvas) fill(polys [][]point, c color.RGBA) {
	b := p.img.Bounds()
	r := vector.NewRasterizer(b.Dx(), b.Dy())
	for _, poly := range polys {
		if len(poly) < 3 {
			continue
		}
		// Overlapping outlines add up only when they wind the same way
		// (the rasteriser clamps |coverage| to 1), so all are made to
		// wind alike.
		if area(poly) < 0 {
			for i, j := 0, len(poly)-1; i < j; i, j = i+1, j-1 {
				poly[i], poly[j] = poly[j], poly[i]
			}
		}
		r.MoveTo(float32(poly[0].x*p.scale), float32(poly[0].y*p.scale))
		for _, q := range poly[1:] {
			r.LineTo(float32(q.x*p.scale), float32(q.y*p.scale))
		}
		r.ClosePath()
	}
	r.Draw(p.img, b, image.NewUniform(c), image.Point{})
}

// area is the signed area of a closed outline.
func area(poly []point) float64 {
	var a float64
	for i, q := range poly {
		n := poly[(i+1)%len(poly)]
		a += q.x*n.y - n.x*q.y
	}
	return a / 2
}

func (p *pngCanvas) line(pts []point, width float64, c color.RGBA, dashes []float64) {
	var polys [][]point
	for _, run := range dash(pts, dashes) {
		for i := 1; i < len(run); i++ {
			polys = append(polys, segment(run[i-1], run[i], width/2))
		}
		// Round joins and caps.
		for _, q := range run {
			polys = append(polys, circle(q, width/2))
		}
	}
	p.fill(polys, c)
}

func (p *pngCanvas) dot(center point, r float64, c color.RGBA) {
	p.fill([][]point{circle(center, r)}, c)
}

// segment is the rectangle of half-width hw around the segment a-b.
func segment(a, b point, hw float64) []point {
	dx, dy := b.x-a.x, b.y-a.y
	n := math.Hypot(dx, dy)
	if n == 0 {
		return nil
	}
	nx, ny := -dy/n*hw, dx/n*hw
	return []point{{a.x + nx, a.y + ny}, {b.x + nx, b.y + ny}, {b.x - nx, b.y - ny}, {a.x - nx, a.y - ny}}
}

// circle is a 24-sided polygon of radius r, as round as a circle at the
// sizes charts use.
func circle(c point, r float64) []point {
	const sides = 24
	out := make([]point, sides)
	for i := range out {
		a := 2 * math.Pi * float64(i) / sides
		out[i] = point{c.x + r*math.Cos(a), c.y + r*math.Sin(a)}
	}
	return out
}

// dash cuts the polyline pts into the runs the pattern draws (all of it
// when the pattern is empty).
func dash(pts []point, pattern []float64) [][]point {
	if len(pattern) == 0 || len(pts) < 2 {
		return [][]point{pts}
	}
	var runs [][]point
	k, left, on := 0, pattern[0], true // pattern index, length left in it, drawing
	cur := []point{pts[0]}
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		seg := math.Hypot(b.x-a.x, b.y-a.y)
		for pos := 0.0; seg-pos > 1e-9; {
			step := min(left, seg-pos)
			pos += step
			left -= step
			t := pos / seg
			q := point{a.x + (b.x-a.x)*t, a.y + (b.y-a.y)*t}
			if on {
				cur = append(cur, q)
			}
			if left <= 1e-9 {
				if on && len(cur) > 1 {
					runs = append(runs, cur)
				}
				on = !on
				k = (k + 1) % len(pattern)
				left = pattern[k]
				cur = []point{q}
			}
		}
	}
	if on && len(cur) > 1 {
		runs = append(runs, cur)
	}
	return runs
}

func (p *pngCanvas) text(at point, s string, size float64, align int, vertical bool) {
	face, ok := p.faces[size]
	if !ok {
		var err error
		if face, err = newFace(size, p.dpi); err != nil {
			return // newMetrics parsed the same font: this does not happen
		}
		p.faces[size] = face
	}
	d := &font.Drawer{Src: image.Black, Face: face}
	w := d.MeasureString(s).Ceil()
	m := face.Metrics()
	x, y := at.x*p.scale, at.y*p.scale
	if !vertical {
		x -= float64(w) * float64(align) / 2
		d.Dst = p.img
		d.Dot = fixed.Point26_6{X: fixed.Int26_6(x * 64), Y: fixed.Int26_6(y * 64)}
		d.DrawString(s)
		return
	}
	// Draw the text into a mask, turn it a quarter left and paint it
	// centred on at.
	h := (m.Ascent + m.Descent).Ceil()
	mask := image.NewAlpha(image.Rect(0, 0, w, h))
	d.Dst, d.Src = mask, image.Opaque
	d.Dot = fixed.Point26_6{Y: m.Ascent}
	d.DrawString(s)
	turned := image.NewAlpha(image.Rect(0, 0, h, w))
	for ty := range h {
		for tx := range w {
			turned.SetAlpha(ty, w-1-tx, mask.AlphaAt(tx, ty))
		}
	}
	at0 := image.Pt(int(math.Round(x))-h/2, int(math.Round(y))-w/2)
	draw.DrawMask(p.img, turned.Bounds().Add(at0), image.Black, image.Point{}, turned, image.Point{}, draw.Over)
}

// writeTo encodes the image.
func (p *pngCanvas) writeTo(w io.Writer) error {
	return png.Encode(w, p.img)
}
