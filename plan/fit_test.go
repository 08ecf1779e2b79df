package plan

import (
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

func TestCheckBytes(t *testing.T) {
	g := gpu.GPU{Name: "G", Memory: 100 * units.GiB}
	tests := []struct {
		name      string
		need      units.Bytes
		want      Verdict
		free      units.Bytes
		short     units.Bytes
		wantUtilQ float64
	}{
		{"empty", 0, Fits, 100 * units.GiB, 0, 0},
		{"at budget", 95 * units.GiB, Fits, 5 * units.GiB, 0, 95},
		{"just above budget", 95*units.GiB + 1, Tight, 5*units.GiB - 1, 0, 95},
		{"exactly full", 100 * units.GiB, Tight, 0, 0, 100},
		{"one byte over", 100*units.GiB + 1, DoesNotFit, 0, 1, 100},
		{"twice", 200 * units.GiB, DoesNotFit, 0, 100 * units.GiB, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := CheckBytes(tt.need, g)
			if f.Verdict != tt.want || f.FreeBytes != tt.free || f.ShortBytes != tt.short {
				t.Errorf("got %s free %d short %d, want %s free %d short %d", f.Verdict, f.FreeBytes, f.ShortBytes, tt.want, tt.free, tt.short)
			}
			if d := f.Utilization - tt.wantUtilQ; d > 0.01 || d < -0.01 {
				t.Errorf("utilization = %v, want %v", f.Utilization, tt.wantUtilQ)
			}
		})
	}
}

func TestNeedUsesTheDevicePeak(t *testing.T) {
	r := memory.Result{PerGPU: memory.PerGPU{AllocatedPeakBytes: 10, ReservedPeakBytes: 12, DevicePeakBytes: 15}}
	if got := Need(r); got != 15 {
		t.Errorf("Need = %d, want the device peak 15", got)
	}
	r.PerGPU.DevicePeakBytes = 0
	if got := Need(r); got != 12 {
		t.Errorf("Need without device level = %d, want reserved 12", got)
	}
	r.PerGPU.ReservedPeakBytes = 0
	if got := Need(r); got != 10 {
		t.Errorf("Need with only allocated = %d, want 10", got)
	}
}

func TestBudgetKeepsHeadroom(t *testing.T) {
	g, err := gpu.Lookup("h100")
	if err != nil {
		t.Fatal(err)
	}
	b := Budget(g)
	if b >= g.Memory || float64(b) < 0.949*float64(g.Memory) {
		t.Errorf("Budget(%v) = %v, want 95 %% of it", g.Memory, b)
	}
	if CheckBytes(b, g).Verdict != Fits || CheckBytes(b+1, g).Verdict != Tight {
		t.Error("Budget is not the boundary between fits and tight")
	}
}
