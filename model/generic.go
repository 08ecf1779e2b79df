package model

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gpumem/gpumem/internal/textdist"
)

// A config whose model_type no reader knows may still be read as a
// generic Llama-style dense decoder, but only when it holds nothing that
// reading does not understand and that changes the model's size: mixture
// of experts, recurrent or hybrid layers, latent attention, sub-configs,
// other MLP, norm or bias kinds. Otherwise gpumem refuses, naming the keys
// and the supported families closest to them. A wrong "fits" from a
// misread model is the worst answer gpumem can give.

// GenericWarning starts the warning a model read as a generic decoder
// carries, so front ends and tests can recognise it.
const GenericWarning = "read as a generic Llama-style decoder"

// keyClass is a group of config keys the generic reading does not
// understand, with the supported families that read such keys.
type keyClass struct {
	what     string
	exact    []string
	prefixes []string
	families string
	// layers is true for the classes that add kinds of layer (experts,
	// recurrent mixers, latent attention), which even a known dense
	// family's reader must not ignore.
	layers bool
}

// genericBlockers are the key classes that refuse the generic reading.
var genericBlockers = []keyClass{
	{what: "mixture-of-experts",
		exact: []string{"num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", "num_experts_per_tok",
			"experts_per_token", "moe_top_k", "n_shared_experts", "num_shared_experts", "shared_expert_intermediate_size",
			"first_k_dense_replace", "decoder_sparse_step", "expert_layer_period", "expert_layer_offset", "moe_layer_freq"},
		prefixes: []string{"moe_", "router_"},
		families: "mixtral, qwen3_moe, deepseek_v3, gpt_oss", layers: true},
	{what: "recurrent or hybrid layer",
		exact: []string{"hybrid_override_pattern", "layers_block_type", "attn_layer_indices", "attn_layer_period",
			"attn_layer_offset", "full_attention_interval", "attn_type_list", "state_size", "d_state", "d_conv",
			"conv_kernel", "conv_L_cache", "block_configs"},
		prefixes: []string{"mamba_", "ssm_", "linear_", "time_step_"},
		families: "qwen3_next, qwen3_5, nemotron_h, minimax_m1", layers: true},
	{what: "latent-attention",
		exact:    []string{"kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"},
		families: "deepseek_v2, deepseek_v3", layers: true},
	{what: "MLP-kind",
		exact:    []string{"mlp_type", "ffn_type", "mlp_hidden_act", "ffn_hidden_act", "activation_function", "use_glu", "gated_mlp", "use_gated_mlp"},
		families: "llama (gated SiLU MLP), gpt2 and gpt_neox (plain MLP)"},
	{what: "norm or bias",
		exact: []string{"bias", "use_bias", "qkv_bias", "add_bias_linear", "add_qkv_bias", "qk_norm", "use_qk_norm",
			"qk_layernorm", "norm_type", "normalization", "normalization_function", "is_encoder_decoder"},
		families: "qwen3 (q/k norms), qwen2 (q/k/v biases), gpt_neox (LayerNorm)"},
}

// harmlessObjects are object-valued keys that do not change the size of a
// dense decoder (RoPE settings, label maps, remote-code pointers) or are
// read on their own (quantization_config).
var harmlessObjects = []string{"rope_scaling", "rope_parameters", "quantization_config", "auto_map", "id2label",
	"label2id", "task_specific_params", "generation_config", "compression_config"}

// harmlessValue reports whether v leaves the key without effect: null,
// false, 0 or an empty list or string (a "num_experts": 0 dense model).
func harmlessValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	}
	if n, ok := integer(v); ok {
		return n == 0
	}
	return false
}

// blockedKeys returns, per key class, the keys of c that the generic
// reading cannot honour, and the classes' families, in key order.
func blockedKeys(c *config) (keys []string, families []string) {
	seen := map[string]bool{}
	for k, v := range c.m {
		if cls, ok := blockerClass(k, v); ok {
			keys = append(keys, fmt.Sprintf("%s (%s)", k, cls.what))
			if !seen[cls.families] {
				seen[cls.families] = true
				families = append(families, cls.families)
			}
		}
	}
	sort.Strings(keys)
	sort.Strings(families)
	return keys, families
}

// blockerClass classifies key k with value v, reporting whether it
// blocks the generic reading.
func blockerClass(k string, v any) (keyClass, bool) {
	if harmlessValue(v) {
		return keyClass{}, false
	}
	for _, cls := range genericBlockers {
		if slices.Contains(cls.exact, k) {
			return cls, true
		}
		for _, p := range cls.prefixes {
			if strings.HasPrefix(k, p) {
				return cls, true
			}
		}
	}
	if k == "layer_types" {
		if names, ok := v.([]any); ok {
			for _, n := range names {
				switch n {
				case "full_attention", "sliding_attention", "chunked_attention":
				default:
					return keyClass{what: fmt.Sprintf("layer kind %v", n), families: "qwen3_next, qwen3_5, nemotron_h, minimax_m1", layers: true}, true
				}
			}
		}
		return keyClass{}, false
	}
	if _, isObj := v.(map[string]any); isObj && !slices.Contains(harmlessObjects, k) {
		return keyClass{what: "sub-config", families: "llava, qwen3_vl, mllama, gemma3 (multimodal wrappers)"}, true
	}
	return keyClass{}, false
}

