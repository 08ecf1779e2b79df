package plan

import (
	"errors"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
)

func TestAssessSynthetic(t *testing.T) {
	s := synth{params: 7_000_000_000, actPerToken: 100_000}
	g, _ := gpu.Lookup("a100-80g")
	job := memory.Job{Engine: "deepspeed", ZeRO: 3, SeqLen: 2048, MicroBatch: 1}
	a, err := Assess(s.estimate, job, g, 64)
	if err != nil {
		t.Fatal(err)
	}
	if a.Fit.Verdict != DoesNotFit || a.Result.Job.GPU != g.Name {
		t.Errorf("fit %v on %q, want does_not_fit on one A100", a.Fit, a.Result.Job.GPU)
	}
	// One GPU does not fit, so batch and sequence searches find nothing,
	// while the GPU count search finds the smallest sharded count.
	if !a.MaxBatch.NoFit || !a.MaxSeqLen.NoFit || a.MaxBatch.Error == "" {
		t.Errorf("batch %+v, seq %+v", a.MaxBatch, a.MaxSeqLen)
	}
	want, err := MinGPUs(s.estimate, job, g, 64)
	if err != nil || a.MinGPUs.Value != want.Value || a.MinGPUs.NeedBytes != Need(want.Result) || a.MinGPUs.Value < 2 {
		t.Errorf("min GPUs %+v, want %d", a.MinGPUs, want.Value)
	}
}

func TestAssessInferenceUsesTP(t *testing.T) {
	g, _ := gpu.Lookup("h100")
	a, err := Assess(tpEstimator, memory.Job{Mode: memory.Inference}, g, 8)
	if err != nil {
		t.Fatal(err)
	}
	if a.MinGPUs.Value != 2 {
		t.Errorf("min tp %d, want 2", a.MinGPUs.Value)
	}
}

func TestAssessEstimatorError(t *testing.T) {
	g, _ := gpu.Lookup("h100")
	bad := func(memory.Job) (memory.Result, error) { return memory.Result{}, errors.New("boom") }
	if _, err := Assess(bad, memory.Job{}, g, 8); err == nil {
		t.Error("estimator error swallowed")
	}
}

func TestNewAnswer(t *testing.T) {
	a := NewAnswer(Found{Value: 7, Limit: 9, Stop: "why"}, nil)
	if a.Value != 7 || a.Limit != 9 || a.Stop != "why" || a.NoFit {
		t.Errorf("%+v", a)
	}
	a = NewAnswer(Found{Value: 7}, ErrNoFit)
	if a.Value != 0 || !a.NoFit || a.Error == "" {
		t.Errorf("%+v", a)
	}
}
