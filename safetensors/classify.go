package safetensors

import "strings"

// Kind says what a stored tensor is, judged from its name (and, for a few
// cases, its shape and its neighbours). It separates the tensors that are
// model parameters from the ones that make a checkpoint's element count
// differ from a config-based parameter count.
type Kind string

// Tensor kinds.
const (
	// Parameter is a module parameter stored element for element (any
	// dtype, fp8 included): its elements count as parameters.
	Parameter Kind = "parameter"
	// Packed is quantized weight data whose stored elements are not the
	// logical parameters: GPTQ/AWQ qweight (eight 4-bit values per I32),
	// bitsandbytes 4-bit weights (two values per U8), compressed-tensors
	// weight_packed, gpt-oss MXFP4 *_blocks.
	Packed Kind = "packed"
	// QuantAux is quantization bookkeeping: scales, zero points, group
	// indices, absmax and quant-state tensors.
	QuantAux Kind = "quant_aux"
	// Buffer is non-parameter module state saved with the weights:
	// rotary inv_freq, causal-mask attn.bias, position_ids, BatchNorm
	// running statistics.
	Buffer Kind = "buffer"
	// TiedCopy is a second stored copy of a tied weight (an lm_head equal
	// to the input embedding when tie_word_embeddings is set).
	TiedCopy Kind = "tied_copy"
)

// quantAuxSuffixes end the names of quantization bookkeeping tensors in
// GPTQ/AWQ (scales, qzeros, g_idx), FP8 checkpoints (weight_scale,
// weight_scale_inv, input_scale, k/v_scale), compressed-tensors
// (weight_zero_point, weight_global_scale, weight_shape), bitsandbytes
// (SCB, weight_format, absmax, quant_map, nested_*) and gpt-oss (*_scales).
var quantAuxSuffixes = []string{
	".scales", ".qzeros", ".g_idx", ".zeros",
	".weight_scale", ".weight_scale_inv", ".weight_scale_2",
	".input_scale", ".input_scale_inv", ".output_scale",
	".k_scale", ".v_scale", ".q_scale",
	".weight_zero_point", ".input_zero_point",
	".weight_global_scale", ".input_global_scale", ".weight_shape",
	".SCB", ".weight_format", ".absmax", ".quant_map",
	".nested_absmax", ".nested_quant_map", "_scales",
}

// packedSuffixes end the names of packed quantized weights.
var packedSuffixes = []string{".qweight", ".weight_packed", "_blocks"}

// bufferSuffixes end the names of saved buffers (not parameters).
var bufferSuffixes = []string{
	".inv_freq", ".masked_bias", ".position_ids", ".num_batches_tracked",
	".running_mean", ".running_var", "._float_tensor",
	".cos_cached", ".sin_cached",
}

// embeddingSuffixes end the names of input embeddings an lm_head may be tied to.
var embeddingSuffixes = []string{
	"embed_tokens.weight", "wte.weight", "word_embeddings.weight",
	"embed_in.weight", "tok_embeddings.weight", "shared.weight",
}

// Classify returns the kind of tensor t. all maps every tensor name of
// the checkpoint to its tensor: bitsandbytes 4-bit weights are recognised
// by their quant-state neighbours, and a tied copy only next to an
// embedding of the same shape. tied says whether the config ties the
// output head to the input embedding (tie_word_embeddings).
func Classify(t Tensor, all map[string]Tensor, tied bool) Kind {
	name := t.Name
	switch {
	case hasAnySuffix(name, quantAuxSuffixes) || strings.Contains(name, ".quant_state."):
		return QuantAux
	case hasAnySuffix(name, packedSuffixes):
		return Packed
	case hasAnySuffix(name, bufferSuffixes):
		return Buffer
	case strings.HasSuffix(name, ".bias") && len(t.Shape) == 4:
		// GPT-2/GPT-J/GPT-NeoX register the causal mask as attn.bias,
		// shape [1, 1, n_positions, n_positions]; a real bias is 1-D.
		return Buffer
	case strings.HasSuffix(name, ".weight") && isBnb4bit(name, all):
		return Packed
	case tied && isTiedCopy(t, all):
		return TiedCopy
	}
	return Parameter
}

// isBnb4bit reports whether a weight has bitsandbytes 4-bit neighbours.
func isBnb4bit(name string, all map[string]Tensor) bool {
	for _, s := range []string{".absmax", ".quant_state.bitsandbytes__nf4", ".quant_state.bitsandbytes__fp4"} {
		if _, ok := all[name+s]; ok {
			return true
		}
	}
	return false
}

// isTiedCopy reports whether t is an output head or a per-stack
// embedding stored next to the embedding it is tied to.
func isTiedCopy(t Tensor, all map[string]Tensor) bool {
	name := t.Name
	isHead := name == "lm_head.weight" || strings.HasSuffix(name, ".lm_head.weight")
	isStackEmbed := strings.HasSuffix(name, "encoder.embed_tokens.weight") || strings.HasSuffix(name, "decoder.embed_tokens.weight")
	if !isHead && !isStackEmbed {
		return false
	}
	for other, o := range all {
		if other == name || !hasAnySuffix(other, embeddingSuffixes) {
			continue
		}
		if isStackEmbed && !strings.HasSuffix(other, "shared.weight") {
			continue
		}
		if sameShape(o.Shape, t.Shape) {
			return true
		}
	}
	return false
}

func sameShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}
