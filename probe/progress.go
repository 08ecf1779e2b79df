package probe

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpumem/gpumem/units"
)

// progress draws one status line on a terminal, rewritten in place.
type progress struct {
	w     io.Writer
	drawn bool
}

// update redraws the line: elapsed time, then current and peak memory of
// the process tree on each GPU it uses.
func (p *progress) update(s Sample, peaks []GPUPeak) {
	fmt.Fprint(p.w, "\r\x1b[K"+statusLine(s, peaks))
	p.drawn = true
}

// done ends the line so later output starts on a fresh one.
func (p *progress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

func statusLine(s Sample, peaks []GPUPeak) string {
	var b strings.Builder
	fmt.Fprintf(&b, "probe %s", (time.Duration(s.ElapsedMS) * time.Millisecond).Round(time.Second))
	peakOf := make(map[int]units.Bytes, len(peaks))
	for _, p := range peaks {
		peakOf[p.Index] = p.PeakBytes
	}
	shown := 0
	for _, g := range s.GPUs {
		if g.ProcessBytes == 0 && peakOf[g.Index] == 0 {
			continue
		}
		fmt.Fprintf(&b, "  GPU%d %s (peak %s)", g.Index, units.FormatIEC(g.ProcessBytes), units.FormatIEC(peakOf[g.Index]))
		shown++
	}
	if shown == 0 {
		b.WriteString("  waiting for GPU memory")
	}
	return b.String()
}
