package memory

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/units"
)

func serveSGLang(t *testing.T, d denseShape, job Job) (*ServingResult, []string) {
	t.Helper()
	job.Mode, job.InferenceEngine = Serving, "sglang"
	r := mustEstimate(t, testModel(d), job)
	if r.Serving == nil || r.Serving.SGLang == nil {
		t.Fatal("SGLang serving result missing")
	}
	return r.Serving, r.Warnings
}

// TestSGLangMemFractionDefaults checks SGLang's default
// mem_fraction_static against the arithmetic of server_args.py
// _handle_gpu_memory_settings (MiB): reserve 512 + 1.5 × max(chunked
// prefill, 2048) + 2 × cuda_graph_max_bs + tp·pp/8 × 1024, at least
// 10 GiB above 60 GiB of memory.
func TestSGLangMemFractionDefaults(t *testing.T) {
	tests := []struct {
		name            string
		gpuMiB          float64
		tp              int
		chunked, bs     int
		want            float64
		wantReservedMiB float64
	}{
		// H100: 8192-token chunks, graphs up to 256: 512 + 12288 + 512 + 128.
		{"H100 TP1", 81091, 1, 8192, 256, 0.834, 13440},
		// TP8: graphs up to 512, and 8/8 GiB for the group: 512 + 12288 + 1024 + 1024.
		{"H100 TP8", 81091, 8, 8192, 512, 0.817, 14848},
		// RTX 4090: 2048-token chunks, graphs up to 24: 512 + 3072 + 48 + 128.
		{"24 GiB TP1", 24564, 1, 2048, 24, 0.847, 3760},
		// A 16 GiB card: 2048, 8: 512 + 3072 + 16 + 128 = 3728.
		{"16 GiB", 16376, 1, 2048, 8, 0.772, 3728},
		// A100-40GB TP4: 4096-token chunks, graphs up to 160: 512 + 6144 + 320 + 512.
		{"40 GiB TP4", 40448, 4, 4096, 160, 0.815, 7488},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			chunked, bs := sglangGPUDefaults(tc.gpuMiB, tc.tp)
			if chunked != tc.chunked || bs != tc.bs {
				t.Fatalf("defaults %d, %d; want %d, %d", chunked, bs, tc.chunked, tc.bs)
			}
			got := sglangMemFraction(sglangSetup{gpuMiB: tc.gpuMiB, chunked: chunked, graphBS: bs}, tc.tp, 1, nil)
			want := round3((tc.gpuMiB - tc.wantReservedMiB) / tc.gpuMiB)
			if got != tc.want || want != tc.want {
				t.Errorf("mem_fraction_static = %v (formula %v), want %v", got, want, tc.want)
			}
		})
	}
	// The 10 GiB floor: a 64 GiB card with small reserves.
	if got := sglangMemFraction(sglangSetup{gpuMiB: 65536, chunked: 2048, graphBS: 8}, 1, 1, nil); got != round3((65536.0-10240)/65536) {
		t.Errorf("floor: %v", got)
	}
}

