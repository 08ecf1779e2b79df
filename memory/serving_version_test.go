package memory

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/units"
)

// TestVLLMCaptureSizes checks the count of default capture sizes against
// vllm/config/compilation.py's list: 1, 2, 4, 8..248 by 8, 256.. by 16.
func TestVLLMCaptureSizes(t *testing.T) {
	for limit, want := range map[int]int{0: 0, 1: 1, 4: 3, 8: 4, 255: 34, 256: 35, 512: 51} {
		if got := vllmCaptureSizes(limit); got != want {
			t.Errorf("vllmCaptureSizes(%d) = %d, want %d", limit, got, want)
		}
	}
}

// TestVLLMCUDAGraphsInBudget checks rule vllm-cudagraph-outside-budget:
// from vLLM 0.21 the CUDA-graph estimate comes out of the pool, before it
// it does not, and --enforce-eager captures none.
func TestVLLMCUDAGraphsInBudget(t *testing.T) {
	base := Job{GPUMemory: h100Total, GPUMemoryUtilization: 0.95, MaxModelLen: 8192, GPU: "H100-SXM"}
	at := func(ver string, eager bool) *ServingResult {
		j := base
		j.Stack, j.EnforceEager = Stack{"vllm": ver}, eager
		return serve(t, llama31_8b, j)
	}
	old, cur, eager := at("0.20.2", false), at("0.21.0", false), at("0.21.0", true)
	if old.CUDAGraphsInBudget || old.CUDAGraphBytes != 0 {
		t.Errorf("vLLM 0.20: graphs in budget %v, %v; want none", old.CUDAGraphsInBudget, old.CUDAGraphBytes)
	}
	if !cur.CUDAGraphsInBudget || cur.CUDAGraphBytes <= 0 {
		t.Fatalf("vLLM 0.21: graphs in budget %v, %v; want an estimate", cur.CUDAGraphsInBudget, cur.CUDAGraphBytes)
	}
	// 1024 sequences: graphs of 51 sizes up to 512, so 50 increments of
	// at least 1 MiB past the shared pool.
	if cur.CUDAGraphBytes < 50*units.MiB {
		t.Errorf("graph estimate %v below the 50 × 1 MiB floor", cur.CUDAGraphBytes)
	}
	if d := old.KVPoolBytes - cur.KVPoolBytes; d != cur.CUDAGraphBytes {
		t.Errorf("pool shrinks by %v from 0.20 to 0.21, want the graph estimate %v", d, cur.CUDAGraphBytes)
	}
	if eager.KVPoolBytes != old.KVPoolBytes || eager.CUDAGraphBytes != 0 {
		t.Errorf("enforce_eager on 0.21: pool %v, graphs %v; want the 0.20 pool %v and no graphs", eager.KVPoolBytes, eager.CUDAGraphBytes, old.KVPoolBytes)
	}
}

// TestVLLMMLALayoutByVersion checks rule vllm-mla-full-kv on
// DeepSeek-V2-Lite (27 layers, 16 heads, kv_lora_rank 512, rope 64):
// vLLM before 0.7.1 cached 2 × 16 heads × 256 × 2 B per layer, the layout
// whose 442,368 B per token the PR #10927 log shows (35.42 GiB = 5373
// blocks of 16); from 0.7.1 the 576-wide latent, 27 × 576 × 2 B.
func TestVLLMMLALayoutByVersion(t *testing.T) {
	m := catalogModel(t, "deepseek-ai/DeepSeek-V2-Lite")
	job := Job{Mode: Serving, GPUMemory: h100Total, MaxModelLen: 8192, GPU: "H100-SXM", Dtype: "bf16"}
	per := map[string]int64{"0.7.0": 27 * 2 * 16 * 256 * 2, "0.7.1": 27 * 576 * 2}
	pools := map[string]*ServingResult{}
	for ver, want := range per {
		j := job
		j.Stack = Stack{"vllm": ver}
		s := estimateOK(t, m, j).Serving
		if s.KVBytesPerToken != want {
			t.Errorf("vLLM %s: %d B per token, want %d", ver, s.KVBytesPerToken, want)
		}
		pools[ver] = s
	}
	// The same pool holds 442,368 / 31,104 ≈ 14.2 times fewer tokens
	// before MLA: the 871k-against-63k gap of the issue.
	if a, b := pools["0.7.0"], pools["0.7.1"]; a.KVPoolBytes == b.KVPoolBytes && !within(float64(b.KVTokens)/float64(a.KVTokens), 14.22, 0.01) {
		t.Errorf("tokens %d before MLA vs %d after, want a ratio of 14.2", a.KVTokens, b.KVTokens)
	}
}

