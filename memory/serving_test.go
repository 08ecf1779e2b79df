package memory

import (
	"math"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/units"
)

// h100Total is the total memory vLLM v0.19 reports for an H100-80GB (the
// catalog's CUDA total of the H100-SXM).
const h100Total = 7919 * units.GiB / 100

func serve(t *testing.T, d denseShape, job Job) *ServingResult {
	t.Helper()
	job.Mode = Serving
	r := mustEstimate(t, testModel(d), job)
	if r.Serving == nil {
		t.Fatal("serving result missing")
	}
	return r.Serving
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

func TestServingLlama31MatchesVLLMProfile(t *testing.T) {
	// vLLM v0.19 on H100-80GB, gpu_memory_utilization 0.95, max_model_len
	// 8192: weights 14.99 GiB, activation peak 1.89 GiB, non-torch 0.25 GiB,
	// KV pool 58.11 GiB = 476k tokens (dev measurement vllm019-llama31-8b-tp1).
	s := serve(t, llama31_8b, Job{GPUMemory: h100Total, GPUMemoryUtilization: 0.95, MaxModelLen: 8192, GPU: "H100-SXM", GPUComputeCapability: 90})
	checks := []struct {
		name      string
		got, want float64
	}{
		{"weights GiB", s.WeightsBytes.GiBf(), 14.99},
		{"activation GiB", s.ActivationPeakBytes.GiBf(), 1.89},
		{"kv pool GiB", s.KVPoolBytes.GiBf(), 58.11},
		{"kv tokens", float64(s.KVTokens), 476_000},
	}
	for _, c := range checks {
		if !within(c.got, c.want, 0.03) {
			t.Errorf("%s = %.3f, want %.3f ± 3%%", c.name, c.got, c.want)
		}
	}
	if s.KVBytesPerToken != 128*1024 {
		t.Errorf("KV per token = %d, want 131072", s.KVBytesPerToken)
	}
	if !s.MaxModelLenFits || s.MaxConcurrentSeqs != s.KVBlocks/(8192/16) {
		t.Errorf("fits %v, concurrency %d; want true and %d", s.MaxModelLenFits, s.MaxConcurrentSeqs, s.KVBlocks/(8192/16))
	}
}

func TestServingInvariants(t *testing.T) {
	base := Job{GPUMemory: h100Total, MaxModelLen: 8192}
	ref := serve(t, llama31_8b, base)
	t.Run("fp8 kv holds twice the tokens", func(t *testing.T) {
		j := base
		j.KVCacheDtype = "fp8"
		s := serve(t, llama31_8b, j)
		if 2*s.KVBytesPerToken != ref.KVBytesPerToken || s.KVTokens < 2*ref.KVTokens-16 {
			t.Errorf("fp8: %d B/token, %d tokens; bf16: %d, %d", s.KVBytesPerToken, s.KVTokens, ref.KVBytesPerToken, ref.KVTokens)
		}
	})
	t.Run("tp 2 halves per-GPU weights and per-token bytes", func(t *testing.T) {
		j := base
		j.TP = 2
		s := serve(t, llama31_8b, j)
		if 2*s.KVBytesPerToken != ref.KVBytesPerToken {
			t.Errorf("tp2 per token %d, want %d", s.KVBytesPerToken, ref.KVBytesPerToken/2)
		}
		if !within(float64(s.WeightsBytes), float64(ref.WeightsBytes)/2, 0.01) {
			t.Errorf("tp2 weights %v, want ≈ %v", s.WeightsBytes, ref.WeightsBytes/2)
		}
	})
	t.Run("higher utilization grows the pool by the difference", func(t *testing.T) {
		j := base
		j.GPUMemoryUtilization = 0.95
		s := serve(t, llama31_8b, j)
		want := units.FromFloat(0.05 * float64(h100Total))
		if d := s.KVPoolBytes - ref.KVPoolBytes; d < want-1 || d > want+1 {
			t.Errorf("pool grew by %v, want %v", d, want)
		}
	})
	t.Run("max model len that does not fit", func(t *testing.T) {
		j := Job{GPUMemory: 17 * units.GiB, MaxModelLen: 131072}
		r := mustEstimate(t, testModel(llama31_8b), Job{Mode: Serving, GPUMemory: j.GPUMemory, MaxModelLen: j.MaxModelLen})
		if r.Serving.MaxModelLenFits {
			t.Errorf("131072 tokens (16 GiB of KV) reported to fit a %v pool", r.Serving.KVPoolBytes)
		}
		if len(r.Warnings) == 0 {
			t.Error("no warning for a max-model-len that does not fit")
		}
	})
	t.Run("weights larger than the GPU", func(t *testing.T) {
		s := serve(t, llama31_8b, Job{GPUMemory: 8 * units.GiB, MaxModelLen: 4096})
		if s.KVPoolBytes != 0 || s.KVTokens != 0 || s.MaxModelLenFits {
			t.Errorf("8 GiB GPU: pool %v, tokens %d, fits %v", s.KVPoolBytes, s.KVTokens, s.MaxModelLenFits)
		}
	})
	t.Run("sliding window caps per-sequence pages", func(t *testing.T) {
		// Windowed layers keep min(W − 1 + max_num_batched_tokens, n) tokens.
		long := serve(t, gemma2_9b, Job{GPUMemory: h100Total, MaxModelLen: 8192, SeqLen: 8192, MaxNumBatchedTokens: 256})
		short := serve(t, gemma2_9b, Job{GPUMemory: h100Total, MaxModelLen: 8192, SeqLen: 4096, MaxNumBatchedTokens: 256})
		if long.MaxConcurrentSeqs*2 <= short.MaxConcurrentSeqs {
			t.Errorf("with half the layers windowed, doubling the length must less than halve concurrency: %d vs %d", long.MaxConcurrentSeqs, short.MaxConcurrentSeqs)
		}
	})
}

func TestServingBadInput(t *testing.T) {
	tests := []struct {
		name string
		job  Job
		want string
	}{
		{"no gpu", Job{MaxModelLen: 4096}, "<gpu_memory_bytes>"},
		{"unknown gpu", Job{GPU: "Voodoo5", MaxModelLen: 4096}, "<gpu=\"Voodoo5\">"},
		{"catalog name without its memory", Job{GPU: "MI300X", MaxModelLen: 4096}, "gpu_memory_bytes"},
		{"max model len beyond positions", Job{GPUMemory: h100Total, MaxModelLen: 1 << 20}, "<allow_long=true>"},
		{"tp not dividing heads", Job{GPUMemory: h100Total, MaxModelLen: 4096, TP: 5}, "<tp=5>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.job.Mode = Serving
			_, err := Estimate(testModel(llama31_8b), tt.job)
			if err == nil || !strings.Contains(marked(err), tt.want) {
				t.Errorf("error = %v, want one mentioning %q", marked(err), tt.want)
			}
		})
	}
}

