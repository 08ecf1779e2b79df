package plan

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// banded is a result whose device peak is point and whose band reaches
// high, deciding on decide.
func banded(point, high units.Bytes, decide string) memory.Result {
	return memory.Result{Job: memory.Job{DecideOn: decide}, PerGPU: memory.PerGPU{DevicePeakBytes: point,
		Band: &memory.Band{Peak: "device", LowBytes: point, ExpectedBytes: point, HighBytes: high}}}
}

// TestCheckDecidesOnTheUpperEdge checks the verdicts of the band: a job
// whose point fits but whose upper edge crosses the safety margin is
// tight by default and fits when deciding on the point; a point above
// the memory never fits; the Fit says which figure it used.
func TestCheckDecidesOnTheUpperEdge(t *testing.T) {
	g := gpu.GPU{Name: "G", Memory: 100 * units.GiB}
	for _, tc := range []struct {
		name        string
		point, high units.Bytes
		decide      string
		want        Verdict
		need        units.Bytes
		decidedOn   string
	}{
		{"both well inside", 70 * units.GiB, 80 * units.GiB, "", Fits, 80 * units.GiB, memory.DecideUpper},
		{"point fits, upper edge in the margin", 90 * units.GiB, 97 * units.GiB, "", Tight, 97 * units.GiB, memory.DecideUpper},
		{"point fits, upper edge above the memory", 90 * units.GiB, 105 * units.GiB, "", Tight, 105 * units.GiB, memory.DecideUpper},
		{"the same on the point", 90 * units.GiB, 105 * units.GiB, memory.DecidePoint, Fits, 90 * units.GiB, memory.DecidePoint},
		{"point in the margin", 96 * units.GiB, 99 * units.GiB, memory.DecidePoint, Tight, 96 * units.GiB, memory.DecidePoint},
		{"point above the memory", 101 * units.GiB, 110 * units.GiB, "", DoesNotFit, 110 * units.GiB, memory.DecideUpper},
		{"point above the memory, on the point", 101 * units.GiB, 110 * units.GiB, "point", DoesNotFit, 101 * units.GiB, memory.DecidePoint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Check(banded(tc.point, tc.high, tc.decide), g)
			if f.Verdict != tc.want || f.NeedBytes != tc.need || f.DecidedOn != tc.decidedOn || f.Phase != "step" {
				t.Errorf("got %s on %d (%s, %s), want %s on %d (%s)", f.Verdict, f.NeedBytes, f.DecidedOn, f.Phase, tc.want, tc.need, tc.decidedOn)
			}
			if f.PointBytes != tc.point || f.UpperBytes != tc.high {
				t.Errorf("point %d upper %d, want %d %d", f.PointBytes, f.UpperBytes, tc.point, tc.high)
			}
			if f.Verdict == DoesNotFit && f.ShortBytes != tc.point-g.Memory {
				t.Errorf("short %d, want the point's %d", f.ShortBytes, tc.point-g.Memory)
			}
		})
	}
}

// TestCheckCountsLoading checks that the loading phase counts: a loading
// peak above the memory does not fit however small the step is, and a
// host short of RAM while loading does not fit either.
func TestCheckCountsLoading(t *testing.T) {
	g := gpu.GPU{Name: "G", Memory: 80 * units.GiB}
	r := banded(30*units.GiB, 33*units.GiB, "")
	r.Loading = &memory.Loading{DeviceBytes: 130 * units.GiB, HostBytes: 520 * units.GiB, ProcessesPerNode: 8}
	f := Check(r, g)
	if f.Verdict != DoesNotFit || f.Phase != "loading" || f.NeedBytes != 130*units.GiB || f.ShortBytes != 50*units.GiB {
		t.Errorf("loading above the GPU: %+v", f)
	}
	r.Loading.DeviceBytes = 20 * units.GiB
	if f := Check(r, g); f.Verdict != Fits || f.Phase != "step" {
		t.Errorf("loading below the step: %+v", f)
	}
	r.Job.HostMemory = 512 * units.GiB
	if f := Check(r, g); f.Verdict != DoesNotFit || !strings.Contains(f.Reason, "host RAM while loading") {
		t.Errorf("host RAM short: %+v", f)
	}
	if ok, why := within(r, Budget(g)); ok || !strings.Contains(why, "host RAM") {
		t.Errorf("within: %v %q", ok, why)
	}
}

// TestCheckServingAtTheUpperEdge checks a vLLM deployment whose KV pool
// holds max_model_len at the estimate but not at the band's upper edge:
// tight by default, fits on the point.
func TestCheckServingAtTheUpperEdge(t *testing.T) {
	g := gpu.GPU{Name: "G", Memory: 80 * units.GiB}
	r := banded(70*units.GiB, 71*units.GiB, "")
	r.Serving = &memory.ServingResult{KVPoolBytes: 2 * units.GiB, KVTokens: 16384, MaxModelLen: 16000, MaxModelLenFits: true}
	f := Check(r, g)
	if f.Verdict != Tight || !strings.Contains(f.Reason, "upper edge") {
		t.Errorf("upper edge: %+v", f)
	}
	r.Job.DecideOn = memory.DecidePoint
	if f := Check(r, g); f.Verdict != Fits {
		t.Errorf("point: %+v", f)
	}
}

// TestSearchDecidesOnTheUpperEdge checks the inverse searches against
// the decision: the largest batch found on the upper edge is never
// larger than on the point, and its upper edge fits the budget.
func TestSearchDecidesOnTheUpperEdge(t *testing.T) {
	m, err := model.Load("meta-llama/Llama-3.1-8B")
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Lookup("h100")
	est := For(m)
	job := memory.Job{SeqLen: 2048, Method: "lora", GradCheckpoint: "full"}
	up, err := MaxBatch(est, job, g, 512)
	if err != nil {
		t.Fatal(err)
	}
	job.DecideOn = memory.DecidePoint
	pt, err := MaxBatch(est, job, g, 512)
	if err != nil {
		t.Fatal(err)
	}
	if up.Value > pt.Value || up.Value >= 512 {
		t.Errorf("largest batch on the upper edge %d, on the point %d", up.Value, pt.Value)
	}
	if h := up.Result.PerGPU.Band.HighBytes; h > Budget(g) {
		t.Errorf("batch %d: upper edge %s above the budget %s", up.Value, h, Budget(g))
	}
	if pt.Result.PerGPU.Band.HighBytes <= Budget(g) && up.Value != pt.Value {
		t.Errorf("the point's answer fits on its upper edge too, yet the searches differ: %d vs %d", up.Value, pt.Value)
	}
}
