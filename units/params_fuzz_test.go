package units

import (
	"math"
	"testing"
)

// FuzzParseParams checks that a parameter count parses to a positive
// number or an error, never a zero, negative or wrapped count, and that
// String's output parses back within its rounding (one decimal of K and M,
// so 5 % at "1.0K"; two of B and T).
func FuzzParseParams(f *testing.F) {
	for _, s := range []string{"7B", "6.74b", "350M", "1.5T", "70e9", "6738415616", "0.4", "1e-9B", "9.3e18", "NaN", "-1K", " 12 k ", "B", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseParams(s)
		if err != nil {
			return
		}
		if p <= 0 {
			t.Fatalf("ParseParams(%q) = %d, want a positive count or an error", s, p)
		}
		// Counts near MaxInt64 format as "9223372.04T", above the limit:
		// the round trip is checked over every count a model can have.
		if p > 1e18 {
			return
		}
		back, err := ParseParams(p.String())
		if err != nil {
			t.Fatalf("re-parse of %q (from %q): %v", p.String(), s, err)
		}
		if diff := math.Abs(float64(back - p)); diff > 0.05*float64(p)+1 {
			t.Fatalf("round trip %q -> %d -> %q -> %d", s, p, p.String(), back)
		}
	})
}
