package memory

import (
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// The serving answer in vLLM's own words. vLLM checks, once the pool is
// sized, that one request of max_model_len tokens fits it, and logs the
// pool's size and how many such requests it holds:
//
//   - V1 (vllm-project/vllm@001cabc1be16a59a70d720ed61a13b678c060a18:
//     vllm/v1/core/kv_cache_utils.py): _check_enough_kv_cache_memory
//     raises "No available memory for the cache blocks" for an empty pool
//     and "To serve at least one request with the models's max seq len
//     (L), (X GiB KV cache is needed, which is larger than the available
//     KV cache memory (Y GiB). Based on the available memory, the
//     estimated maximum model length is Z." when the request needs more
//     than the pool, X being max_memory_usage_bytes (whole blocks per
//     layer) and Z the longest length that fits, found by binary search;
//     _report_kv_cache_config logs "GPU KV cache size: N tokens" and
//     "Maximum concurrency for L tokens per request: C x", C = num_blocks
//     / cdiv(request bytes, block bytes).
//   - V0 (before 0.8, vllm/worker/worker.py raise_if_cache_size_invalid):
//     "The model's max seq len (L) is larger than the maximum number of
//     tokens that can be stored in KV cache (N)." with N = num_gpu_blocks ×
//     block_size, and the executor logs "# GPU blocks: B" and "Maximum
//     concurrency for L tokens per request: C x" with C = N / L (the PR
//     #10927 log: 5373 × 16 / 8192 = 10.49x).
const (
	vllmTryUtil   = "Try increasing `gpu_memory_utilization` when initializing the engine."
	vllmTryUtilML = "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
)

// engineWords fills the figures and sentences of sr that say what vLLM
// does with the pool of stage st.
func (in *inferenceInputs) engineWords(setup servingSetup, st servingStage, sr *ServingResult) {
	sr.VLLMVersion, sr.VLLMVersionAssumed = setup.version, setup.assumed
	v0 := setup.rules.has(ruleVLLMV0Sampler)
	if in.encoderOnly {
		sr.Answer = in.servingAnswer(setup, st, sr, v0)
		return
	}
	need := func(n int64) units.Bytes { return st.seqBytes(n, setup, in.crossTokens) }
	blocksFor := func(n int64) int64 {
		if st.hybrid != nil {
			return st.hybrid.seqBlocks(n)
		}
		page := units.MulInt(st.kv.perToken(), int64(setup.blockSize))
		if page <= 0 {
			return 0
		}
		return ceilDiv(int64(need(n)), page)
	}
	L := int64(setup.maxModelLen)
	sr.MaxModelLenKVBytes, sr.MaxModelLenBlocks = need(L), blocksFor(L)
	switch {
	case v0 && L > 0:
		sr.VLLMMaxConcurrency = float64(sr.KVTokens) / float64(L)
	case sr.MaxModelLenBlocks > 0:
		sr.VLLMMaxConcurrency = float64(st.blocks) / float64(sr.MaxModelLenBlocks)
	}
	if !sr.MaxModelLenFits && st.pool > 0 {
		sr.EstimatedMaxModelLen = longestFitting(L, st.pool, need)
	}
	sr.EngineMessage = vllmMessage(sr, st.pool, v0)
	sr.Answer = in.servingAnswer(setup, st, sr, v0)
}

// longestFitting is the longest length n ≤ limit whose request fits pool
// (0 if not even one token does), by binary search as vLLM's
// estimate_max_model_len does.
func longestFitting(limit int64, pool units.Bytes, need func(int64) units.Bytes) int {
	if limit < 1 || need(1) > pool {
		return 0
	}
	lo, hi, best := int64(1), limit, int64(1)
	for lo <= hi {
		mid := lo + (hi-lo)/2
		if need(mid) <= pool {
			best, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	return int(best)
}

// vllmMessage is vLLM's startup message for the pool: the error when it
// refuses to start, else its capacity log lines.
func vllmMessage(sr *ServingResult, pool units.Bytes, v0 bool) string {
	gib := func(b units.Bytes) string { return fmt.Sprintf("%.2f", b.GiBf()) }
	switch {
	case pool <= 0:
		return "ValueError: No available memory for the cache blocks. " + vllmTryUtil
	case !sr.MaxModelLenFits && v0:
		return fmt.Sprintf("ValueError: The model's max seq len (%d) is larger than the maximum number of tokens that can be stored in KV cache (%d). %s",
			sr.MaxModelLen, sr.KVTokens, vllmTryUtilML)
	case !sr.MaxModelLenFits:
		est := ""
		if sr.EstimatedMaxModelLen > 0 {
			est = fmt.Sprintf("Based on the available memory, the estimated maximum model length is %d. ", sr.EstimatedMaxModelLen)
		}
		return fmt.Sprintf("ValueError: To serve at least one request with the models's max seq len (%d), (%s GiB KV cache is needed, which is larger than the available KV cache memory (%s GiB). %s%s",
			sr.MaxModelLen, gib(sr.MaxModelLenKVBytes), gib(pool), est, vllmTryUtilML)
	case v0:
		return fmt.Sprintf("# GPU blocks: %d\nMaximum concurrency for %d tokens per request: %.2fx", sr.KVBlocks, sr.MaxModelLen, sr.VLLMMaxConcurrency)
	}
	return fmt.Sprintf("Available KV cache memory: %s GiB\nGPU KV cache size: %s tokens\nMaximum concurrency for %s tokens per request: %.2fx",
		gib(pool), commas(sr.KVTokens), commas(int64(sr.MaxModelLen)), sr.VLLMMaxConcurrency)
}

// servingAnswer says in plain words what the deployment holds.
func (in *inferenceInputs) servingAnswer(setup servingSetup, st servingStage, sr *ServingResult, v0 bool) []string {
	ver := "vLLM " + setup.version
	if setup.assumed {
		ver += " (assumed: the newest release gpumem knows; state yours with --vllm-version)"
	}
	engine := "V1 engine"
	if v0 {
		engine = "V0 engine"
	}
	budget := fmt.Sprintf("%s, %s: vLLM may use %.2f × %s = %s; weights take %s, the profiled activation peak %s, memory outside torch %s",
		ver, engine, setup.util, units.FormatIEC(setup.total), units.FormatIEC(sr.RequestedBytes),
		units.FormatIEC(sr.WeightsBytes), units.FormatIEC(sr.ActivationPeakBytes), units.FormatIEC(sr.NonTorchBytes))
	if sr.CUDAGraphsInBudget {
		budget += fmt.Sprintf(", CUDA graphs %s (inside the budget from vLLM 0.21)", units.FormatIEC(sr.CUDAGraphBytes))
	}
	out := []string{budget + "."}
	if in.encoderOnly {
		return append(out, "An encoder-only model keeps no KV cache: concurrency is bounded by max_num_seqs and the activation budget.")
	}
	if st.pool <= 0 {
		return append(out, "Nothing is left for the KV cache: vLLM refuses to start with the message below.")
	}
	out = append(out, fmt.Sprintf("The KV cache pool is %s: %s blocks of %d tokens, %s tokens in all.",
		units.FormatIEC(st.pool), commas(sr.KVBlocks), sr.BlockSize, commas(sr.KVTokens)))
	conc := fmt.Sprintf("At %s tokens per sequence, %s sequences fit in the pool at once", commas(int64(sr.SeqLen)), commas(sr.MaxConcurrentSeqs))
	switch {
	case sr.MaxConcurrentSeqs > int64(sr.MaxNumSeqs):
		conc += fmt.Sprintf("; max_num_seqs %d (the scheduler's cap on running sequences) lets %d run together", sr.MaxNumSeqs, sr.MaxNumSeqs)
	default:
		conc += fmt.Sprintf("; max_num_seqs %d is the scheduler's cap on running sequences, not what the pool holds", sr.MaxNumSeqs)
	}
	out = append(out, conc+".")
	need := fmt.Sprintf("one request of max_model_len %s tokens needs %s blocks (%s)", commas(int64(sr.MaxModelLen)), commas(sr.MaxModelLenBlocks), units.FormatIEC(sr.MaxModelLenKVBytes))
	if sr.MaxModelLenFits {
		return append(out, fmt.Sprintf("max_model_len fits: %s of the %s in the pool; vLLM would log \"Maximum concurrency for %s tokens per request: %.2fx\".",
			need, commas(sr.KVBlocks), commas(int64(sr.MaxModelLen)), sr.VLLMMaxConcurrency))
	}
	longest := ""
	if sr.EstimatedMaxModelLen > 0 {
		longest = fmt.Sprintf(" (the longest request that fits has %s tokens)", commas(int64(sr.EstimatedMaxModelLen)))
	}
	return append(out, fmt.Sprintf("max_model_len does NOT fit: %s, the pool has %s%s; vLLM refuses to start with the message below.",
		strings.Replace(need, "needs", "would need", 1), commas(sr.KVBlocks)+" blocks", longest))
}

// commas writes n with thousands separators, as vLLM's logs do.
func commas(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
