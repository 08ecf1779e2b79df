package plan

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
)

func TestSearchAgainstDirectEstimates(t *testing.T) {
	s := synth{params: 7_000_000_000, actPerToken: 150_000}
	g, _ := gpu.Lookup("a100-80g")
	base := memory.Job{SeqLen: 4096, GradAccum: 4}
	space := DefaultSpace(8)
	space.EP = []int{1, 2}
	space.Keep = 1 << 30
	p, err := Search(s.estimate, base, g, space)
	if err != nil {
		t.Fatal(err)
	}
	if p.Feasible == 0 || len(p.Candidates) != p.Feasible {
		t.Fatalf("feasible %d, candidates %d", p.Feasible, len(p.Candidates))
	}
	combos := 0
	space.withDefaults().each(base, func(Layout) { combos++ })
	if total := p.Evaluated + p.Pruned + p.Invalid; total != combos*len(space.MicroBatches) {
		t.Errorf("evaluated %d + pruned %d + invalid %d = %d, want every layout accounted for (%d)",
			p.Evaluated, p.Pruned, p.Invalid, total, combos*len(space.MicroBatches))
	}
	if p.TooBig+countSkips(p.Skipped) > p.Evaluated {
		t.Errorf("too big %d + skipped %d > evaluated %d", p.TooBig, countSkips(p.Skipped), p.Evaluated)
	}
	seen := map[Layout]bool{}
	for _, c := range p.Candidates {
		r, err := s.estimate(c.Apply(OnGPU(base, g)))
		if err != nil || Need(r) != c.NeedBytes || Check(r, g).Verdict != c.Verdict || c.Verdict == DoesNotFit {
			t.Fatalf("%v: candidate does not match a direct estimate (%v, %v)", c.Layout, Need(r), err)
		}
		if c.Valid() != "" {
			t.Errorf("%v: invalid layout returned: %s", c.Layout, c.Valid())
		}
		key := c.Layout
		key.MicroBatch = 0
		if seen[key] {
			t.Errorf("%v: layout listed twice", c.Layout)
		}
		seen[key] = true
		// The next micro-batch of the space does not fit with the headroom.
		next := c.Layout
		for _, mb := range space.MicroBatches {
			if mb > c.MicroBatch {
				next.MicroBatch = mb
				break
			}
		}
		if next.MicroBatch == c.MicroBatch {
			continue
		}
		if r, err := s.estimate(next.Apply(OnGPU(base, g))); err == nil && Check(r, g).Verdict == Fits {
			t.Errorf("%v: micro-batch %d also fits", c.Layout, next.MicroBatch)
		}
	}
	// Every layout with a fitting micro-batch is a candidate.
	feasible := 0
	space.withDefaults().each(base, func(l Layout) {
		if l.Valid() != "" {
			return
		}
		l.MicroBatch = space.MicroBatches[0]
		if r, err := s.estimate(l.Apply(OnGPU(base, g))); err == nil && Check(r, g).Verdict != DoesNotFit {
			feasible++
		}
	})
	if feasible != p.Feasible {
		t.Errorf("%d layouts fit by direct estimates, search found %d", feasible, p.Feasible)
	}
	// Ranking: verdict, then score.
	for i := 1; i < len(p.Candidates); i++ {
		a, b := p.Candidates[i-1], p.Candidates[i]
		if a.Verdict.Rank() > b.Verdict.Rank() || a.Verdict == b.Verdict && a.Score < b.Score {
			t.Fatalf("candidates %d and %d out of order: %v (%.3f) before %v (%.3f)", i-1, i, a.Layout, a.Score, b.Layout, b.Score)
		}
	}
	if len(p.Skipped) != 1 || !errors.Is(errSynthMoE, errSynthMoE) || p.Skipped[0].Reason != errSynthMoE.Error() || p.Skipped[0].Example.EP != 2 {
		t.Errorf("skipped = %+v, want the expert-parallel layouts under one reason", p.Skipped)
	}
}

func countSkips(ss []Skip) int {
	n := 0
	for _, s := range ss {
		n += s.Count
	}
	return n
}

