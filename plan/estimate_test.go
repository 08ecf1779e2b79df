package plan

import (
	"reflect"
	"sync"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
)

// These tests run the searches on the real estimator and check their
// defining properties against direct estimates: whatever the memory
// model's numbers, the answer fits and one step more does not.

func loadModel(t *testing.T, id string) EstimateFunc {
	t.Helper()
	m, err := model.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	return For(m)
}

func lookup(t *testing.T, name string) gpu.GPU {
	t.Helper()
	g, err := gpu.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// checkMax verifies a MaxFit answer with direct estimates.
func checkMax(t *testing.T, est EstimateFunc, job memory.Job, g gpu.GPU, got Found) {
	t.Helper()
	j := OnGPU(job, g)
	f, err := got.Var.field(&j)
	if err != nil {
		t.Fatal(err)
	}
	*f = got.Value
	r, err := est(j)
	if err != nil {
		t.Fatalf("%s=%d: %v", got.Var, got.Value, err)
	}
	if ok, why := within(r, Budget(g)); !ok {
		t.Errorf("%s=%d on %s does not fit: %s", got.Var, got.Value, g.Name, why)
	}
	if got.Value >= got.Limit {
		return
	}
	*f = got.Value + 1
	r, err = est(j)
	if ok, _ := within(r, Budget(g)); err == nil && ok {
		t.Errorf("%s=%d on %s: one more also fits", got.Var, got.Value, g.Name)
	}
	if got.Stop == "" {
		t.Errorf("%s=%d below the limit without a reason", got.Var, got.Value)
	}
}

func TestRealMaxBatchAndSeqLen(t *testing.T) {
	tests := []struct {
		model string
		job   memory.Job
		gpus  []string
	}{
		{"Qwen/Qwen2.5-0.5B", memory.Job{SeqLen: 2048}, []string{"t4", "l4", "a100-80g"}},
		{"meta-llama/Llama-3.2-1B-Instruct", memory.Job{SeqLen: 1024, GradCheckpoint: "full"}, []string{"rtx-4090", "h100"}},
		{"meta-llama/Llama-3.1-8B", memory.Job{SeqLen: 4096, Method: "lora", GradCheckpoint: "full"}, []string{"l40s", "h100"}},
		{"meta-llama/Llama-3.1-8B", memory.Job{Mode: memory.Inference, PromptLen: 2048, GenLen: 512}, []string{"l4", "h100"}},
	}
	for _, tt := range tests {
		est := loadModel(t, tt.model)
		for _, name := range tt.gpus {
			g := lookup(t, name)
			t.Run(tt.model+"/"+name, func(t *testing.T) {
				b, err := MaxBatch(est, tt.job, g, 4096)
				if err != nil {
					t.Fatalf("max batch: %v", err)
				}
				checkMax(t, est, tt.job, g, b)
				job := tt.job
				if job.Mode == memory.Inference {
					job.Batch = 1
				} else {
					job.MicroBatch = 1
				}
				s, err := MaxSeqLen(est, job, g, 128, 1<<20)
				if err != nil {
					t.Fatalf("max seq len: %v", err)
				}
				checkMax(t, est, job, g, s)
			})
		}
	}
}

func TestRealServingMaxModelLen(t *testing.T) {
	est := loadModel(t, "meta-llama/Llama-3.1-8B")
	g := lookup(t, "l4")
	got, err := MaxSeqLen(est, memory.Job{Mode: memory.Serving}, g, 256, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	checkMax(t, est, memory.Job{Mode: memory.Serving}, g, got)
	if got.Result.Serving == nil || !got.Result.Serving.MaxModelLenFits {
		t.Errorf("answer %d has no fitting serving result", got.Value)
	}
}

func TestRealSearchCandidatesFit(t *testing.T) {
	est := loadModel(t, "meta-llama/Llama-3.2-1B-Instruct")
	g := lookup(t, "l4")
	base := memory.Job{SeqLen: 2048, GradAccum: 4}
	sp := DefaultSpace(4)
	sp.Keep = 1 << 20
	p, err := Search(est, base, g, sp)
	if err != nil {
		t.Fatal(err)
	}
	if p.Feasible == 0 {
		t.Fatalf("no layout of a 1B model fits on %s: %+v", g.Name, p.Skipped)
	}
	for _, c := range p.Candidates {
		r, err := est(c.Apply(OnGPU(base, g)))
		if err != nil {
			t.Fatalf("%v: %v", c.Layout, err)
		}
		if f := Check(r, g); f.Verdict != c.Verdict || f.NeedBytes != c.NeedBytes || f.Verdict == DoesNotFit {
			t.Errorf("%v: candidate %v, direct %v", c.Layout, c.Verdict, f)
		}
	}
}

func TestRealRecommend(t *testing.T) {
	est := loadModel(t, "meta-llama/Llama-3.1-8B")
	job := memory.Job{Mode: memory.Inference, Batch: 4, PromptLen: 4096, GenLen: 512}
	recs := Recommend(est, job, gpu.All(), 8)
	if len(recs) != len(gpu.All()) {
		t.Fatalf("%d recommendations", len(recs))
	}
	for _, rec := range recs {
		g := lookup(t, rec.GPU)
		r, err := est(OnGPU(job, g))
		if err != nil {
			if rec.Error == "" {
				t.Errorf("%s: estimator error %v not reported", g.Name, err)
			}
			continue
		}
		if f := Check(r, g); f != rec.Fit {
			t.Errorf("%s: recommendation %v, direct %v", g.Name, rec.Fit, f)
		}
		if rec.MinGPUs > 0 {
			j := OnGPU(job, g)
			j.TP, j.NumGPUs = rec.MinGPUs, rec.MinGPUs
			r, err := est(j)
			if ok, why := within(r, Budget(g)); err != nil || !ok {
				t.Errorf("%s: tp %d does not fit: %v %s", g.Name, rec.MinGPUs, err, why)
			}
		}
	}
	// A 16 GB bf16 model with a 2 GiB cache fits a 24 GB card only with
	// sharding, and a single H100 as given.
	for _, rec := range recs {
		if rec.GPU == "H100-SXM" && rec.Verdict != Fits {
			t.Errorf("8B inference on H100: %v", rec.Fit)
		}
	}
}

// BenchmarkSearchRealEstimator measures layout search with the real
// training estimator (Llama-3.2-1B on L4), one reusable estimator per
// worker, over the default space.
func BenchmarkSearchRealEstimator(b *testing.B) {
	m, err := model.Load("meta-llama/Llama-3.2-1B-Instruct")
	if err != nil {
		b.Fatal(err)
	}
	g, _ := gpu.Lookup("l4")
	benchSearch(b, m, memory.Job{SeqLen: 2048, GradAccum: 8}, g, DefaultSpace(64), 0)
}

// BenchmarkSearchRealLarge is the interactive-speed target: over 100,000
// real training estimates in one search (Llama-3.1-8B on B200, up to
// 16,384 GPUs, three fine-tuning methods, 32 micro-batches; every layout
// fits at micro-batch 1, so each bisects).
func BenchmarkSearchRealLarge(b *testing.B) {
	m, err := model.Load("meta-llama/Llama-3.1-8B")
	if err != nil {
		b.Fatal(err)
	}
	g, _ := gpu.Lookup("b200")
	space := DefaultSpace(1 << 14)
	space.CP = []int{1, 2, 4}
	space.PP = []int{1, 2, 4, 8, 16}
	space.Methods = []string{"full", "lora", "qlora"}
	space.MicroBatches = nil
	for mb := 1; mb <= 32; mb++ {
		space.MicroBatches = append(space.MicroBatches, mb)
	}
	benchSearch(b, m, memory.Job{SeqLen: 4096, GradAccum: 8}, g, space, 100_000)
}

// benchSearch times SearchModel and reports the estimates made per
// search and the time per estimate; it fails below minEvals estimates.
func benchSearch(b *testing.B, m *model.Model, base memory.Job, g gpu.GPU, space Space, minEvals int) {
	var p Plan
	var err error
	b.ReportAllocs()
	for b.Loop() {
		if p, err = SearchModel(m, base, g, space); err != nil {
			b.Fatal(err)
		}
	}
	if p.Evaluated < minEvals {
		b.Fatalf("only %d layouts evaluated, want at least %d", p.Evaluated, minEvals)
	}
	// layouts/op counts estimates made; decided/op also counts the
	// layout and micro-batch pairs bisection settled without estimating.
	b.ReportMetric(float64(p.Evaluated), "layouts/op")
	b.ReportMetric(float64(p.Evaluated+p.Pruned), "decided/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(max(p.Evaluated, 1)), "ns/layout")
}

// TestForMatchesEstimate checks that For's pooled estimators give
// exactly memory.Estimate's results, from several goroutines at once,
// and that a returned result is not changed by later calls.
func TestForMatchesEstimate(t *testing.T) {
	m, err := model.Load("meta-llama/Llama-3.2-1B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	jobs := []memory.Job{
		{SeqLen: 2048},
		{SeqLen: 1024, Method: "lora", LoRATargets: []string{"all-linear"}},
		{SeqLen: 4096, Engine: "deepspeed", ZeRO: 3, NumGPUs: 8},
		{SeqLen: 1024, Engine: "megatron", NumGPUs: 4, PP: 2, TP: 2, GradAccum: 4},
		{Mode: memory.Inference, Batch: 4, PromptLen: 512, GenLen: 128},
	}
	want := make([]memory.Result, len(jobs))
	for i, j := range jobs {
		if want[i], err = memory.Estimate(m, j); err != nil {
			t.Fatal(err)
		}
	}
	est := For(m)
	first, _ := est(jobs[0])
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 20 {
				i := (w + k) % len(jobs)
				got, err := est(jobs[i])
				if err != nil || !reflect.DeepEqual(got, want[i]) {
					t.Errorf("job %d: For differs from Estimate (err %v)", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if !reflect.DeepEqual(first, want[0]) {
		t.Error("a result changed after later calls")
	}
}

// TestSearchModelMatchesSearch checks that SearchModel, which decides fit
// with the estimator's peaks alone, returns the plan Search returns with
// full estimates: the same candidates, counts and skipped reasons, over
// spaces with pipeline, tensor, context and expert parallelism, every
// engine and the three fine-tuning methods, on a dense, an MoE and a
// vision-language model.
func TestSearchModelMatchesSearch(t *testing.T) {
	cases := []struct {
		id  string
		gpu string
		job memory.Job
	}{
		{"meta-llama/Llama-3.1-8B", "a100-40", memory.Job{SeqLen: 4096, GradAccum: 8}},
		{"mistralai/Mixtral-8x7B-v0.1", "h100-sxm", memory.Job{SeqLen: 2048, GradAccum: 4}},
		{"Qwen/Qwen2-VL-7B-Instruct", "rtx-4090", memory.Job{SeqLen: 1024, GradAccum: 16}},
	}
	for _, c := range cases {
		m, err := model.Load(c.id)
		if err != nil {
			t.Fatal(err)
		}
		g := lookup(t, c.gpu)
		space := DefaultSpace(64)
		space.PP = []int{1, 2, 3, 4, 8}
		space.CP = []int{1, 2}
		space.EP = []int{1, 2, 8}
		space.Methods = []string{"full", "lora", "qlora"}
		space.Keep = 1 << 20
		want, err := Search(For(m), c.job, g, space)
		if err != nil {
			t.Fatal(err)
		}
		got, err := SearchModel(m, c.job, g, space)
		if err != nil {
			t.Fatal(err)
		}
		if want.Feasible == 0 || want.Feasible == want.Evaluated {
			t.Errorf("%s on %s: %d of %d layouts fit; the comparison needs some that fit and some that do not", c.id, g.Name, want.Feasible, want.Evaluated)
		}
		t.Logf("%s: evaluated %d feasible %d skipped %d candidates %d", c.id, want.Evaluated, want.Feasible, len(want.Skipped), len(want.Candidates))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s on %s: SearchModel and Search differ: feasible %d/%d, evaluated %d/%d, too big %d/%d, %d/%d candidates",
				c.id, g.Name, got.Feasible, want.Feasible, got.Evaluated, want.Evaluated, got.TooBig, want.TooBig, len(got.Candidates), len(want.Candidates))
			for i := range min(len(got.Candidates), len(want.Candidates)) {
				if got.Candidates[i] != want.Candidates[i] {
					t.Errorf("first difference at %d: %+v vs %+v", i, got.Candidates[i], want.Candidates[i])
					break
				}
			}
		}
	}
}
