package memory

import (
	"math"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// catalogModel loads a model of the built-in catalog or fails the test.
func catalogModel(t testing.TB, id string) *model.Model {
	t.Helper()
	m, err := model.Lookup(id)
	if err != nil {
		t.Fatalf("catalog %s: %v", id, err)
	}
	return m
}

// estimateOK runs Estimate and fails the test on error.
func estimateOK(t testing.TB, m *model.Model, job Job) Result {
	t.Helper()
	r, err := Estimate(m, job)
	if err != nil {
		t.Fatalf("Estimate(%+v): %v", job, err)
	}
	return r
}

// part returns the allocated-level component name, or 0.
func part(r Result, name string) units.Bytes {
	for _, c := range r.PerGPU.Components {
		if c.Name == name && c.Level == "allocated" {
			return c.Bytes
		}
	}
	return 0
}

func gib(b units.Bytes) float64 { return b.GiBf() }

// TestLlama2WorkedExamples reproduces MODEL.md §12.3 (single GPU, pure
// bf16, fused AdamW, s = 4096, b = 1) and the corrected QLoRA example of
// §15.1.
func TestLlama2WorkedExamples(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	base := Job{SeqLen: 4096, Optimizer: "adamw_torch_fused", Attention: "flash"}
	with := func(f func(*Job)) Job { j := base; f(&j); return j }
	tests := []struct {
		name  string
		job   Job
		want  float64 // allocated peak, GiB
		tol   float64
		parts map[string]float64
	}{
		{"fa2 grads alive", with(func(j *Job) { j.GradAccum = 2 }), 74.6, 0.1,
			map[string]float64{"weights": 12.55, "gradients": 12.55, "optimizer_states": 25.10, "activations": 22.77, "loss": 1.47}},
		{"fa2 set_to_none", base, 62.0, 0.1, map[string]float64{"gradients": 0}},
		{"fa2 checkpointing", with(func(j *Job) { j.GradAccum = 2; j.GradCheckpoint = "full" }), 52.8, 0.1,
			map[string]float64{"activations": 1.00}},
		// MODEL.md's row (170.5) stops at the loss; the backward of the top
		// eager layer adds the gradient of its probabilities and fp32 scores
		// (§5.1), 3.3 GiB instead of the 1.47 GiB CE peak.
		{"eager", with(func(j *Job) { j.GradAccum = 2; j.Attention = "eager" }), 172.3, 0.1, nil},
		{"eager checkpointing", with(func(j *Job) { j.GradAccum = 2; j.Attention = "eager"; j.GradCheckpoint = "full" }), 58.0, 0.5, nil},
		{"qlora all-linear §15.1", Job{SeqLen: 4096, Method: "qlora", LoRATargets: []string{"all-linear"}, GradCheckpoint: "full"}, 8.2, 0.1,
			map[string]float64{"adapter_weights": 0.149}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := estimateOK(t, m, tt.job)
			if got := gib(r.PerGPU.AllocatedPeakBytes); math.Abs(got-tt.want) > tt.tol {
				t.Errorf("allocated peak %.2f GiB, want %.2f ± %.2f", got, tt.want, tt.tol)
			}
			for name, want := range tt.parts {
				if got := gib(part(r, name)); math.Abs(got-want) > 0.01 {
					t.Errorf("%s = %.3f GiB, want %.3f", name, got, want)
				}
			}
		})
	}
}

// TestLayerInventories checks the per-layer saved bytes against the
// coefficients of MODEL.md §4.3 for Llama-2-7B (bytes per token / h).
func TestLayerInventories(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	st := &m.Text
	h := float64(st.Hidden)
	lt := model.LayerType{Attention: model.FullAttention}
	all7 := &loraLayer{attnIn: 3, oIn: 1, mlpIn: 2, downIn: 1, rankOut: 7 * 16, attnRank: 4 * 16}
	tests := []struct {
		name string
		r    actRegime
		want float64 // bytes per token per layer / h
		quad float64 // s² coefficient per token per key / h × s at s=4096
	}{
		{"hf bf16 flash §4.3.1", actRegime{c: 2, resid: 2, attn: trAttnFlash, trainW: true}, 45.53, 0},
		{"hf amp flash §4.3.3", actRegime{c: 2, resid: 4, amp: true, attn: trAttnFlash, trainW: true}, 55.53, 0},
		{"frozen §4.3.5", actRegime{c: 2, resid: 2, attn: trAttnFlash}, 32.16, 0},
		// litgpt: v is a view of the fused qkv output, so its q and k parts stay alive.
		{"litgpt frozen, v viewing qkv", actRegime{c: 2, resid: 2, attn: trAttnFlash, vView: true}, 36.16, 0},
		{"megatron fused §4.3.4 (+ lse 4a/h)", actRegime{c: 2, resid: 2, attn: trAttnFlash, trainW: true, fused: true}, 32.156, 0},
		{"lora all-7 bf16 dropout 0 §4.3.6", actRegime{c: 2, resid: 2, attn: trAttnFlash, lora: all7, adapterB: 2}, 41.53 + 14.0*16/4096, 0},
		{"hf bf16 eager §4.3.2", actRegime{c: 2, resid: 2, attn: trAttnEager, trainW: true}, 45.5, 192},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := decoderLayer(st, lt, &tt.r)
			lin := a.lin / h
			want := tt.want
			if math.Abs(lin-want) > 0.02 {
				t.Errorf("linear part %.3f·h per token, want %.3f", lin, want)
			}
			if q := a.quad * 4096 / h; math.Abs(q-tt.quad) > 0.01 {
				t.Errorf("s² part at s=4096 %.2f·h, want %.2f", q, tt.quad)
			}
		})
	}
}

