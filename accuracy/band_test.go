package accuracy

import "testing"

// TestDevBand checks the uncertainty band on the development
// measurements: at least 80 % of the scored records inside their band,
// with a median half-width under 15 %. The band's widths were read off
// the first-round records, so it is checked on them (in-sample).
func TestDevBand(t *testing.T) {
	rep := CheckBand(firstRound(t), Options{})
	t.Log("\n" + rep.Text())
	for _, s := range rep.Summaries {
		if s.Group == "scored" {
			if s.N < 10 {
				t.Fatalf("only %d scored rows", s.N)
			}
			if s.InsidePct < 80 {
				t.Errorf("%d/%d scored records inside their band (%.0f %%), want at least 80 %%", s.Inside, s.N, s.InsidePct)
			}
			if s.MedianHalfWidthPct >= 15 {
				t.Errorf("median half-width %.1f %%, want under 15 %%", s.MedianHalfWidthPct)
			}
		}
	}
}