// closestTypes returns up to n supported model types closest in spelling
// to mt (a few edits away), best first.
func closestTypes(mt string, n int) []string {
	mt = strings.ToLower(mt)
	if mt == "" {
		return nil
	}
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for name := range readers {
		d := textdist.Levenshtein(mt, strings.ToLower(name))
		if d <= max(2, len(mt)/3) || strings.HasPrefix(mt, strings.ToLower(name)) {
			cs = append(cs, cand{name, d})
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	var out []string
	for _, x := range cs[:min(len(cs), n)] {
		out = append(out, x.name)
	}
	return out
}

// unreadHybrids are hybrid and recurrent families gpumem knows of but has
// no reader for yet (no release config with a published count to test one
// against); they are refused by name, never read generically.
var unreadHybrids = map[string]string{
	"falcon_h1":        "Falcon-H1: attention and Mamba-2 in parallel in every layer",
	"falcon_mamba":     "Falcon-Mamba: Mamba layers",
	"mamba":            "Mamba: Mamba layers",
	"mamba2":           "Mamba-2: Mamba-2 layers",
	"jamba":            "Jamba: Mamba and attention layers with mixture-of-experts MLPs",
	"bamba":            "Bamba: Mamba-2 and attention layers",
	"granitemoehybrid": "Granite 4.0 hybrid: Mamba-2 and attention layers with shared-expert MoE",
	"zamba":            "Zamba: Mamba layers with a shared attention block",
	"zamba2":           "Zamba2: Mamba-2 layers with shared attention blocks",
	"lfm2":             "LFM2: short-convolution and attention layers",
	"lfm2_moe":         "LFM2-MoE: short-convolution and attention layers with experts",
	"kimi_linear":      "Kimi Linear: KDA linear attention with MLA",
	"minimax":          "MiniMax-Text-01 (transformers' MiniMax): lightning and softmax attention",
}

// genericReading decides whether config c of unknown model_type mt may be
// read as a generic decoder: it returns the error refusing it, or nil and
// records the warning every output then carries.
func genericReading(c *config, mt, arch string) error {
	what := fmt.Sprintf("model_type %q (architecture %q)", mt, arch)
	if desc, ok := unreadHybrids[mt]; ok {
		return &unsupportedError{msg: fmt.Sprintf("%s: %s: %v: %s is a hybrid family gpumem does not read yet and will not guess; closest supported families: nemotron_h, qwen3_next, qwen3_5, minimax_m1",
			c.st.file, what, ErrUnsupportedArchitecture, desc)}
	}
	var missing []string
	for _, k := range []string{"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size"} {
		if !c.has(k) {
			missing = append(missing, k)
		}
	}
	keys, families := blockedKeys(c)
	if len(missing) == 0 && len(keys) == 0 {
		c.warnf("%s is not supported; %s (RMSNorm, gated SiLU MLP, no biases), so parameter counts and memory are approximate",
			what, GenericWarning)
		return nil
	}
	msg := fmt.Sprintf("%s: %s: %v", c.st.file, what, ErrUnsupportedArchitecture)
	if len(keys) > 0 {
		msg += fmt.Sprintf("; it cannot be read as a generic dense decoder because of %s", strings.Join(keys, ", "))
	} else {
		msg += fmt.Sprintf("; it cannot be read as a generic dense decoder without %s", strings.Join(missing, ", "))
	}
	if near := closestTypes(mt, 3); len(near) > 0 {
		families = append([]string{strings.Join(near, ", ")}, families...)
	}
	if len(families) > 0 {
		msg += "; closest supported families: " + strings.Join(families, "; ")
	}
	return &unsupportedError{msg: msg}
}

// denseFamilies are readers of dense decoders whose model_type fine-tunes
// and conversions often keep while adding experts or recurrent layers; such
// a config is refused rather than read without them.
var denseFamilies = map[string]bool{"llama": true, "mistral": true, "qwen2": true, "qwen3": true}

// checkDenseFamily refuses a config read by a dense family's reader (t)
// that holds mixture-of-experts, recurrent or latent-attention keys the
// reader would ignore.
func checkDenseFamily(c *config, t, mt, arch string) error {
	if !denseFamilies[t] {
		return nil
	}
	var keys []string
	var families []string
	for k, v := range c.m {
		cls, ok := blockerClass(k, v)
		if !ok || !cls.layers {
			continue
		}
		keys = append(keys, fmt.Sprintf("%s (%s)", k, cls.what))
		if !slices.Contains(families, cls.families) {
			families = append(families, cls.families)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	sort.Strings(families)
	return &unsupportedError{msg: fmt.Sprintf("%s: model_type %q (architecture %q): %v; the %s reader is a dense decoder and would ignore %s; closest supported families: %s",
		c.st.file, mt, arch, ErrUnsupportedArchitecture, t, strings.Join(keys, ", "), strings.Join(families, "; "))}
}

// unsupportedError is a refusal of an architecture, wrapping
// ErrUnsupportedArchitecture.
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string { return e.msg }
func (e *unsupportedError) Unwrap() error { return ErrUnsupportedArchitecture }
