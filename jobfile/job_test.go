package jobfile

import "testing"

func TestParseGradCheckpointSpellings(t *testing.T) {
	for in, want := range map[string]string{
		"true": "full", "FULL": "full", "no": "", "selective": "selective", "op": "op", "SAC": "sac", "every-3": "every-3",
	} {
		if got, ok := ParseGradCheckpoint(in); !ok || got != want {
			t.Errorf("ParseGradCheckpoint(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"every-0", "every-x", "partial", "layer"} {
		if _, ok := ParseGradCheckpoint(bad); ok {
			t.Errorf("ParseGradCheckpoint(%q): want it rejected", bad)
		}
	}
}
