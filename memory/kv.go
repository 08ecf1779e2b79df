package memory

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// KV cache engines: how the cache of an attention layer is laid out.
const (
	engineHF     = "hf"
	engineVLLM   = "vllm"
	engineSGLang = "sglang" // serving only; its cache is laid out as vLLM's
)

// kvSpec is the key/value cache of a range of layers on one GPU, as bytes
// per cached token summed over the layers of each attention kind.
type kvSpec struct {
	full    int64 // full-attention layers: every token of the sequence
	sliding int64 // sliding-window layers: the last window tokens
	chunked int64 // chunked-local layers: the current chunk
	cross   int64 // cross-attention layers: per attended (encoder / vision) token
	window  int
	chunk   int
	// maxLayer is the per-token bytes of the largest single layer; HF's
	// DynamicCache copies one layer's K/V at a time when it grows.
	maxLayer int64
	// layers counts layers holding a cache.
	layers int
	// formula describes one layer's per-token bytes for the breakdown.
	formula string
}

// seqBytes is the cache of one sequence of tokens self-attended tokens and
// cross cross-attended tokens.
func (k kvSpec) seqBytes(tokens, cross int64) units.Bytes {
	b := units.Bytes(units.MulInt(k.full, tokens))
	b = units.Add(b, units.Bytes(units.MulInt(k.sliding, min(tokens, int64(k.window)))))
	b = units.Add(b, units.Bytes(units.MulInt(k.chunked, min(tokens, int64(k.chunk)))))
	return units.Add(b, units.Bytes(units.MulInt(k.cross, cross)))
}

// perToken is the bytes one token adds in every layer that keeps it,
// counting windowed layers as if they kept every token (vLLM's token
// capacity with the hybrid allocator off).
func (k kvSpec) perToken() int64 { return k.full + k.sliding + k.chunked }

// ParseKVCacheDtype resolves --kv-cache-dtype: "" and "auto" take the
// compute dtype of the model; fp16, bf16, fp32 and fp8 (e4m3/e5m2) name a
// storage width (vllm-project/vllm:vllm/config/cache.py CacheDType).
func ParseKVCacheDtype(s string, auto DType) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return auto, nil
	case "fp16", "float16", "half":
		return FP16, nil
	case "bf16", "bfloat16":
		return BF16, nil
	case "fp32", "float32", "float":
		return FP32, nil
	case "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc":
		return FP8, nil
	}
	return DType{}, fmt.Errorf("kv cache dtype %q is not known (want auto, fp16, bf16, fp32 or fp8)", s)
}

// kvHeadsPerGPU is the number of KV heads one tensor-parallel rank holds:
// heads are split when tp divides them and replicated when tp is a
// multiple of them (vllm-project/vllm:vllm/model_executor/layers/linear.py
// QKVParallelLinear: num_kv_head_replicas = tp / total_num_kv_heads).
func kvHeadsPerGPU(kvHeads, tp int) (int, error) {
	if tp <= 1 {
		return kvHeads, nil
	}
	switch {
	case kvHeads >= tp && kvHeads%tp == 0:
		return kvHeads / tp, nil
	case kvHeads < tp && tp%kvHeads == 0:
		return 1, nil
	}
	return 0, FieldErrorf("tp", "{tp=%d} does not divide the %d KV heads (num_key_value_heads) and is not a multiple of them", tp, kvHeads)
}

// headDim is the attention head width, head_dim or hidden/heads.
func headDim(st *model.Stack) int {
	if st.HeadDim > 0 {
		return st.HeadDim
	}
	if st.Heads > 0 {
		return st.Hidden / st.Heads
	}
	return 0
}

// layerKVBytes is the per-token cache of one self-attention layer on one
// GPU and a description of it.
//
//   - Standard attention (MHA/GQA/MQA): 2 · k · d · bytes, K and V of the
//     rank's KV heads (MODEL.md §7.2; GQA arXiv:2305.13245, MQA arXiv:1911.02150).
//   - MLA in vLLM/SGLang: (kv_lora_rank + qk_rope_head_dim) · bytes, the
//     compressed latent c_t^KV and the decoupled RoPE key k_t^R, one copy
//     per rank (DeepSeek-V2 arXiv:2405.04434 §2.1.2; vllm v1
//     kv_cache_interface.py MLAAttentionSpec).
//   - MLA in HF transformers: decompressed per-head K (qk_nope + qk_rope)
//     and V (v_head_dim) (huggingface/transformers:
//     src/transformers/models/deepseek_v3/modeling_deepseek_v3.py, the
//     cache update takes key_states and value_states).
func layerKVBytes(st *model.Stack, bytes float64, tp int, engine string) (int64, string, error) {
	if mla := st.MLA; mla != nil {
		if engine == engineVLLM {
			w := mla.KVLoRARank + mla.QKRopeDim
			return int64(float64(w) * bytes), fmt.Sprintf("(kv_lora_rank %d + qk_rope_head_dim %d) × %g B", mla.KVLoRARank, mla.QKRopeDim, bytes), nil
		}
		heads := max(st.Heads/max(tp, 1), 1)
		w := heads * (mla.QKNopeDim + mla.QKRopeDim + mla.VHeadDim)
		return int64(float64(w) * bytes), fmt.Sprintf("%d heads × (qk_nope %d + qk_rope %d + v %d) × %g B", heads, mla.QKNopeDim, mla.QKRopeDim, mla.VHeadDim, bytes), nil
	}
	kv := st.KVHeads
	if kv <= 0 {
		kv = st.Heads
	}
	k, err := kvHeadsPerGPU(kv, tp)
	if err != nil {
		return 0, "", err
	}
	d := headDim(st)
	return int64(2 * float64(k*d) * bytes), fmt.Sprintf("2 × %d kv heads × head_dim %d × %g B", k, d, bytes), nil
}

