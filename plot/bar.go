package plot

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// BarOptions configure [Breakdown].
type BarOptions struct {
	// Width is the number of terminal columns to use (default 80,
	// at least 20 and at most 1000).
	Width int
	// ASCII draws with plain ASCII characters instead of Unicode blocks,
	// for terminals and logs that cannot show them.
	ASCII bool
	// Capacity is the GPU memory the bar is drawn against; 0 draws the
	// bar against the components' total. CapacityName labels it.
	Capacity     units.Bytes
	CapacityName string
	// Bytes formats sizes (default [units.FormatIEC]).
	Bytes func(units.Bytes) string
}

// Fill characters, one per component in order; the free part of the
// capacity and its edge when the job overflows it.
var (
	unicodeFills = []rune{'█', '▓', '▒', '░', '▞', '▚', '▙', '▟', '▛', '▜'}
	asciiFills   = []rune{'#', '=', '+', '*', '%', '@', 'o', 'x', '~', ':'}
)

const (
	unicodeFree, asciiFree = '·', '.'
	unicodeEdge, asciiEdge = '│', '|'
	defaultBarWidth        = 80
	minBarWidth            = 20
	maxBarWidth            = 1000
)

// Breakdown writes r's per-GPU components as one stacked bar, a summary
// line and a legend, fitting in o.Width columns:
//
//	[████████▓▓▓▓▒▒░░░··········]
//	45.20 GiB of 79.65 GiB H100-SXM (56.7 %)
//	█ weights 12.55 GiB 28%  ▓ gradients 12.55 GiB 28%  ...
func Breakdown(w io.Writer, r memory.Result, o BarOptions) error {
	if o.Width == 0 {
		o.Width = defaultBarWidth
	}
	o.Width = min(max(o.Width, minBarWidth), maxBarWidth)
	if o.Bytes == nil {
		o.Bytes = units.FormatIEC
	}
	fills, free, edge := unicodeFills, unicodeFree, unicodeEdge
	if o.ASCII {
		fills, free, edge = asciiFills, asciiFree, asciiEdge
	}
	var parts []memory.Component
	var total units.Bytes
	for _, c := range r.PerGPU.Components {
		if c.Bytes > 0 {
			parts = append(parts, c)
			total = units.Add(total, c.Bytes)
		}
	}
	if total == 0 {
		_, err := fmt.Fprintln(w, "(no memory components)")
		return err
	}
	scale := max(total, o.Capacity)
	cells := o.Width - 2
	sizes := make([]units.Bytes, len(parts))
	for i, c := range parts {
		sizes[i] = c.Bytes
	}
	n := apportion(sizes, scale, cells)
	var b strings.Builder
	b.WriteByte('[')
	used := 0
	for i, k := range n {
		b.WriteString(strings.Repeat(string(fills[i%len(fills)]), k))
		used += k
	}
	b.WriteString(strings.Repeat(string(free), cells-used))
	b.WriteString("]\n")
	bar := []rune(b.String())
	if o.Capacity > 0 && total > o.Capacity {
		// Mark where the GPU's memory ends inside the overflowing bar.
		pos := 1 + int(int64(cells)*int64(o.Capacity)/int64(scale))
		bar[min(pos, cells)] = edge
	}
	summary := fmt.Sprintf("%s of components", o.Bytes(total))
	if o.Capacity > 0 {
		summary = fmt.Sprintf("%s of %s %s (%.1f %%)", o.Bytes(total), o.Bytes(o.Capacity), o.CapacityName, 100*float64(total)/float64(o.Capacity))
		if total > o.Capacity {
			summary += fmt.Sprintf(", %s over", o.Bytes(total-o.Capacity))
		}
	}
	if _, err := fmt.Fprintf(w, "%s%s\n", string(bar), strings.Replace(summary, "  ", " ", 1)); err != nil {
		return err
	}
	return legend(w, parts, total, fills, o)
}

// legend writes "glyph name size share" items, wrapped at o.Width.
func legend(w io.Writer, parts []memory.Component, total units.Bytes, fills []rune, o BarOptions) error {
	var line strings.Builder
	flush := func() error {
		if line.Len() == 0 {
			return nil
		}
		_, err := fmt.Fprintln(w, strings.TrimRight(line.String(), " "))
		line.Reset()
		return err
	}
	for i, c := range parts {
		item := fmt.Sprintf("%c %s %s %.0f%%", fills[i%len(fills)], c.Name, o.Bytes(c.Bytes), 100*float64(c.Bytes)/float64(total))
		if line.Len() > 0 && utf8.RuneCountInString(line.String())+utf8.RuneCountInString(item) > o.Width {
			if err := flush(); err != nil {
				return err
			}
		}
		line.WriteString(item + "  ")
	}
	return flush()
}

// apportion splits cells among sizes in proportion to size/scale by the
// largest-remainder method, so the cells drawn add up to exactly
// round(cells·Σsizes/scale) and no component gets more than its share
// rounded up.
func apportion(sizes []units.Bytes, scale units.Bytes, cells int) []int {
	out := make([]int, len(sizes))
	if scale <= 0 || cells <= 0 {
		return out
	}
	var sum float64
	rem := make([]float64, len(sizes))
	given := 0
	for i, s := range sizes {
		exact := float64(cells) * float64(s) / float64(scale)
		out[i] = int(exact)
		rem[i] = exact - float64(out[i])
		given += out[i]
		sum += exact
	}
	target := min(cells, int(sum+0.5))
	for given < target {
		best := -1
		for i := range rem {
			if best < 0 || rem[i] > rem[best] {
				best = i
			}
		}
		out[best]++
		rem[best] = -1
		given++
	}
	return out
}
