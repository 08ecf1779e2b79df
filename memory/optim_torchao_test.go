package memory

import (
	"math"
	"strings"
	"testing"
)

// torchaoStates is the optimizer state torchao's low-bit AdamW keeps for
// every parameter of m trained in full bf16, from torchao/optim/adam.py
// _new_buffer and the state subclasses (@v0.13.0): a tensor of n >= 4096
// values, n a multiple of the block, keeps two states of n codes (code
// bytes each), n/block fp32 scales and a map of qmap fp32 entries; any
// other tensor two zeros_like(p) states.
func torchaoStates(t *testing.T, id string, code, block, qmap float64) float64 {
	m := catalogModel(t, id)
	var want float64
	for _, mod := range m.Modules {
		moduleTensors(m, &mod, 1, func(g tensorGroup) {
			n := g.numel()
			if n >= 4096 && math.Mod(n, block) == 0 {
				want += g.count * 2 * (n*code + 4*n/block + 4*qmap)
			} else {
				want += g.count * 2 * n * 2
			}
		})
	}
	return want
}

func TestTorchaoLowBitStates(t *testing.T) {
	const id = "meta-llama/Llama-3.2-1B-Instruct"
	m := catalogModel(t, id)
	tests := []struct {
		optimizer          string
		stack              Stack
		code, block, qmapN float64
	}{
		{"adamw_torch_8bit", nil, 1, 256, 256},
		{"torchao.optim.AdamW8bit", Stack{"torchao": "0.5.0"}, 1, 2048, 256}, // before PR #927
		{"adamw_torch_4bit", nil, 0.5, 128, 16},
		{"torchao_adamw_fp8", nil, 1, 256, 0},
	}
	for _, tt := range tests {
		t.Run(tt.optimizer, func(t *testing.T) {
			job := Job{Optimizer: tt.optimizer, SeqLen: 256, Stack: tt.stack}
			r := estimateOK(t, m, job)
			want := torchaoStates(t, id, tt.code, tt.block, tt.qmapN)
			if got := float64(part(r, "optimizer_states")); math.Abs(got-want) > 1 {
				t.Errorf("optimizer states %.0f B, want %.0f B", got, want)
			}
			// Fused into compiled kernels per parameter: no step transient.
			if got := part(r, "optimizer_step"); got != 0 {
				t.Errorf("optimizer step transient %d B, want 0", got)
			}
			checkParts(t, r)
		})
	}
	// 8-bit torchao states are about a quarter of bf16 AdamW's 4 B/param
	// (and far below fp32's 8): 2 + 8/256 B plus the small tensors.
	plain := estimateOK(t, m, Job{SeqLen: 256})
	low := estimateOK(t, m, Job{SeqLen: 256, Optimizer: "adamw_torch_8bit"})
	if r := float64(part(low, "optimizer_states")) / float64(part(plain, "optimizer_states")); r < 0.5 || r > 0.55 {
		t.Errorf("8-bit / bf16 AdamW states = %.3f, want about 2.03/4", r)
	}
}

// TestCPUOffloadOptimizer: torchao's CPUOffloadOptimizer keeps pinned
// host copies of each parameter of 4096 values or more and its gradient
// and runs a fused CPU AdamW on them (states zeros_like the host copy);
// smaller tensors keep a GPU AdamW. With offload_gradients each GPU
// gradient is freed once copied.
func TestCPUOffloadOptimizer(t *testing.T) {
	const id = "meta-llama/Llama-3.2-1B-Instruct"
	m := catalogModel(t, id)
	var host, gpuStates float64
	for _, mod := range m.Modules {
		moduleTensors(m, &mod, 1, func(g tensorGroup) {
			if n := g.numel(); n >= 4096 {
				host += g.count * n * (2 + 2 + 2*2)
			} else {
				gpuStates += g.count * n * 2 * 2
			}
		})
	}
	r := estimateOK(t, m, Job{SeqLen: 256, Optimizer: "cpu_offload_adamw"})
	if r.Host == nil || math.Abs(float64(r.Host.CPUBytes)-host) > 1 {
		t.Errorf("host %v, want %.0f B (param, grad and two states, bf16)", r.Host, host)
	}
	if got := float64(part(r, "optimizer_states")); math.Abs(got-gpuStates) > 1 {
		t.Errorf("GPU optimizer states %.0f B, want the small tensors' %.0f B", got, gpuStates)
	}
	keep := estimateOK(t, m, Job{SeqLen: 256, Optimizer: "cpu_offload_adamw"})
	free := estimateOK(t, m, Job{SeqLen: 256, Optimizer: "cpu_offload_adamw_offload_gradients"})
	if free.PerGPU.AllocatedPeakBytes >= keep.PerGPU.AllocatedPeakBytes {
		t.Errorf("offload_gradients peak %d, not below %d", free.PerGPU.AllocatedPeakBytes, keep.PerGPU.AllocatedPeakBytes)
	}
	for _, tt := range []struct {
		job  Job
		want string
	}{
		{Job{SeqLen: 256, Optimizer: "cpu_offload_adamw", Engine: "ddp", NumGPUs: 2}, "single-GPU"},
		{Job{SeqLen: 256, Optimizer: "cpu_offload_adamw_offload_gradients", GradAccum: 4}, "gradient accumulation"},
	} {
		if _, err := Estimate(m, tt.job); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want an error containing %q", tt.job.Optimizer, err, tt.want)
		}
	}
}