// buildKVSpec sums the cache of layers [lo, hi) of the stack. Layers whose
// attention is sliding or chunked are capped at their window (HF
// SlidingWindow/Hybrid caches; vllm v1 SlidingWindowSpec and
// ChunkedLocalAttentionSpec, MODEL.md §7.2); layers without
// self-attention keep none; cross-attention layers cache the attended
// tokens with the same per-token width.
func buildKVSpec(st *model.Stack, lo, hi int, kvDtype DType, tp int, engine string) (kvSpec, error) {
	base, formula, err := layerKVBytes(st, kvDtype.BytesPerElement(), tp, engine)
	if err != nil {
		return kvSpec{}, err
	}
	idx, idxFormula := indexerKVBytes(st.MLA, kvDtype.BytesPerElement(), engine)
	if idx > 0 {
		formula += " + indexer keys " + idxFormula
	}
	spec := kvSpec{window: st.SlidingWindow, chunk: st.AttentionChunk, formula: formula}
	for i := lo; i < hi && i < st.Layers; i++ {
		lt := layerType(st, i)
		per := base
		if lt.KVHeads > 0 || lt.HeadDim > 0 {
			// A layer with its own KV width (Gemma 4 global layers).
			ls := *st
			ls.KVHeads, ls.HeadDim = cmp.Or(lt.KVHeads, st.KVHeads), cmp.Or(lt.HeadDim, st.HeadDim)
			if per, _, err = layerKVBytes(&ls, kvDtype.BytesPerElement(), tp, engine); err != nil {
				return kvSpec{}, err
			}
		}
		if idx > 0 && st.MLA.HasIndexer(i) {
			per += idx
		}
		kept := true
		switch {
		case lt.SharedKV:
			// Reads an earlier layer's cache (Gemma 4 is_kv_shared_layer).
			kept = false
		case lt.Attention == model.NoSelfAttention:
			kept = false
		case lt.Attention == model.SlidingAttention:
			if st.SlidingWindow > 0 {
				spec.sliding += per
			} else {
				spec.full += per
			}
		case lt.Attention == model.ChunkedAttention:
			if st.AttentionChunk > 0 {
				spec.chunked += per
			} else {
				spec.full += per
			}
		default:
			spec.full += per
		}
		if lt.CrossAttention {
			spec.cross += per
			kept = true
		}
		if kept {
			spec.layers++
			spec.maxLayer = max(spec.maxLayer, per)
		}
	}
	return spec, nil
}

// Indexer key cache of DeepSeek sparse attention (DeepSeek-V3.2, GLM-5):
// every layer that runs its own lightning indexer also caches one key of
// index_head_dim per token, for all tokens (the indexer scores each query
// against the whole context).
//   - vLLM stores it as fp8 values with one fp32 scale per 128 of them,
//     whatever --kv-cache-dtype says: index_head_dim + index_head_dim/128·4
//     bytes (132 for DeepSeek-V3.2), replicated on every tensor-parallel
//     rank (vllm-project/vllm@002d6073aa034d4f5545d45021b0e56d1f3c3593:
//     vllm/model_executor/models/deepseek_v2.py, Indexer.__init__:
//     DeepseekV32IndexerCache(head_dim=head_dim + head_dim //
//     quant_block_size * 4, dtype=torch.uint8), quant_block_size 128).
//   - transformers keeps the key in the cache's dtype
//     (huggingface/transformers@01f8fa55d98fbd77fb6461c47ae14fc6206f2f87:
//     src/transformers/models/deepseek_v32/modeling_deepseek_v32.py,
//     DeepseekV32Indexer.forward: past_key_values.update_indexer(k) with k
//     of shape [B, S, index_head_dim]).
const indexerQuantBlock = 128

// indexerKVBytes is the per-token indexer key cache of one indexer layer
// and a description of it; 0 for attention without an indexer.
func indexerKVBytes(mla *model.MLA, bytes float64, engine string) (int64, string) {
	if mla == nil || mla.IndexerHeadDim <= 0 {
		return 0, ""
	}
	d := mla.IndexerHeadDim
	if engine == engineVLLM {
		n := int64(d + d/indexerQuantBlock*4)
		return n, fmt.Sprintf("(index_head_dim %d fp8 + fp32 scale per %d) = %d B", d, indexerQuantBlock, n)
	}
	return int64(float64(d) * bytes), fmt.Sprintf("index_head_dim %d × %g B", d, bytes)
}

// layerType is the structure of layer i; stacks without a per-layer list
// are uniform causal full-attention stacks.
func layerType(st *model.Stack, i int) model.LayerType {
	if i >= 0 && i < len(st.LayerTypes) {
		return st.LayerTypes[i]
	}
	return model.LayerType{Attention: model.FullAttention}
}
