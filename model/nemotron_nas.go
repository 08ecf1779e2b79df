package model

import "fmt"

// readNemotronNAS reads the Nemotron NAS models (model_type
// "nemotron-nas", DeciLMForCausalLM: Llama-3.1-Nemotron-Nano-8B,
// Llama-3_3-Nemotron-Super-49B, Llama-3_1-Nemotron-Ultra-253B), Llama
// layers whose blocks a neural-architecture search reshaped one by one.
// block_configs has one entry per layer: attention is either no_op (no
// attention, no input_layernorm, no KV cache) or GQA with
// num_attention_heads / n_heads_in_group KV heads; the FFN is either
// no_op (no MLP, no post_attention_layernorm) or a SwiGLU MLP of
// ffn_mult, sized _ffn_mult_to_intermediate_size: int(2·ffn_mult·h/3)
// rounded up to a multiple of 256 (or its own intermediate_size)
// (DeciLMDecoderLayer, _ffn_mult_to_intermediate_size in
// vllm-project/vllm@2ee6ae787f3088315ea02f64650df0a05dfe566b:
// vllm/model_executor/models/nemotron_nas.py, which follows the
// checkpoints' remote-code modeling_decilm.py). transformers has no
// native class for it.
//
// Block features the released checkpoints do not use and vLLM does not
// build — replace_with_linear, sparsify, a sliding window_length, sink
// tokens — are refused naming the key.
func readNemotronNAS(c *config, m *Model, b *builder) {
	d := llamaDefaults
	d.inter = 1 // intermediate_size is null: the widths are per block
	s := readStack(c, d)
	blocks := c.objects("block_configs")
	if blocks == nil {
		c.fail("block_configs", fmt.Sprintf("a list of %d block configurations (one per layer)", s.Layers), nil)
		return
	}
	if len(blocks) != s.Layers {
		c.fail("block_configs", fmt.Sprintf("%d entries (num_hidden_layers)", s.Layers), len(blocks))
		return
	}
	s.Intermediate = 0
	kvHeads := 0
	for i, bc := range blocks {
		attn, ffn := bc.sub("attention").orEmpty(bc, "attention"), bc.sub("ffn").orEmpty(bc, "ffn")
		refuseBlockKeys(attn, "replace_with_linear", "sparsify", "window_length", "num_sink_tokens")
		refuseBlockKeys(ffn, "replace_with_linear", "sparsify")
		lt := &s.LayerTypes[i]
		if attn.boolean("no_op", false) {
			lt.Attention = NoSelfAttention
		} else {
			g := attn.intIn("n_heads_in_group", 0, 1, maxDim)
			if g == 0 || s.Heads%g != 0 {
				attn.fail("n_heads_in_group", fmt.Sprintf("a divisor of num_attention_heads (%d)", s.Heads), nil)
				return
			}
			switch kv := s.Heads / g; {
			case kvHeads == 0:
				kvHeads = kv
			case kv != kvHeads:
				attn.fail("n_heads_in_group", fmt.Sprintf("the same group size in every attention block (%d KV heads before)", kvHeads), g)
				return
			}
		}
		if ffn.boolean("no_op", false) {
			lt.NoFFN = true
			continue
		}
		w := ffn.intIn("intermediate_size", 0, 1, maxDim)
		if w == 0 {
			mult := ffn.number("ffn_mult", 0)
			if mult <= 0 || mult > 64 {
				ffn.fail("ffn_mult", "a positive multiple of the hidden size", nil)
				return
			}
			w = nasFFNWidth(mult, s.Hidden)
		}
		lt.FFN = w
		s.Intermediate = max(s.Intermediate, w)
	}
	if kvHeads == 0 {
		kvHeads = s.Heads // no attention block at all: no KV heads to read
	}
	s.KVHeads = kvHeads
	for i := range s.LayerTypes {
		if s.LayerTypes[i].FFN == s.Intermediate {
			s.LayerTypes[i].FFN = 0 // the widest is the stack's width
		}
	}
	if s.Intermediate == 0 {
		s.Intermediate = 1 // every FFN is a no-op; nothing reads the width
	}
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias = s.AttnBias
	s.MLPBias = c.boolean("mlp_bias", false)
	m.Text = s
	buildNemotronNAS(b, &m.Text)
}

// nasFFNWidth is DeciLM's _ffn_mult_to_intermediate_size.
func nasFFNWidth(mult float64, hidden int) int {
	w := int(2 * mult * float64(hidden) / 3)
	if r := w % 256; r != 0 {
		w += 256 - r
	}
	return w
}

// refuseBlockKeys fails on block keys that are set to something other
// than false or null.
func refuseBlockKeys(c *config, keys ...string) {
	for _, k := range keys {
		v, _, ok := c.lookup(k)
		if !ok || v == false {
			continue
		}
		c.fail(k, "false or null (gpumem does not read this block feature)", v)
	}
}

// objects reads key as an array of JSON objects, each a config sharing c's
// state named key[i]; nil when absent.
func (c *config) objects(key string) []*config {
	v, k, ok := c.lookup(key)
	if !ok {
		return nil
	}
	arr, isArr := v.([]any)
	if !isArr || len(arr) > maxLayers {
		c.fail(k, "an array of objects", v)
		return nil
	}
	out := make([]*config, 0, len(arr))
	for i, e := range arr {
		obj, isObj := e.(map[string]any)
		if !isObj {
			c.fail(fmt.Sprintf("%s[%d]", k, i), "an object", e)
			return nil
		}
		out = append(out, &config{st: c.st, prefix: fmt.Sprintf("%s%s[%d].", c.prefix, k, i), m: obj})
	}
	return out
}

// buildNemotronNAS adds the inventory: each run of identical blocks as
// one group of layers.
func buildNemotronNAS(b *builder, s *Stack) {
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embed_tokens", s.Vocab, s.Hidden)
	for i := 0; i < s.Layers; {
		j := i + 1
		for j < s.Layers && s.LayerTypes[j] == s.LayerTypes[i] {
			j++
		}
		lt := s.LayerTypes[i]
		g := b.layers(StackText, "model.layers", i, j-i)
		if lt.Attention != NoSelfAttention {
			g.norm(CompNorm, "input_layernorm", s.Hidden, false)
			selfAttention(g, s, attnOpts{qkvBias: s.AttnBias, oBias: s.OutBias})
		}
		if !lt.NoFFN {
			g.norm(CompNorm, "post_attention_layernorm", s.Hidden, false)
			gatedMLP(g.sub("mlp."), CompMLP, s.Hidden, layerFFN(s, lt), s.MLPBias)
		}
		i = j
	}
	top.norm(CompFinalNorm, "model.norm", s.Hidden, false)
	lmHead(b, s, "lm_head", false)
}

// layerFFN is the width of a layer's dense FFN: its own, else the stack's.
func layerFFN(s *Stack, lt LayerType) int {
	if lt.FFN > 0 {
		return lt.FFN
	}
	return s.Intermediate
}