func TestSearchBestLayouts(t *testing.T) {
	s := synth{params: 7_000_000_000, actPerToken: 150_000}
	base := memory.Job{SeqLen: 4096}
	tests := []struct {
		gpu     string
		maxGPUs int
		want    func(Layout) bool
		why     string
	}{
		// 7B full fine-tuning needs 112 GB of states: one 80 GB GPU
		// fits only with parameter offload; 8 GPUs fit with sharding.
		{"a100-80g", 1, func(l Layout) bool { return l.Offload != OffloadNone }, "offload on one GPU"},
		{"a100-80g", 8, func(l Layout) bool { return l.NumGPUs > 1 && l.Offload == OffloadNone }, "sharding without offload on 8 GPUs"},
		// On B200 (179 GiB) the states fit on one GPU.
		{"b200", 8, func(l Layout) bool { return l.NumGPUs == 1 }, "one B200"},
	}
	for _, tt := range tests {
		g, _ := gpu.Lookup(tt.gpu)
		p, err := Search(s.estimate, base, g, DefaultSpace(tt.maxGPUs))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Candidates) == 0 || len(p.Candidates) > DefaultKeep {
			t.Fatalf("%s x%d: %d candidates", tt.gpu, tt.maxGPUs, len(p.Candidates))
		}
		if best := p.Candidates[0]; !tt.want(best.Layout) {
			t.Errorf("%s x%d: best layout %v, want %s", tt.gpu, tt.maxGPUs, best.Layout, tt.why)
		}
	}
}

func TestSearchRejectsInference(t *testing.T) {
	g, _ := gpu.Lookup("h100")
	if _, err := Search(synth{}.estimate, memory.Job{Mode: memory.Serving}, g, Space{}); err == nil {
		t.Error("serving job accepted")
	}
}

func TestSearchRejectsBadSpaces(t *testing.T) {
	g, _ := gpu.Lookup("h100")
	for _, sp := range []Space{
		{GPUCounts: []int{0}},
		{ZeRO: []int{4}},
		{TP: []int{-2}},
		{MicroBatches: []int{0, 1}},
		{Engines: []string{"horovod"}},
		{GradCheckpoint: []string{"sometimes"}},
		{Offload: []string{"disk"}},
		{Methods: []string{"dora,lora"}},
	} {
		if _, err := Search(synth{}.estimate, memory.Job{}, g, sp); err == nil || !strings.Contains(err.Error(), "search space") {
			t.Errorf("%+v: err %v", sp, err)
		}
	}
}

func TestLayoutValid(t *testing.T) {
	tests := []struct {
		l     Layout
		valid bool
	}{
		{Layout{NumGPUs: 1, Offload: OffloadNone}, true},
		{Layout{NumGPUs: 2, Offload: OffloadNone}, false},
		{Layout{Engine: memory.EngineDDP, NumGPUs: 1}, false},
		{Layout{Engine: memory.EngineDDP, NumGPUs: 4, Offload: OffloadNone}, true},
		{Layout{Engine: memory.EngineDDP, NumGPUs: 4, Offload: OffloadOptimizer}, false},
		{Layout{Engine: memory.EngineDeepSpeed, ZeRO: 0, NumGPUs: 1, Offload: OffloadOptimizer}, false},
		{Layout{Engine: memory.EngineDeepSpeed, ZeRO: 2, NumGPUs: 1, Offload: OffloadOptimizer}, true},
		{Layout{Engine: memory.EngineDeepSpeed, ZeRO: 2, NumGPUs: 1, Offload: OffloadNone}, false},
		{Layout{Engine: memory.EngineMegatron, NumGPUs: 1, Offload: OffloadNone}, false},
		{Layout{Engine: memory.EngineDeepSpeed, ZeRO: 2, NumGPUs: 8, Offload: OffloadParams}, false},
		{Layout{Engine: memory.EngineDeepSpeed, ZeRO: 3, NumGPUs: 8, Offload: OffloadParams}, true},
		{Layout{Engine: memory.EngineDeepSpeed, ZeRO: 3, NumGPUs: 8, TP: 2}, false},
		{Layout{Engine: memory.EngineFSDP, FSDPStrategy: "shard_grad_op", NumGPUs: 8, Offload: OffloadParams}, false},
		{Layout{Engine: memory.EngineFSDP, FSDPStrategy: "full_shard", NumGPUs: 8, Offload: OffloadParams}, true},
		{Layout{Engine: memory.EngineMegatron, NumGPUs: 8, TP: 2, PP: 2, Offload: OffloadNone}, true},
		{Layout{Engine: memory.EngineMegatron, NumGPUs: 8, TP: 4, PP: 4}, false},
		{Layout{Engine: memory.EngineMegatron, NumGPUs: 32, TP: 4, CP: 4}, false},
		{Layout{Engine: memory.EngineMegatron, NumGPUs: 8, PP: 2, EP: 8}, false},
		{Layout{Engine: memory.EngineMegatron, NumGPUs: 8, PP: 2, EP: 4}, true},
		{Layout{Engine: memory.EngineFSDP2, NumGPUs: 8, TP: 2, CP: 2, Offload: OffloadParams}, true},
		{Layout{Engine: "horovod", NumGPUs: 8}, false},
	}
	for _, tt := range tests {
		if got := tt.l.Valid(); (got == "") != tt.valid {
			t.Errorf("%v: Valid() = %q, want valid=%v", tt.l, got, tt.valid)
		}
	}
}