// TestSGLangPool recomputes profile_max_num_token and init_memory_pool.
func TestSGLangPool(t *testing.T) {
	job := Job{GPUMemory: h100Total, MemFractionStatic: 0.85, MaxModelLen: 8192}
	s, _ := serveSGLang(t, llama31_8b, job)
	g := s.SGLang
	ctx := units.Bytes(500 * units.MiB) // cuda_context_mib
	free0 := h100Total - ctx
	if g.FreeAtStartBytes != free0 {
		t.Fatalf("free at start %v, want %v", g.FreeAtStartBytes, free0)
	}
	budget := units.FromFloat(float64(free0) * 0.85)
	wantTokens := int64(budget-s.WeightsBytes) / (128 * 1024)
	if g.MaxTotalNumTokens != wantTokens || s.KVTokens != wantTokens || s.KVPoolBytes != units.Bytes(wantTokens*128*1024) {
		t.Errorf("#tokens %d (pool %v), want %d", g.MaxTotalNumTokens, s.KVPoolBytes, wantTokens)
	}
	if g.KCacheBytes != g.VCacheBytes || g.KCacheBytes+g.VCacheBytes != s.KVPoolBytes {
		t.Errorf("K %v V %v of %v", g.KCacheBytes, g.VCacheBytes, s.KVPoolBytes)
	}
	// max_num_reqs = min(max(tokens / 8192 × 512, 2048), 4096); the
	// scheduler runs min(tokens / 2, that).
	reqs := min(max(int64(float64(wantTokens)/8192*512), 2048), 4096)
	if g.MaxRunningRequests != min(wantTokens/2, reqs) || g.ReqToTokenBytes != units.Bytes((reqs+1)*(8192+4)*4) {
		t.Errorf("max_running_requests %d, req table %v; want %d, %v", g.MaxRunningRequests, g.ReqToTokenBytes, min(wantTokens/2, reqs), (reqs+1)*(8192+4)*4)
	}
	if g.ReserveBytes != free0-budget || g.MaxReqLen != 8191 {
		t.Errorf("reserve %v, max_req_len %d", g.ReserveBytes, g.MaxReqLen)
	}
	if s.MaxConcurrentSeqs != min(wantTokens/8192, g.MaxRunningRequests) {
		t.Errorf("concurrency %d, want %d", s.MaxConcurrentSeqs, min(wantTokens/8192, g.MaxRunningRequests))
	}

	// Pages: the pool rounds down to whole pages.
	paged, _ := serveSGLang(t, llama31_8b, Job{GPUMemory: h100Total, MemFractionStatic: 0.85, MaxModelLen: 8192, BlockSize: 64})
	if paged.KVTokens != wantTokens/64*64 {
		t.Errorf("page 64: %d tokens, want %d", paged.KVTokens, wantTokens/64*64)
	}
	// --max-running-requests sizes the request table and caps the scheduler.
	capped, _ := serveSGLang(t, llama31_8b, Job{GPUMemory: h100Total, MemFractionStatic: 0.85, MaxModelLen: 8192, MaxNumSeqs: 64})
	if capped.SGLang.MaxRunningRequests != 64 || capped.SGLang.ReqToTokenBytes != units.Bytes(65*(8192+4)*4) || capped.MaxConcurrentSeqs > 64 {
		t.Errorf("--max-running-requests 64: %+v", capped.SGLang)
	}
}

func TestSGLangInvariants(t *testing.T) {
	base := Job{GPUMemory: h100Total, MaxModelLen: 8192}
	ref, warns := serveSGLang(t, llama31_8b, base)
	if !ref.SGLang.MemFractionDerived || ref.SGLang.MemFractionStatic != 0.834 || !ref.SGLang.VersionAssumed || ref.SGLang.Version != "0.5.6" {
		t.Errorf("defaults: %+v", ref.SGLang)
	}
	if w := strings.Join(warns, "\n"); !strings.Contains(w, "assuming 0.5.6") || !strings.Contains(w, "mem_fraction_static not given") {
		t.Errorf("warnings do not say what was assumed: %q", w)
	}
	more, _ := serveSGLang(t, llama31_8b, Job{GPUMemory: h100Total, MaxModelLen: 8192, MemFractionStatic: 0.9})
	if more.KVTokens <= ref.KVTokens {
		t.Errorf("a larger mem_fraction_static did not grow the pool: %d ≤ %d", more.KVTokens, ref.KVTokens)
	}
	fp8, _ := serveSGLang(t, llama31_8b, Job{GPUMemory: h100Total, MaxModelLen: 8192, KVCacheDtype: "fp8"})
	if fp8.KVBytesPerToken*2 != ref.KVBytesPerToken || fp8.KVTokens < 2*ref.KVTokens-2 {
		t.Errorf("fp8 KV: %d B/token, %d tokens; bf16 %d, %d", fp8.KVBytesPerToken, fp8.KVTokens, ref.KVBytesPerToken, ref.KVTokens)
	}
	tp2, _ := serveSGLang(t, llama31_8b, Job{GPUMemory: h100Total, MaxModelLen: 8192, TP: 2})
	if tp2.KVBytesPerToken*2 != ref.KVBytesPerToken || tp2.KVTokens <= ref.KVTokens {
		t.Errorf("tp2: %d B/token, %d tokens", tp2.KVBytesPerToken, tp2.KVTokens)
	}
	viaEngine := mustEstimate(t, testModel(llama31_8b), Job{Mode: Serving, Engine: "sglang", GPUMemory: h100Total, MaxModelLen: 8192})
	if viaEngine.Serving.SGLang == nil || viaEngine.Serving.KVTokens != ref.KVTokens {
		t.Error("--engine sglang in serving mode does not select SGLang")
	}
}