func TestServingPlan(t *testing.T) {
	rows, err := ServingPlan(testModel(llama31_8b), Job{GPU: "H100-SXM", GPUComputeCapability: 90, GPUMemory: h100Total, MaxModelLen: 131072}, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 10 {
		t.Fatalf("%d rows, want 10 layouts up to 8 GPUs", len(rows))
	}
	if one := rows[0].Serving; one == nil || !one.MaxModelLenFits {
		t.Fatalf("one H100 holds one 128k sequence of Llama-3.1-8B (16 GiB of KV): %+v", rows[0])
	}
	var prev int64
	for _, r := range rows {
		if r.Error != "" || r.Serving == nil {
			t.Errorf("tp %d pp %d: %s", r.TP, r.PP, r.Error)
			continue
		}
		if r.TP == r.GPUs && r.Serving.KVTokens < prev {
			t.Errorf("tp %d holds %d tokens, fewer than the smaller layout's %d", r.TP, r.Serving.KVTokens, prev)
		}
		if r.TP == r.GPUs {
			prev = r.Serving.KVTokens
		}
	}
	if _, err := ServingPlan(testModel(llama31_8b), Job{MaxModelLen: 4096}, 8); err == nil || !strings.Contains(marked(err), "<gpu") {
		t.Errorf("no GPU: error %v", err)
	}
}

func TestServingEncoderOnly(t *testing.T) {
	d := llama2_7b
	d.id = "encoder"
	m := testModel(d)
	m.Text.Causal = false
	r := mustEstimate(t, m, Job{Mode: Serving, GPUMemory: h100Total, MaxModelLen: 512})
	s := r.Serving
	if s.KVBytesPerToken != 0 || s.KVPoolBytes != 0 || s.KVTokens != 0 || !s.MaxModelLenFits {
		t.Errorf("encoder-only serving: %+v; want no cache and fits", *s)
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "encoder-only") {
		t.Errorf("warnings %q", r.Warnings)
	}
}

func TestServingV0Sampler(t *testing.T) {
	// vLLM issue #13061 (V0 engine, RTX 4090, TP 2, Qwen2.5-14B shapes):
	// activation peak 0.19 GiB with max_num_seqs 256 and 2048 batched tokens.
	q14 := denseShape{id: "Qwen/Qwen2.5-14B", layers: 48, hidden: 5120, heads: 40, kvHeads: 8, ffn: 13824, vocab: 152064, maxPos: 131072}
	job := Job{GPUMemory: 24 * units.GiB, GPUMemoryUtilization: 0.98, TP: 2, MaxModelLen: 131072}
	v1 := serve(t, q14, job)
	job.Software = []string{"vllm<0.8"}
	v0 := serve(t, q14, job)
	if got := v0.ActivationPeakBytes.GiBf(); !within(got, 0.19, 0.1) {
		t.Errorf("V0 activation peak %.3f GiB, want ≈ 0.19", got)
	}
	if v1.ActivationPeakBytes <= v0.ActivationPeakBytes {
		t.Errorf("V1 sampler warm-up %v not above V0's %v", v1.ActivationPeakBytes, v0.ActivationPeakBytes)
	}
}

func TestServingBatchDefaultsFollowTheGPU(t *testing.T) {
	// vLLM's get_batch_defaults: 8192 tokens and 1024 sequences on GPUs
	// of at least 70 GiB whose name lacks "a100", 2048 and 256 otherwise.
	tests := []struct {
		job           Job
		batched, seqs int
	}{
		{Job{GPU: "H100-SXM", GPUMemory: h100Total}, 8192, 1024},
		{Job{GPU: "A100-SXM-80GB", GPUMemory: 7915 * units.GiB / 100}, 2048, 256},
		{Job{GPU: "MI300X", GPUMemory: 192 * units.GiB}, 8192, 1024},
		{Job{GPU: "L40S", GPUMemory: 45 * units.GiB}, 2048, 256},
		{Job{GPUMemory: 80 * units.GiB}, 8192, 1024},
	}
	for _, tt := range tests {
		tt.job.MaxModelLen = 4096
		s := serve(t, llama31_8b, tt.job)
		if s.MaxNumBatchedTokens != tt.batched || s.MaxNumSeqs != tt.seqs {
			t.Errorf("%q with %v: %d tokens, %d sequences; want %d, %d", tt.job.GPU, tt.job.GPUMemory, s.MaxNumBatchedTokens, s.MaxNumSeqs, tt.batched, tt.seqs)
		}
	}
}