func TestLayoutApply(t *testing.T) {
	base := memory.Job{SeqLen: 2048, Method: "lora", OffloadParams: "nvme"}
	l := Layout{Engine: memory.EngineDeepSpeed, ZeRO: 3, NumGPUs: 8, TP: 1, PP: 1, MicroBatch: 4, GradCheckpoint: "none", Offload: OffloadOptimizer}
	j := l.Apply(base)
	if j.Engine != "deepspeed" || j.ZeRO != 3 || j.NumGPUs != 8 || j.DP != 8 || j.MicroBatch != 4 ||
		j.GradCheckpoint != "" || j.OffloadOptimizer != "cpu" || j.OffloadParams != "" || j.Method != "lora" || j.SeqLen != 2048 {
		t.Errorf("Apply = %+v", j)
	}
	if s := l.String(); s != "8 GPUs deepspeed zero3 mb4 ckpt=none offload=optimizer" {
		t.Errorf("String() = %q", s)
	}
}

func TestScoreOrdersSlowdowns(t *testing.T) {
	ref := Layout{NumGPUs: 1, MicroBatch: 8, GradCheckpoint: "none", Offload: OffloadNone}
	slower := []struct {
		name string
		edit func(*Layout)
	}{
		{"selective recompute", func(l *Layout) { l.GradCheckpoint = "selective" }},
		{"full recompute", func(l *Layout) { l.GradCheckpoint = "full" }},
		{"optimizer offload", func(l *Layout) { l.Offload = OffloadOptimizer }},
		{"parameter offload", func(l *Layout) { l.Offload = OffloadParams }},
		{"micro-batch 1", func(l *Layout) { l.MicroBatch = 1 }},
		{"8-GPU ddp", func(l *Layout) { l.Engine, l.NumGPUs = memory.EngineDDP, 8 }},
		{"tp 2", func(l *Layout) { l.Engine, l.NumGPUs, l.TP = memory.EngineMegatron, 2, 2 }},
		{"pp 2", func(l *Layout) { l.Engine, l.NumGPUs, l.PP, l.GradAccum = memory.EngineMegatron, 2, 2, 8 }},
		{"qlora vs lora", nil},
	}
	for _, tt := range slower {
		if tt.edit == nil {
			continue
		}
		l := ref
		tt.edit(&l)
		if Score(l) >= Score(ref) {
			t.Errorf("%s: score %.4f >= reference %.4f", tt.name, Score(l), Score(ref))
		}
	}
	full, sel := ref, ref
	full.GradCheckpoint, sel.GradCheckpoint = "full", "selective"
	if Score(full) >= Score(sel) {
		t.Error("full recompute scores above selective")
	}
	z3, z2 := Layout{Engine: memory.EngineDeepSpeed, ZeRO: 3, NumGPUs: 8, MicroBatch: 1}, Layout{Engine: memory.EngineDeepSpeed, ZeRO: 2, NumGPUs: 8, MicroBatch: 1}
	if Score(z3) >= Score(z2) {
		t.Error("ZeRO-3 scores above ZeRO-2 (it moves 1.5x the data)")
	}
	lora, qlora := ref, ref
	lora.Method, qlora.Method = "lora", "qlora"
	if !(Score(lora) > Score(ref) && Score(qlora) < Score(lora)) {
		t.Error("want lora faster than full and qlora slower than lora")
	}
	n16 := Layout{Engine: memory.EngineDDP, NumGPUs: 16, MicroBatch: 8}
	n8 := Layout{Engine: memory.EngineDDP, NumGPUs: 8, MicroBatch: 8}
	if Score(n16) >= Score(n8) {
		t.Error("crossing nodes does not cost")
	}
	if c := Cost(ref); c < 1 || c > 1.02 {
		t.Errorf("reference cost %v, want about 1", c)
	}
}