func TestLoRAParamCounts(t *testing.T) {
	tests := []struct {
		model   string
		job     Job
		want    int64
		adapter units.Bytes // adapter weights bytes, 0 = unchecked
	}{
		// MODEL.md §6.1: Llama-2-7B r=16 on all 7 projections = 39.98 M.
		{"meta-llama/Llama-2-7b-hf", Job{Method: "lora", LoRARank: 16, LoRATargets: []string{"all-linear"}}, 39976960, 39976960 * 4},
		{"meta-llama/Llama-2-7b-hf", Job{Method: "lora", LoRARank: 8}, 4194304, 0},
		// Fused query_key_value (GPT-NeoX): q and v slices, as litgpt reports.
		{"stabilityai/stablelm-base-alpha-3b", Job{Method: "lora", LoRARank: 8, Framework: "litgpt"}, 2097152, 2097152 * 2},
		// GQA k/v widths: Llama-3.2-3B r=32 q,v (PEFT MetaMathQA: 9,175,040).
		{"meta-llama/Llama-3.2-3B", Job{Method: "lora", LoRARank: 32}, 9175040, 0},
		// DoRA adds a magnitude per output (PEFT MetaMathQA: 9,289,728).
		{"meta-llama/Llama-3.2-3B", Job{Method: "lora", LoRARank: 32, PEFTVariant: "dora"}, 9289728, 0},
		// LoRA-FA trains B only.
		{"meta-llama/Llama-2-7b-hf", Job{Method: "lora", LoRARank: 8, PEFTVariant: "lora-fa"}, 4194304 / 2, 4194304 * 4},
	}
	for _, tt := range tests {
		t.Run(tt.model+" "+tt.job.PEFTVariant, func(t *testing.T) {
			tt.job.SeqLen = 512
			r := estimateOK(t, catalogModel(t, tt.model), tt.job)
			if r.TrainableParams != tt.want {
				t.Errorf("trainable params %d, want %d", r.TrainableParams, tt.want)
			}
			if tt.adapter > 0 && part(r, "adapter_weights") != tt.adapter {
				t.Errorf("adapter weights %d B, want %d", part(r, "adapter_weights"), tt.adapter)
			}
		})
	}
}

func TestPrecisionRecipes(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	P := float64(6738415616)
	tests := []struct {
		name                      string
		job                       Job
		weights, master, grads, o float64 // bytes per parameter
	}{
		{"pure bf16 torch adamw", Job{}, 2, 0, 2, 4},
		{"amp fp32 + bf16 autocast", Job{Dtype: "fp32"}, 4, 0, 4, 8},
		{"pure fp32", Job{Dtype: "fp32", ComputeDtype: "fp32"}, 4, 0, 4, 8},
		{"deepspeed mixed", Job{Engine: "deepspeed"}, 2, 4, 2, 8},
		{"explicit master", Job{MasterWeights: "fp32"}, 2, 4, 2, 8},
		{"megatron main_grad", Job{Framework: "megatron"}, 2, 4, 4, 8},
		{"bnb 32-bit states in bf16", Job{Optimizer: "paged_adamw_32bit"}, 2, 0, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.job.SeqLen, tt.job.GradAccum = 512, 2
			r := estimateOK(t, m, tt.job)
			check := func(name string, perParam float64) {
				got := float64(part(r, name)) / P
				if math.Abs(got-perParam) > 0.01 {
					t.Errorf("%s = %.3f B/param, want %v", name, got, perParam)
				}
			}
			check("weights", tt.weights)
			check("master_weights", tt.master)
			check("gradients", tt.grads)
			check("optimizer_states", tt.o)
			if tt.job.Optimizer == "paged_adamw_32bit" {
				var paged units.Bytes
				for _, c := range r.PerGPU.Components {
					if c.Name == "optimizer_states" && c.Level == "device" {
						paged = c.Bytes
					}
				}
				if got := float64(paged) / P; math.Abs(got-8) > 0.01 {
					t.Errorf("paged states %.3f B/param at device level, want 8", got)
				}
			}
			if tt.name == "amp fp32 + bf16 autocast" {
				// The cast cache is alive from forward to backward; with a
				// fused optimizer the loss phase is the peak.
				j := Job{Dtype: "fp32", SeqLen: 4096, GradAccum: 2, Optimizer: "adamw_torch_fused", Attention: "flash"}
				r := estimateOK(t, m, j)
				if got := gib(part(r, "autocast_weight_cache")); math.Abs(got-2*6.607e9/(1<<30)) > 0.05 {
					t.Errorf("AMP cast cache %.2f GiB at %s, want 2·P_linear ≈ 12.3 GiB", got, r.PerGPU.PeakPhase)
				}
			}
		})
	}
}

