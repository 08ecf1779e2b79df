package plan

import (
	"fmt"
	"strings"
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

// pool models a vLLM deployment: a 70 GiB pool minus 16 GiB of weights,
// 128 KiB of KV cache per token.
func pool(j memory.Job) (memory.Result, error) {
	const perToken = 128 * units.KiB
	p := 54 * units.GiB
	tokens := int64(p / perToken)
	return memory.Result{Job: j,
		PerGPU: memory.PerGPU{DevicePeakBytes: 72 * units.GiB},
		Serving: &memory.ServingResult{KVPoolBytes: p, KVTokens: tokens, MaxModelLen: j.MaxModelLen,
			MaxModelLenFits: int64(j.MaxModelLen) <= tokens},
	}, nil
}

func TestServingPoolDecidesTheFit(t *testing.T) {
	g, _ := gpu.Lookup("a100-80g")
	r, _ := pool(memory.Job{Mode: memory.Serving, MaxModelLen: 1 << 20})
	if f := Check(r, g); f.Verdict != DoesNotFit || f.Reason == "" {
		t.Errorf("pool too small for max_model_len: %v", f)
	}
	got, err := MaxSeqLen(pool, memory.Job{Mode: memory.Serving}, g, 1, 1<<22)
	if err != nil {
		t.Fatal(err)
	}
	if want := int(54 * units.GiB / (128 * units.KiB)); got.Value != want {
		t.Errorf("longest max_model_len %d, want %d", got.Value, want)
	}
}

func TestPow2Range(t *testing.T) {
	tests := []struct {
		lo, hi int
		want   string
	}{
		{512, 4096, "[512 1024 2048 4096]"},
		{1, 20, "[1 2 4 8 16 20]"},
		{3, 3, "[3]"},
		{0, 2, "[1 2]"},
		{5, 4, "[]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(Pow2Range(tt.lo, tt.hi)); got != tt.want {
			t.Errorf("Pow2Range(%d, %d) = %s, want %s", tt.lo, tt.hi, got, tt.want)
		}
	}
}

func TestSweepSkipsFailures(t *testing.T) {
	s := synth{params: 1000, actPerToken: 1}
	xs, rs, err := Sweep(s.estimate, memory.Job{}, SeqLen, []int{1024, 65536, 2048})
	if err != nil || fmt.Sprint(xs) != "[1024 2048]" || len(rs) != 2 || rs[1].Job.SeqLen != 2048 {
		t.Errorf("Sweep = %v, %d results, %v", xs, len(rs), err)
	}
	if _, _, err := Sweep(s.estimate, memory.Job{}, SeqLen, []int{65536}); err == nil || !strings.Contains(err.Error(), "max_position_embeddings") {
		t.Errorf("all failing: %v", err)
	}
}