// TestVLLMMessages checks vLLM's own words against the arithmetic of
// kv_cache_utils.py (V1) and worker.py (V0) on the RTX 4090 TP=2 case of
// vLLM issue #13061: max_model_len 131072 does not fit.
func TestVLLMMessages(t *testing.T) {
	q14 := denseShape{id: "Qwen/Qwen2.5-14B", layers: 48, hidden: 5120, heads: 40, kvHeads: 8, ffn: 13824, vocab: 152064, maxPos: 131072}
	job := Job{GPUMemory: 2357 * units.GiB / 100, GPUMemoryUtilization: 0.98, TP: 2, MaxModelLen: 131072, Stack: Stack{"vllm": "0.11.0"}}
	s := serve(t, q14, job)
	if s.MaxModelLenFits {
		t.Fatalf("131072 tokens reported to fit a %v pool", s.KVPoolBytes)
	}
	// Full attention, 16-token blocks: a request of n tokens needs ⌈n/16⌉
	// blocks of 16 × 96 KiB (4 of the 8 KV heads per GPU × 128 × K and V ×
	// 2 B × 48 layers), 12 GiB for 131072 tokens, so the longest that fits
	// is ⌊pool / block⌋ × 16.
	block := int64(16 * s.KVBytesPerToken)
	if s.KVBytesPerToken != 48*2*4*128*2 {
		t.Fatalf("KV per token %d, want %d", s.KVBytesPerToken, 48*2*4*128*2)
	}
	if s.MaxModelLenBlocks != 131072/16 || s.MaxModelLenKVBytes != units.Bytes(131072/16*block) {
		t.Errorf("max_model_len needs %d blocks (%v), want %d (%v)", s.MaxModelLenBlocks, s.MaxModelLenKVBytes, 131072/16, units.Bytes(131072/16*block))
	}
	if want := int(int64(s.KVPoolBytes)/block) * 16; s.EstimatedMaxModelLen != want {
		t.Errorf("estimated maximum model length %d, want %d", s.EstimatedMaxModelLen, want)
	}
	want := "To serve at least one request with the models's max seq len (131072), (12.00 GiB KV cache is needed, which is larger than the available KV cache memory ("
	if !strings.Contains(s.EngineMessage, want) || !strings.Contains(s.EngineMessage, "the estimated maximum model length is ") {
		t.Errorf("V1 message %q, want vLLM's words %q…", s.EngineMessage, want)
	}
	job.Stack = Stack{"vllm": "0.7.3"}
	v0 := serve(t, q14, job)
	want0 := "The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (" + itoa(v0.KVTokens) + ")"
	if !strings.Contains(v0.EngineMessage, want0) {
		t.Errorf("V0 message %q, want %q", v0.EngineMessage, want0)
	}
	if got := strings.Join(v0.Answer, "\n"); !strings.Contains(got, "would need 8,192 blocks") || !strings.Contains(got, "V0 engine") {
		t.Errorf("answer %q does not say the request would need 8,192 blocks on the V0 engine", got)
	}
}