func TestTrainingBadInput(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	tests := []struct {
		name string
		job  Job
		want string
	}{
		{"qlora fp32", Job{Method: "qlora", Dtype: "fp32"}, "<dtype=fp32>"},
		{"lora rank too big", Job{Method: "lora", LoRARank: 5000}, "<lora_rank=5000>"},
		{"negative batch", Job{MicroBatch: -1}, "<per_device_batch"},
		{"negative accumulation", Job{GradAccum: -2}, "<grad_accum"},
		{"negative seq", Job{SeqLen: -5}, "<seq_len"},
		{"too long", Job{SeqLen: 8192}, "max_position_embeddings 4096"},
		{"unknown optimizer", Job{Optimizer: "adamw_magic"}, `<optimizer>: optimizer: unknown optimizer "adamw_magic"`},
		{"unknown dtype", Job{Dtype: "fp12"}, "<dtype"},
		{"unknown attention", Job{Attention: "ring"}, "<attn"},
		{"unknown checkpointing", Job{GradCheckpoint: "sometimes"}, "<grad_checkpoint"},
		{"every-0", Job{GradCheckpoint: "every-0"}, "every-N"},
		{"unknown fused loss", Job{FusedLoss: "magic"}, "<fused_loss"},
		{"unknown method", Job{Method: "prefix"}, "<method"},
		{"unknown framework", Job{Framework: "jax"}, "<framework"},
		{"unknown software", Job{Software: []string{"torch0"}}, "<software"},
		{"unknown constant", Job{Constants: map[string]float64{"activation_scal": 1}}, `"activation_scal"`},
		{"full training of nf4", Job{Dtype: "nf4", Method: "full"}, "<method=qlora>"},
		{"fp8 weights", Job{Dtype: "fp8"}, "<dtype=fp8>: FP8 training"},
		{"bad targets", Job{Method: "lora", LoRATargets: []string{"nope_proj"}}, "<lora_target_modules=nope_proj>"},
		{"bad dropout", Job{Method: "lora", LoRADropout: 1.5}, "<lora_dropout"},
		{"bad variant", Job{Method: "lora", PEFTVariant: "hra"}, "<peft_variant"},
		{"bad master", Job{MasterWeights: "fp8"}, "<master_weights"},
		{"frozen without set", Job{Method: "frozen"}, "<trainable"},
		{"bad layer range", Job{Trainable: []string{"layers:10-99"}}, "layers:A-B"},
		{"images on a text model", Job{ImagesPerSample: 1}, "no vision tower"},
		{"optimizer in backward with accumulation", Job{OptimizerInBwd: true, GradAccum: 4}, "<optimizer_in_backward"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.job.SeqLen == 0 {
				tt.job.SeqLen = 1024
			}
			_, err := Estimate(m, tt.job)
			if err == nil || !strings.Contains(marked(err), tt.want) {
				t.Errorf("err = %v, want one containing %q", marked(err), tt.want)
			}
		})
	}
	long := Job{SeqLen: 8192, AllowLong: true}
	if _, err := Estimate(m, long); err != nil {
		t.Errorf("allow_long: %v", err)
	}
}

func TestTrainingWarnings(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	no := false
	r := estimateOK(t, m, Job{SeqLen: 512, Packed: &no, GPU: "mystery-9000"})
	joined := strings.Join(r.Warnings, "\n")
	for _, want := range []string{"packed=false", "mystery-9000"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q lack %q", joined, want)
		}
	}
	r = estimateOK(t, m, Job{})
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "seq_len not given") {
		t.Errorf("default sequence length not warned: %q", r.Warnings)
	}
	r = estimateOK(t, m, Job{SeqLen: 4096, GPU: "A10G", GPUComputeCapability: 86, GPUMemory: 22 * units.GiB, Engine: "deepspeed", ZeRO: 2, NumGPUs: 8})
	joined = strings.Join(r.Warnings, "\n")
	for _, want := range []string{"exceeds the 22.00 GiB CUDA can use on A10G"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q lack %q", joined, want)
		}
	}
	r = estimateOK(t, m, Job{SeqLen: 512, Method: "qlora", GradCheckpoint: "full", GPU: "H100-SXM", GPUComputeCapability: 90, GPUMemory: 80 * units.GiB})
	if len(r.Warnings) != 0 {
		t.Errorf("fitting single-GPU QLoRA warned: %q", r.Warnings)
	}
	// Unstated, QLoRA checkpoints, and the output says so.
	r = estimateOK(t, m, Job{SeqLen: 512, Method: "qlora"})
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "prepare_model_for_kbit_training") || r.Job.GradCheckpoint != "full" || !r.Assumed.Has("grad_checkpoint") {
		t.Errorf("QLoRA without grad_checkpoint: job %q, assumed %v, warnings %q; want full, assumed, and PEFT named", r.Job.GradCheckpoint, r.Assumed.Keys(), r.Warnings)
	}
}