func TestSGLangWarnings(t *testing.T) {
	// Weights beyond the budget: SGLang's own error, quoted.
	_, w := serveSGLang(t, llama31_8b, Job{GPUMemory: 16 * units.GiB, MemFractionStatic: 0.5, MaxModelLen: 8192})
	if !strings.Contains(strings.Join(w, "\n"), "Not enough memory. Please try to increase --mem-fraction-static.") {
		t.Errorf("no refusal: %q", w)
	}
	// A pool shorter than the context: SGLang caps requests.
	s, w := serveSGLang(t, llama31_8b, Job{GPUMemory: 20 * units.GiB, MemFractionStatic: 0.9, MaxModelLen: 131072})
	if s.MaxModelLenFits || !strings.Contains(strings.Join(w, "\n"), "refuses requests longer than") {
		t.Errorf("pool %d tokens for context 131072: fits %v, warnings %q", s.KVTokens, s.MaxModelLenFits, w)
	}
	// A reserve too small for graphs and prefill.
	_, w = serveSGLang(t, llama31_8b, Job{GPUMemory: h100Total, MemFractionStatic: 0.999, MaxModelLen: 8192})
	if !strings.Contains(strings.Join(w, "\n"), "SGLang may run out of memory") {
		t.Errorf("no warning for a 0.1 %% reserve: %q", w)
	}
}

func TestSGLangErrors(t *testing.T) {
	m := testModel(llama31_8b)
	tests := []struct {
		name string
		job  Job
		want string
	}{
		{"vLLM's utilization", Job{Mode: Serving, InferenceEngine: "sglang", GPUMemory: h100Total, GPUMemoryUtilization: 0.9}, "gpu_memory_utilization is vLLM's budget; SGLang's is mem_fraction_static"},
		{"SGLang's fraction for vLLM", Job{Mode: Serving, GPUMemory: h100Total, MemFractionStatic: 0.8}, "mem_fraction_static is SGLang's setting"},
		{"fraction out of range", Job{Mode: Serving, InferenceEngine: "sglang", GPUMemory: h100Total, MemFractionStatic: 1.5}, "mem_fraction_static=1.5: want a fraction in (0, 1]"},
		{"inference mode", Job{Mode: Inference, InferenceEngine: "sglang"}, "SGLang is estimated as a server; pass mode=serving"},
		{"unknown engine", Job{Mode: Serving, InferenceEngine: "trtllm", GPUMemory: h100Total}, "want hf, vllm or sglang"},
		{"old release", Job{Mode: Serving, InferenceEngine: "sglang", GPUMemory: h100Total, Stack: Stack{"sglang": "0.4.6"}}, "sglang 0.4.6 is older than 0.5.4"},
		{"negative graph batch", Job{Mode: Serving, InferenceEngine: "sglang", GPUMemory: h100Total, CUDAGraphMaxBS: -1}, "cuda_graph_max_bs=-1"},
		{"context beyond the model", Job{Mode: Serving, InferenceEngine: "sglang", GPUMemory: h100Total, MaxModelLen: 1 << 20}, "max_model_len=1048576 (SGLang's context length) exceeds max_position_embeddings"},
		{"no GPU", Job{Mode: Serving, InferenceEngine: "sglang"}, "serving needs the GPU's total memory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Estimate(m, tc.job); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// A release newer than the one the rules were read at is estimated
	// with a warning that says so.
	r := mustEstimate(t, m, Job{Mode: Serving, InferenceEngine: "sglang", GPUMemory: h100Total, MaxModelLen: 8192, Stack: Stack{"sglang": "0.5.10"}})
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "SGLang 0.5.10 is newer than 0.5.6") || r.Serving.SGLang.VersionAssumed {
		t.Errorf("newer release: %q", r.Warnings)
	}
}

// TestSGLangRefusesHybrid: SGLang's mamba-state pool is not modelled, so
// a model with recurrent layers is refused rather than counted as if its
// state took no room.
func TestSGLangRefusesHybrid(t *testing.T) {
	m := testModel(llama31_8b)
	m.Text.LayerTypes[1].State = "gated_deltanet"
	_, err := Estimate(m, Job{Mode: Serving, InferenceEngine: "sglang", GPUMemory: h100Total, MaxModelLen: 8192})
	if err == nil || !strings.Contains(err.Error(), "whose state SGLang keeps in a pool of its own") {
		t.Errorf("hybrid model with SGLang: %v", err)
	}
}
