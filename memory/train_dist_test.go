package memory

import (
	"math"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/units"
)

// statesPerParam sums the model-state rows of a result per parameter.
func statesPerParam(r Result, P float64) float64 {
	var b units.Bytes
	for _, name := range []string{"weights", "master_weights", "optimizer_states"} {
		b += part(r, name)
	}
	return float64(b) / P
}

// TestZeROStages reproduces the ZeRO paper's model-state formulas
// (arXiv:1910.02054 §5; MODEL.md §3.1) for mixed-precision Adam on
// Llama-2-7B over 8 ranks: gradients are read at the step phase where
// they are all alive.
func TestZeROStages(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	P := 6738415616.0
	N := 8.0
	tests := []struct {
		zero int
		want float64 // bytes per parameter of weights + grads + master + Adam
	}{
		{0, 16},
		{1, 4 + 12/N},
		{2, 2 + 14/N},
		{3, 16 / N},
	}
	for _, tt := range tests {
		job := Job{SeqLen: 128, Engine: "deepspeed", ZeRO: tt.zero, NumGPUs: 8, GradAccum: 2, Optimizer: "adamw_torch_fused"}
		r := estimateOK(t, m, job)
		got := statesPerParam(r, P) + float64(part(r, "gradients"))/P
		if math.Abs(got-tt.want) > 0.01 {
			t.Errorf("ZeRO-%d: %.3f B/param of model states, want %.3f", tt.zero, got, tt.want)
		}
		checkParts(t, r)
	}
}

func TestParallelLayouts(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.1-70B")
	base := Job{SeqLen: 4096, MicroBatch: 1, GradCheckpoint: "full", Optimizer: "adamw_torch_fused", Engine: "fsdp2", NumGPUs: 64}
	one := estimateOK(t, m, base)
	checkParts(t, one)
	tp := base
	tp.TP = 8
	withTP := estimateOK(t, m, tp)
	checkParts(t, withTP)
	if withTP.TrainableParams != one.TrainableParams || one.TrainableParams != one.TotalParams {
		t.Errorf("trainable params %d with tp 8, %d without, total %d: want the whole model's count", withTP.TrainableParams, one.TrainableParams, one.TotalParams)
	}
	acts := func(j Job) actTotals {
		var s setup
		if err := s.init(m, j); err != nil {
			t.Fatal(err)
		}
		return s.activations()
	}
	a1, a8 := acts(base), acts(tp)
	if a8.layer*2 > a1.layer || a8.ckpt != a1.ckpt {
		t.Errorf("tp 8: recomputed layer %.0f vs %.0f (want < 1/2: replicated norms, the rest / 8), checkpoints %.0f vs %.0f (want equal without SP)", a8.layer, a1.layer, a8.ckpt, a1.ckpt)
	}
	sp := tp
	sp.SP = true
	if a := acts(sp); a.layer >= a8.layer {
		t.Error("sequence parallel did not shrink the layer")
	}
	pp := base
	pp.PP, pp.GradAccum = 4, 8
	withPP := estimateOK(t, m, pp)
	checkParts(t, withPP)
	if !strings.Contains(strings.Join(withPP.Warnings, "\n"), "stage 0") {
		t.Errorf("pipeline warning missing: %q", withPP.Warnings)
	}
	if part(withPP, "loss") != 0 {
		t.Error("stage 0 counted the loss")
	}
	cp := base
	cp.CP = 8
	c2 := estimateOK(t, m, cp)
	cp.Engine = "fsdp"
	c1 := estimateOK(t, m, cp)
	if part(c2, "optimizer_states") != part(one, "optimizer_states") || part(c1, "optimizer_states") <= part(c2, "optimizer_states") {
		t.Errorf("FSDP2 shards over dp × cp (%d, want %d), FSDP1 over dp only (%d)", part(c2, "optimizer_states"), part(one, "optimizer_states"), part(c1, "optimizer_states"))
	}
	// More GPUs never raise the per-GPU model states of full sharding.
	prev := units.MaxBytes
	for _, n := range []int{8, 16, 64, 256} {
		j := base
		j.NumGPUs = n
		r := estimateOK(t, m, j)
		st := part(r, "weights") + part(r, "optimizer_states") + part(r, "master_weights")
		if st > prev {
			t.Errorf("%d GPUs: model states %d above %d", n, st, prev)
		}
		prev = st
	}
}

func TestOffload(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	j := Job{SeqLen: 512, Engine: "deepspeed", ZeRO: 3, NumGPUs: 4, OffloadOptimizer: "cpu", OffloadParams: "cpu"}
	r := estimateOK(t, m, j)
	if r.Host == nil || r.Host.CPUBytes == 0 {
		t.Fatal("offload without host memory")
	}
	if part(r, "optimizer_states") != 0 || part(r, "weights") != 0 {
		t.Errorf("offloaded states still on the GPU: %d, %d", part(r, "optimizer_states"), part(r, "weights"))
	}
	checkParts(t, r)
	one := estimateOK(t, m, Job{SeqLen: 512, Engine: "deepspeed", ZeRO: 2, OffloadOptimizer: "cpu"})
	if one.Host == nil || part(one, "optimizer_states") != 0 {
		t.Error("single-GPU ZeRO-Offload kept the optimizer on the GPU")
	}
	plain := estimateOK(t, m, Job{SeqLen: 512, OffloadOptimizer: "cpu"})
	if plain.Host != nil || !strings.Contains(strings.Join(plain.Warnings, " "), "--offload-optimizer") {
		t.Errorf("offload without an engine: host %v, warnings %q", plain.Host, plain.Warnings)
	}
}

func TestDistributedBadInput(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	tests := []struct {
		job  Job
		want string
	}{
		{Job{NumGPUs: 8, TP: 3}, "--num-gpus 8"},
		{Job{NumGPUs: 6, TP: 3, DP: 2}, "--tp 3"},
		{Job{Engine: "horovod"}, "--engine"},
		{Job{Engine: "deepspeed", ZeRO: 4}, "--zero"},
		{Job{Engine: "fsdp", FSDPStrategy: "half"}, "--fsdp-strategy"},
		{Job{PP: 64}, "--pp 64"},
		{Job{EP: 2}, "--ep 2"},
		{Job{Engine: "deepspeed", ZeRO: 2, OffloadParams: "cpu"}, "--offload-params"},
		{Job{NumGPUs: -1}, "--num-gpus"},
	}
	for _, tt := range tests {
		tt.job.SeqLen = 256
		if _, err := Estimate(m, tt.job); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want one containing %q", tt.job, err, tt.want)
		}
	}
}