// TestVLLMConcurrencyWords checks the log line of a pool that fits:
// V1 divides the blocks by a request's blocks, V0 the tokens by
// max_model_len, and the answer names the version and what max_num_seqs
// is.
func TestVLLMConcurrencyWords(t *testing.T) {
	job := Job{GPUMemory: h100Total, GPUMemoryUtilization: 0.95, MaxModelLen: 8192, GPU: "H100-SXM", Stack: Stack{"vllm": "0.19.0"}}
	s := serve(t, llama31_8b, job)
	if want := float64(s.KVBlocks) / 512; s.VLLMMaxConcurrency != want {
		t.Errorf("V1 concurrency %v, want %v", s.VLLMMaxConcurrency, want)
	}
	if !strings.Contains(s.EngineMessage, "GPU KV cache size: "+commas(s.KVTokens)+" tokens") {
		t.Errorf("message %q lacks the KV cache size line", s.EngineMessage)
	}
	ans := strings.Join(s.Answer, "\n")
	for _, w := range []string{"vLLM 0.19.0, V1 engine", "max_num_seqs 1024 is the scheduler's cap", "max_model_len fits"} {
		if !strings.Contains(ans, w) {
			t.Errorf("answer lacks %q:\n%s", w, ans)
		}
	}
	if s.VLLMVersion != "0.19.0" || s.VLLMVersionAssumed {
		t.Errorf("version %q assumed %v, want the stated 0.19.0", s.VLLMVersion, s.VLLMVersionAssumed)
	}
	job.Stack = nil
	d := serve(t, llama31_8b, job)
	if !d.VLLMVersionAssumed || d.VLLMVersion != defaultVersion(t, "vllm") || !strings.Contains(d.Answer[0], "assumed") {
		t.Errorf("default: version %q assumed %v, answer %q; want the newest release, said to be assumed", d.VLLMVersion, d.VLLMVersionAssumed, d.Answer[0])
	}
	job.Stack = Stack{"vllm": "0.7.3"}
	v0 := serve(t, llama31_8b, job)
	if want := float64(v0.KVTokens) / 8192; v0.VLLMMaxConcurrency != want {
		t.Errorf("V0 concurrency %v, want %v", v0.VLLMMaxConcurrency, want)
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 476640: "476,640", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q, want %q", n, got, want)
		}
	}
}

func defaultVersion(t *testing.T, pkg string) string {
	t.Helper()
	p, ok := stackPackage(pkg)
	if !ok {
		t.Fatalf("no package %s", pkg)
	}
	return p.Default
}

func itoa(n int64) string { return strings.TrimSpace(strings.ReplaceAll(commas(n), ",", "")) }

// TestVLLMNonTorchTP checks that a tensor-parallel group adds the
// measured vllm_non_torch_tp_mib to the 0.25 GiB of one GPU, that a
// pipeline stage alone adds nothing (the PP 3 log: 0.07 GiB) and that the
// constant can be overridden.
func TestVLLMNonTorchTP(t *testing.T) {
	base := Job{GPUMemory: h100Total, GPUMemoryUtilization: 0.95, MaxModelLen: 8192, GPU: "H100-SXM", Stack: Stack{"vllm": "0.19.0"}}
	at := func(tp, pp int, c map[string]float64) *ServingResult {
		j := base
		j.TP, j.PP, j.Constants = tp, pp, c
		return serve(t, llama31_8b, j)
	}
	if got := at(1, 1, nil).NonTorchBytes; got != vllmNonTorch {
		t.Errorf("TP 1: non-torch %v, want %v", got, vllmNonTorch)
	}
	if got := at(1, 2, nil).NonTorchBytes; got != vllmNonTorch {
		t.Errorf("PP 2: non-torch %v, want %v", got, vllmNonTorch)
	}
	if got, want := at(2, 1, nil).NonTorchBytes, vllmNonTorch+1864*units.MiB; got != want {
		t.Errorf("TP 2: non-torch %v, want %v", got, want)
	}
	if got := at(2, 1, map[string]float64{"vllm_non_torch_tp_mib": 0}).NonTorchBytes; got != vllmNonTorch {
		t.Errorf("TP 2 with vllm_non_torch_tp_mib=0: non-torch %v, want %v", got, vllmNonTorch)
	}
}

// TestVLLMNonTorchPCIe checks that a PCIe board's TP group adds nothing
// (the RTX 4090 TP 2 log of vLLM issue #13061 shows 0.25 GiB).
func TestVLLMNonTorchPCIe(t *testing.T) {
	j := Job{GPUMemory: 2364 * units.GiB / 100, TP: 2, MaxModelLen: 8192, GPU: "RTX-4090", GPUFormFactor: "PCIe"}
	if got := serve(t, llama31_8b, j).NonTorchBytes; got != vllmNonTorch {
		t.Errorf("PCIe TP 2: non-torch %v, want %v", got, vllmNonTorch)
	}
}