// BenchmarkSearchSynthetic measures layout search with the synthetic
// estimator over a space that takes over 100,000 estimates (every layout
// fits on this GPU, so each bisects its 32 micro-batches).
func BenchmarkSearchSynthetic(b *testing.B) {
	s := synth{params: 1_000_000, actPerToken: 1}
	g, _ := gpu.Lookup("b200")
	space := DefaultSpace(1 << 14)
	space.PP = []int{1, 2, 4, 8, 16}
	space.CP = []int{1, 2, 4}
	space.Methods = []string{"full", "lora", "qlora"}
	space.MicroBatches = nil
	for mb := 1; mb <= 32; mb++ {
		space.MicroBatches = append(space.MicroBatches, mb)
	}
	base := memory.Job{SeqLen: 4096, GradAccum: 8}
	var p Plan
	b.ReportAllocs()
	for b.Loop() {
		var err error
		p, err = Search(s.estimate, base, g, space)
		if err != nil {
			b.Fatal(err)
		}
	}
	if p.Evaluated < 100_000 {
		b.Fatalf("only %d layouts evaluated", p.Evaluated)
	}
	b.ReportMetric(float64(p.Evaluated), "layouts/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(p.Evaluated), "ns/layout")
}

func TestSearchKeepsTheBest(t *testing.T) {
	s := synth{params: 3_000_000_000, actPerToken: 100_000}
	g, _ := gpu.Lookup("h100")
	base := memory.Job{SeqLen: 2048, GradAccum: 2}
	all := DefaultSpace(16)
	all.Keep = 1 << 30
	pAll, err := Search(s.estimate, base, g, all)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []int{1, 7, 50} {
		sp := DefaultSpace(16)
		sp.Keep = keep
		p, err := Search(s.estimate, base, g, sp)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Candidates) != keep || p.Feasible != pAll.Feasible {
			t.Fatalf("keep %d: %d candidates of %d feasible", keep, len(p.Candidates), p.Feasible)
		}
		for i, c := range p.Candidates {
			if c != pAll.Candidates[i] {
				t.Fatalf("keep %d: candidate %d = %v, want %v", keep, i, c.Layout, pAll.Candidates[i].Layout)
			}
		}
	}
}

func TestSearchSameForAnyWorkerCount(t *testing.T) {
	s := synth{params: 7_000_000_000, actPerToken: 150_000}
	g, _ := gpu.Lookup("a100-80g")
	base := memory.Job{SeqLen: 4096, GradAccum: 4}
	var plans []Plan
	for _, w := range []int{1, 2, 3, 8} {
		sp := DefaultSpace(16)
		sp.EP = []int{1, 4}
		sp.Keep = 200
		sp.Workers = w
		p, err := Search(s.estimate, base, g, sp)
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, p)
	}
	for i := 1; i < len(plans); i++ {
		if !reflect.DeepEqual(plans[0], plans[i]) {
			t.Fatalf("plan with worker setting %d differs from the single-worker plan", i)
		}
	}
}
