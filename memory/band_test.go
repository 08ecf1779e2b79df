package memory_test

import (
	"testing"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

func bandOf(t *testing.T, m *model.Model, j memory.Job) (memory.Result, *memory.Band) {
	t.Helper()
	r, err := memory.Estimate(m, j)
	if err != nil {
		t.Fatal(err)
	}
	if r.PerGPU.Band == nil {
		t.Fatal("estimate without a band")
	}
	return r, r.PerGPU.Band
}

func termOf(b *memory.Band, name string) (memory.BandTerm, bool) {
	for _, t := range b.Terms {
		if t.Name == name {
			return t, true
		}
	}
	return memory.BandTerm{}, false
}

// TestBandInvariants checks the band of a range of jobs: it brackets the
// device peak, its terms are non-negative and documented, and the band
// of each level contains that level's peak.
func TestBandInvariants(t *testing.T) {
	m, err := model.Lookup("llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	f := false
	for _, j := range []memory.Job{
		{SeqLen: 2048},
		{SeqLen: 4096, Method: "lora", GradCheckpoint: "full", Attention: "flash", Framework: "hf", Optimizer: "adamw_torch_fused"},
		{SeqLen: 1024, Packed: &f, Method: "qlora"},
		{SeqLen: 2048, Engine: "fsdp", NumGPUs: 8},
		{Mode: memory.Inference, Batch: 4, PromptLen: 1000, GenLen: 100},
		{Mode: memory.Serving, GPU: "H100-SXM", GPUComputeCapability: 90, GPUMemory: 80 * units.GiB, MaxModelLen: 8192},
		{SeqLen: 2048, Software: []string{"torch1"}},
	} {
		r, b := bandOf(t, m, j)
		p := r.PerGPU
		if b.Peak != "device" || b.ExpectedBytes != p.DevicePeakBytes || !(b.LowBytes <= b.ExpectedBytes && b.ExpectedBytes < b.HighBytes) {
			t.Errorf("%+v: band %v–%v–%v around device peak %v", j, b.LowBytes, b.ExpectedBytes, b.HighBytes, p.DevicePeakBytes)
		}
		for _, tm := range b.Terms {
			if tm.DownBytes < 0 || tm.UpBytes < 0 || tm.Reason == "" || tm.Source == "" || (tm.DownBytes == 0 && tm.UpBytes == 0) {
				t.Errorf("%+v: term %+v", j, tm)
			}
		}
		prevLow := units.Bytes(-1)
		for _, lv := range []struct {
			name string
			peak units.Bytes
		}{{"allocated", p.AllocatedPeakBytes}, {"reserved", p.ReservedPeakBytes}, {"device", p.DevicePeakBytes}} {
			lo, hi, ok := p.BandAt(lv.name)
			if !ok || lo > lv.peak || hi < lv.peak {
				t.Errorf("%+v: %s band [%v, %v] misses its peak %v", j, lv.name, lo, hi, lv.peak)
			}
			if lo < prevLow {
				t.Errorf("%+v: %s band starts below the lower level's", j, lv.name)
			}
			prevLow = lo
		}
		if lo, hi, _ := p.BandAt("device"); lo != b.LowBytes || hi != b.HighBytes {
			t.Errorf("%+v: BandAt(device) [%v, %v] differs from the band", j, lo, hi)
		}
	}
}

func TestBandTerms(t *testing.T) {
	m, err := model.Lookup("llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	f, tr := false, true
	// Unstated optimizer: the fused AdamW alternative lowers a step peak
	// to the next phase.
	r, b := bandOf(t, m, memory.Job{SeqLen: 2048})
	opt, ok := termOf(b, "optimizer_default")
	var next units.Bytes
	for _, ph := range r.PerGPU.Phases {
		if ph.Name != "step" {
			next = max(next, ph.Bytes)
		}
	}
	if !ok || r.PerGPU.PeakPhase != "step" || opt.DownBytes != r.PerGPU.AllocatedPeakBytes-next || opt.UpBytes != 0 {
		t.Errorf("optimizer_default %+v (ok %v), peak %s", opt, ok, r.PerGPU.PeakPhase)
	}
	if _, b := bandOf(t, m, memory.Job{SeqLen: 2048, Optimizer: "adamw_torch"}); hasTerm(b, "optimizer_default") {
		t.Error("optimizer_default with a stated optimizer")
	}
	// Unpacked data widens only the low side, and only then.
	job := memory.Job{SeqLen: 4096, Method: "lora", GradCheckpoint: "full", Optimizer: "adamw_torch"}
	_, packed := bandOf(t, m, job)
	job.Packed = &f
	_, unpacked := bandOf(t, m, job)
	cap, ok := termOf(unpacked, "seq_len_cap")
	below := func(b *memory.Band) units.Bytes { return b.ExpectedBytes - b.LowBytes }
	if !ok || cap.UpBytes != 0 || cap.DownBytes <= 0 || hasTerm(packed, "seq_len_cap") || below(unpacked) <= below(packed) {
		t.Errorf("seq_len_cap %+v; packed band [%v, %v], unpacked [%v, %v]", cap, packed.LowBytes, packed.HighBytes, unpacked.LowBytes, unpacked.HighBytes)
	}
	job.Packed = &tr
	if _, b := bandOf(t, m, job); hasTerm(b, "seq_len_cap") {
		t.Error("seq_len_cap on packed data")
	}
	// Stating the framework and attention narrows the activation term's low side.
	act := func(j memory.Job) memory.BandTerm {
		_, b := bandOf(t, m, j)
		tm, _ := termOf(b, "activations")
		return tm
	}
	loose := act(memory.Job{SeqLen: 4096, Optimizer: "adamw_torch", OptimizerInBwd: true})
	tight := act(memory.Job{SeqLen: 4096, Optimizer: "adamw_torch", OptimizerInBwd: true, Framework: "hf", Attention: "sdpa"})
	if !(tight.DownBytes > 0 && tight.DownBytes*3 < loose.DownBytes*2+loose.DownBytes/10) {
		t.Errorf("activation term: stated %+v, unstated %+v", tight, loose)
	}
	// Serving: the KV pool absorbs activation differences.
	if _, b := bandOf(t, m, memory.Job{Mode: memory.Serving, GPU: "H100-SXM", GPUComputeCapability: 90, GPUMemory: 80 * units.GiB}); hasTerm(b, "activations") || hasTerm(b, "residual") {
		t.Errorf("serving band has inventory terms: %+v", b.Terms)
	}
	// A calibrated fragmentation narrows the allocator term.
	_, d := bandOf(t, m, memory.Job{SeqLen: 2048, Optimizer: "adamw_torch"})
	_, c := bandOf(t, m, memory.Job{SeqLen: 2048, Optimizer: "adamw_torch", Constants: map[string]float64{"fragmentation": 0.06}})
	da, _ := termOf(d, "allocator")
	ca, _ := termOf(c, "allocator")
	if !(ca.UpBytes < da.UpBytes) {
		t.Errorf("calibrated allocator term %+v not narrower than %+v", ca, da)
	}
}

func hasTerm(b *memory.Band, name string) bool {
	_, ok := termOf(b, name)
	return ok
}