// TestFloat8Training: Float8Linear saves what a bf16 Linear saves
// (input_hp, weight_hp_t), so the activations do not change; its
// matmuls add float8 copies in backward; with
// enable_fsdp_float8_all_gather FSDP2 gathers the layers' Linear weights
// in one byte per element.
func TestFloat8Training(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.1-8B")
	base := Job{Framework: FrameworkTorchtitan, Engine: "fsdp2", NumGPUs: 8, SeqLen: 8192, GradCheckpoint: "full",
		MasterWeights: "fp32", Compile: true, GPUComputeCapability: 90}
	init := func(j Job) *setup {
		s := new(setup)
		if err := s.init(m, j); err != nil {
			t.Fatal(err)
		}
		return s
	}
	b := init(base)
	f8 := base
	f8.Float8 = "tensorwise"
	f := init(f8)
	ab, af := b.activations(), f.activations()
	if ab.fwd != af.fwd || ab.layer != af.layer {
		t.Errorf("float8 changed the saved activations: %.0f/%.0f vs %.0f/%.0f", af.fwd, af.layer, ab.fwd, ab.layer)
	}
	h, fs, n := float64(m.Text.Hidden), float64(m.Text.Intermediate), b.tokens
	if got, want := af.trans-ab.trans, n*h+n*fs+h*fs; got != want {
		t.Errorf("float8 backward transient +%.0f B, want n·h + n·f + h·f = %.0f B", got, want)
	}
	ag := f8
	ag.Float8AllGather = true
	g := init(ag)
	var wantUnit float64
	for _, mod := range m.Modules {
		if mod.Stack != stackText || mod.Layer < 0 {
			continue
		}
		if mod.In > 0 && mod.Out > 0 {
			wantUnit += float64(mod.Params) // one byte each
		} else {
			wantUnit += 2 * float64(mod.Params)
		}
	}
	wantUnit /= float64(m.Text.Layers)
	if unit, _ := g.fsdpUnits(true); math.Abs(unit*2-wantUnit) > 1 {
		t.Errorf("gathered unit %.0f B, want float8 Linears + bf16 norms = %.0f B", unit*2, wantUnit)
	}
	if unit, _ := f.fsdpUnits(true); unit*2 <= wantUnit {
		t.Errorf("without float8 all-gather the unit (%.0f B) should stay bf16", unit*2)
	}
	bad := []struct {
		job  Job
		want string
	}{
		{Job{SeqLen: 512, Float8: "e5m2"}, "unknown recipe"},
		{Job{SeqLen: 512, Float8: "rowwise", Float8AllGather: true, Engine: "fsdp2", NumGPUs: 2}, "tensorwise scaling only"},
		{Job{SeqLen: 512, Float8: "tensorwise", GPU: "A100", GPUComputeCapability: 80}, "8.9 or later"},
		{Job{SeqLen: 512, Float8: "tensorwise", Method: "qlora"}, "quantized base"},
	}
	for _, tt := range bad {
		if _, err := Estimate(m, tt.job); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v %v: %v, want an error containing %q", tt.job.Float8, tt.job.Float8AllGather, err, tt.want)
		}
	}
	r := estimateOK(t, m, Job{SeqLen: 512, Float8AllGather: true})
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "without float8") {
		t.Errorf("warnings %q should say the all-gather changes nothing without float8", r.Warnings)
	}
}
