package report

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// TestEstimateLargestElsewhere checks the "largest elsewhere" column: it
// appears only when a component is larger off the peak, shows that size
// and phase, and leaves no trailing blanks on the other rows.
func TestEstimateLargestElsewhere(t *testing.T) {
	r := memory.Result{Model: "m", Architecture: "A", PerGPU: memory.PerGPU{
		AllocatedPeakBytes: 3 * units.GiB, ReservedPeakBytes: 3 * units.GiB, DevicePeakBytes: 3 * units.GiB, PeakPhase: "step",
		Components: []memory.Component{
			{Name: "weights", Bytes: 3 * units.GiB, Level: "allocated", Phase: "persistent"},
			{Name: "activations", Bytes: 0, Level: "allocated", Phase: "forward", MaxBytes: 2 * units.GiB, MaxPhase: "forward"},
		},
	}}
	var b strings.Builder
	if err := Estimate(&b, r, Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "largest elsewhere") || !strings.Contains(out, "2.00 GiB at forward") {
		t.Errorf("want the column and the activations' largest size:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("trailing blanks: %q", line)
		}
	}
	r.PerGPU.Components[1].MaxBytes = 0
	b.Reset()
	if err := Estimate(&b, r, Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "largest elsewhere") {
		t.Errorf("no component is larger elsewhere, want no column:\n%s", b.String())
	}
}
