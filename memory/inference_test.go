package memory

import (
	"math"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// component returns the named row of r, failing the test if it is absent.
func component(t *testing.T, r Result, name string) Component {
	t.Helper()
	for _, c := range r.PerGPU.Components {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q component in %+v", name, r.PerGPU.Components)
	return Component{}
}

// phaseBytes returns the allocated total of the named phase.
func phaseBytes(t *testing.T, r Result, name string) units.Bytes {
	t.Helper()
	for _, p := range r.PerGPU.Phases {
		if p.Name == name {
			return p.Bytes
		}
	}
	t.Fatalf("no %q phase in %+v", name, r.PerGPU.Phases)
	return 0
}

func mustEstimate(t *testing.T, m *model.Model, job Job) Result {
	t.Helper()
	r, err := Estimate(m, job)
	if err != nil {
		t.Fatalf("Estimate(%s, %+v): %v", m.ID, job, err)
	}
	return r
}

func TestInferenceWeightsExact(t *testing.T) {
	const llama2Params = 6_738_415_616 // MODEL.md §1.1
	tests := []struct {
		dtype string
		want  units.Bytes
	}{
		{"bf16", 2 * llama2Params},
		{"", 2 * llama2Params},
		{"fp16", 2 * llama2Params},
		{"fp32", 4 * llama2Params},
	}
	for _, tt := range tests {
		t.Run("dtype="+tt.dtype, func(t *testing.T) {
			r := mustEstimate(t, testModel(llama2_7b), Job{Mode: Inference, Dtype: tt.dtype, PromptLen: 16, GenLen: 16})
			if r.TotalParams != llama2Params {
				t.Errorf("TotalParams = %d, want %d", r.TotalParams, llama2Params)
			}
			if got := component(t, r, "weights").Bytes; got != tt.want {
				t.Errorf("weights = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestInferenceKVCacheLlama2(t *testing.T) {
	// MODEL.md §7.2: 2·32·32·128·2 = 0.5 MiB per token; 4096 tokens → 2 GiB.
	r := mustEstimate(t, testModel(llama2_7b), Job{Mode: Inference, PromptLen: 4096})
	if got, want := component(t, r, "kv_cache").Bytes, 2*units.GiB; got != want {
		t.Errorf("kv_cache = %v, want %v", got, want)
	}
	if r.PerGPU.PeakPhase != phasePrefill {
		t.Errorf("PeakPhase = %q, want prefill", r.PerGPU.PeakPhase)
	}
}

// kvAt returns the KV cache of a job at the decode peak.
func kvAt(t *testing.T, d denseShape, job Job) units.Bytes {
	t.Helper()
	job.Mode = Inference
	r := mustEstimate(t, testModel(d), job)
	for _, c := range r.PerGPU.Components {
		if c.Name == "kv_cache" {
			return c.Bytes
		}
	}
	// The peak may be in another phase; recompute from the phase rows.
	t.Fatalf("no kv_cache row")
	return 0
}

func TestKVCacheInvariants(t *testing.T) {
	base := Job{Batch: 2, PromptLen: 1000}
	one := kvAt(t, llama31_8b, base)
	t.Run("linear in tokens", func(t *testing.T) {
		j := base
		j.PromptLen = 3000
		if got := kvAt(t, llama31_8b, j); got != 3*one {
			t.Errorf("3× tokens: %v, want %v", got, 3*one)
		}
	})
	t.Run("linear in batch", func(t *testing.T) {
		j := base
		j.Batch = 8
		if got := kvAt(t, llama31_8b, j); got != 4*one {
			t.Errorf("4× batch: %v, want %v", got, 4*one)
		}
	})
	t.Run("fp8 is half of bf16", func(t *testing.T) {
		j := base
		j.KVCacheDtype = "fp8"
		if got := kvAt(t, llama31_8b, j); 2*got != one {
			t.Errorf("fp8 KV %v, want half of %v", got, one)
		}
	})
	t.Run("GQA per token", func(t *testing.T) {
		// Llama-3.1-8B: 2·32 layers·8 heads·128·2 B = 128 KiB per token.
		if want := units.Bytes(2 * 1000 * 128 * 1024); one != want {
			t.Errorf("kv = %v, want %v", one, want)
		}
	})
	t.Run("sliding window stops growing", func(t *testing.T) {
		at := func(n int) units.Bytes { return kvAt(t, mistral7b, Job{PromptLen: n, AllowLong: true}) }
		if a, b := at(4096), at(20000); a != b {
			t.Errorf("Mistral KV at 4096 = %v, at 20000 = %v: want equal past the window", a, b)
		}
		if a, b := at(1000), at(2000); 2*a != b {
			t.Errorf("below the window KV must be linear: %v, %v", a, b)
		}
	})
	t.Run("interleaved local/global", func(t *testing.T) {
		// Gemma 2: 21 global layers keep all tokens, 21 local ones 4096.
		got := kvAt(t, gemma2_9b, Job{PromptLen: 8192})
		per := int64(2 * 8 * 256 * 2)
		want := units.Bytes(21*per*8192 + 21*per*4096)
		if got != want {
			t.Errorf("gemma-2 KV = %d, want %d", got, want)
		}
	})
}

func TestKVCacheMLA(t *testing.T) {
	st := testModel(deepseekV3).Text
	tests := []struct {
		engine string
		want   int64
	}{
		{engineVLLM, 70_272}, // (512 + 64)·2 B·61 layers, MODEL.md §7.2
		{engineHF, 61 * 128 * (128 + 64 + 128) * 2},
	}
	for _, tt := range tests {
		spec, err := buildKVSpec(&st, 0, st.Layers, BF16, 1, tt.engine)
		if err != nil {
			t.Fatal(err)
		}
		if got := spec.perToken(); got != tt.want {
			t.Errorf("%s: MLA per token = %d, want %d", tt.engine, got, tt.want)
		}
	}
}

func TestInferencePartsSumToPeak(t *testing.T) {
	jobs := []Job{
		{PromptLen: 512, GenLen: 512, Batch: 4},
		{PromptLen: 4096, Attention: "eager"},
		{PromptLen: 100, GenLen: 100, Dtype: "nf4"},
		{PromptLen: 100, GenLen: 100, Software: []string{"transformers<4.36"}},
		{PromptLen: 100, GenLen: 100, NoKVCache: true},
		{PromptLen: 100, GenLen: 100, CUDAGraphs: true, GPU: "H100-SXM", GPUComputeCapability: 90, GPUMemory: 80 * units.GiB},
		{PromptLen: 256, GenLen: 10, TP: 2, PP: 2},
	}
	for _, job := range jobs {
		job.Mode = Inference
		r := mustEstimate(t, testModel(llama2_7b), job)
		var alloc, reserved, device units.Bytes
		for _, c := range r.PerGPU.Components {
			if c.Bytes < 0 {
				t.Errorf("%+v: negative %s", job, c.Name)
			}
			switch c.Level {
			case "allocated":
				alloc += c.Bytes
			case "reserved":
				reserved += c.Bytes
			case "device":
				device += c.Bytes
			default:
				t.Errorf("component %s has level %q", c.Name, c.Level)
			}
			if c.Formula == "" || c.Source == "" {
				t.Errorf("component %s lacks formula or source", c.Name)
			}
		}
		p := r.PerGPU
		if alloc != p.AllocatedPeakBytes {
			t.Errorf("%+v: allocated rows %v != peak %v", job, alloc, p.AllocatedPeakBytes)
		}
		if alloc+reserved != p.ReservedPeakBytes || p.ReservedPeakBytes+device != p.DevicePeakBytes {
			t.Errorf("%+v: levels do not add up: %v + %v, %v + %v", job, alloc, reserved, p.ReservedPeakBytes, device)
		}
		if phaseBytes(t, r, p.PeakPhase) != p.AllocatedPeakBytes {
			t.Errorf("%+v: peak phase %s total differs from the allocated peak", job, p.PeakPhase)
		}
		for _, ph := range p.Phases {
			if ph.Bytes > p.AllocatedPeakBytes {
				t.Errorf("%+v: phase %s %v above the peak %v", job, ph.Name, ph.Bytes, p.AllocatedPeakBytes)
			}
		}
	}
}

func TestLegacyTupleCacheDoublesKV(t *testing.T) {
	// MODEL.md §15.2: decode peak ≈ W + 2·KV for transformers < 4.36.
	job := Job{Mode: Inference, Batch: 4, PromptLen: 512, GenLen: 512, Software: []string{"transformers<4.36"}}
	r := mustEstimate(t, testModel(llama2_13b), job)
	if r.PerGPU.PeakPhase != phaseDecode {
		t.Fatalf("peak phase %q, want decode", r.PerGPU.PeakPhase)
	}
	// The last of 512 generated tokens is never fed back: 1023 cached tokens.
	want := units.Bytes(4 * 1023 * 2 * 40 * 40 * 128 * 2)
	kv, cp := component(t, r, "kv_cache").Bytes, component(t, r, "kv_cache_copy").Bytes
	if kv != cp || kv != want {
		t.Errorf("kv %v copy %v, want both %v", kv, cp, want)
	}
}

func TestWorkedExampleHFGenerate(t *testing.T) {
	// MODEL.md §12.6: HF generate, bf16, SDPA, one 4096-token prompt on
	// Llama-2-7B: 12.55 GiB weights + 2.0 GiB KV + ≈ 0.35 GiB prefill
	// transient ≈ 14.9 GiB allocated.
	r := mustEstimate(t, testModel(llama2_7b), Job{Mode: Inference, PromptLen: 4096, GenLen: 1})
	if got := r.PerGPU.AllocatedPeakBytes.GiBf(); got < 14.75 || got > 15.05 {
		t.Errorf("allocated peak %.2f GiB, want ≈ 14.9", got)
	}
	if act := component(t, r, "activations").Bytes.GiBf(); act < 0.25 || act > 0.4 {
		t.Errorf("prefill transient %.3f GiB, want ≈ 0.3", act)
	}
}

func TestEagerAttentionAddsScores(t *testing.T) {
	// MODEL.md §12.6: eager attention adds ≈ 8·a·s² = 4.3 GB for a
	// 4096-token Llama-2-7B prefill; SDPA/flash add none.
	m := testModel(llama2_7b)
	sdpa := mustEstimate(t, m, Job{Mode: Inference, PromptLen: 4096})
	eager := mustEstimate(t, m, Job{Mode: Inference, PromptLen: 4096, Attention: "eager"})
	diff := eager.PerGPU.AllocatedPeakBytes - sdpa.PerGPU.AllocatedPeakBytes
	want := units.Bytes(8 * 32 * 4096 * 4096)
	if diff < want*9/10 || diff > want*11/10 {
		t.Errorf("eager - sdpa = %v, want ≈ %v", diff, want)
	}
}

func TestInferenceHugeInputsSaturate(t *testing.T) {
	job := Job{Mode: Inference, Batch: math.MaxInt32, PromptLen: math.MaxInt32, GenLen: math.MaxInt32, AllowLong: true}
	r := mustEstimate(t, testModel(llama31_8b), job)
	p := r.PerGPU
	if p.AllocatedPeakBytes <= 0 || p.ReservedPeakBytes < p.AllocatedPeakBytes || p.DevicePeakBytes < p.ReservedPeakBytes {
		t.Errorf("huge job: peaks %v %v %v must be positive and ordered", p.AllocatedPeakBytes, p.ReservedPeakBytes, p.DevicePeakBytes)
	}
	for _, c := range p.Components {
		if c.Bytes < 0 {
			t.Errorf("negative %s = %d", c.Name, c.Bytes)
		}
	}
}

func TestInferenceBadInput(t *testing.T) {
	tests := []struct {
		name  string
		shape denseShape // llama31_8b when empty
		job   Job
		want  string
	}{
		{"beyond max positions", denseShape{}, Job{PromptLen: 131072, GenLen: 2}, "<allow_long=true>"},
		{"prompt alone beyond max positions", denseShape{}, Job{SeqLen: 131073}, "max_position_embeddings 131072"},
		{"unknown kv dtype", denseShape{}, Job{PromptLen: 8, KVCacheDtype: "int3"}, "kv cache dtype"},
		{"unknown weight dtype", denseShape{}, Job{PromptLen: 8, Dtype: "fp5"}, "<dtype"},
		// Qwen2.5-7B: 28 heads, 4 KV heads; tp 7 neither splits nor replicates them.
		{"tp not dividing kv heads", qwen25_7b, Job{PromptLen: 8, TP: 7}, "KV heads"},
		{"tp not dividing heads", denseShape{}, Job{PromptLen: 8, TP: 3}, "num_attention_heads"},
		{"negative batch", denseShape{}, Job{PromptLen: 8, Batch: -1}, "<batch"},
		{"unknown attention", denseShape{}, Job{PromptLen: 8, Attention: "ring"}, "<attn"},
		{"unknown engine", denseShape{}, Job{PromptLen: 8, InferenceEngine: "tgi"}, "<inference_engine"},
		{"pp beyond layers", denseShape{}, Job{PromptLen: 8, PP: 64}, "<pp"},
		{"bad utilization", denseShape{}, Job{PromptLen: 8, GPUMemoryUtilization: 1.5}, "<gpu_memory_utilization"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shape := tt.shape
			if shape.id == "" {
				shape = llama31_8b
			}
			tt.job.Mode = Inference
			_, err := Estimate(testModel(shape), tt.job)
			if err == nil || !strings.Contains(marked(err), tt.want) {
				t.Errorf("error = %v, want one mentioning %q", marked(err), tt.want)
			}
		})
	}
}

func TestOneGeneratedTokenHasNoDecodeStep(t *testing.T) {
	r := mustEstimate(t, testModel(llama2_13b), Job{Mode: Inference, Batch: 16, PromptLen: 512, GenLen: 1})
	if len(r.PerGPU.Phases) != 1 || r.PerGPU.PeakPhase != phasePrefill {
		t.Errorf("phases %+v, want prefill only", r.PerGPU.Phases)
	}
	r = mustEstimate(t, testModel(llama2_13b), Job{Mode: Inference, Batch: 16, PromptLen: 512, GenLen: 2})
	if len(r.PerGPU.Phases) != 2 {
		t.Errorf("phases %+v, want prefill and decode", r.PerGPU.Phases)
	}
}

func TestEncoderOnlyHasNoCache(t *testing.T) {
	d := llama2_7b
	d.id = "encoder-only"
	m := testModel(d)
	m.Text.Causal = false
	r := mustEstimate(t, m, Job{Mode: Inference, Batch: 8, PromptLen: 512})
	if kv := component(t, r, "kv_cache").Bytes; kv != 0 {
		t.Errorf("encoder-only kv_cache = %v, want 0", kv)
	}
	if _, err := Estimate(m, Job{Mode: Inference, PromptLen: 8, GenLen: 8}); err == nil || !strings.Contains(err.Error(), "encoder-only") {
		t.Errorf("generation with an encoder-only model: error %v", err)
	}
}

func TestInferenceDefaultLengthWarns(t *testing.T) {
	r := mustEstimate(t, testModel(llama31_8b), Job{Mode: Inference})
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "2048") {
		t.Errorf("warnings = %q, want the assumed 2048-token prompt named", r.Warnings)
	}
}

func BenchmarkEstimateInference(b *testing.B) {
	m := testModel(llama31_8b)
	job := Job{Mode: Inference, Batch: 8, PromptLen: 2048, GenLen: 512, Attention: "eager"}
	for b.Loop() {
		if _, err := Estimate(m, job); err != nil {
			b.Fatal(err)
		}
	}
}
