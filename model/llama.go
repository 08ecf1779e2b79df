package model

// llamaDefaults are transformers' LlamaConfig defaults
// (src/transformers/models/llama/configuration_llama.py): the sparse
// text_config of llava-1.5 relies on them.
var llamaDefaults = dims{hidden: 4096, layers: 32, heads: 32, inter: 11008, vocab: 32000, maxPos: 2048}

// readLlama reads Llama 2/3/3.1/3.2, TinyLlama, SmolLM2 and other
// LlamaForCausalLM configs: RMSNorm, SwiGLU, optional attention_bias
// (q/k/v/o) and mlp_bias (LlamaAttention / LlamaMLP in modeling_llama.py).
func readLlama(c *config, m *Model, b *builder) {
	m.Text = readStack(c, llamaDefaults)
	buildLlama(c, &m.Text, b, "model")
}

// buildLlama adds a LlamaForCausalLM inventory under base for stack s.
func buildLlama(c *config, s *Stack, b *builder, base string) {
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias = s.AttnBias
	s.MLPBias = c.boolean("mlp_bias", false)
	buildDecoder(b, s, decoderSpec{base: base, head: "lm_head",
		attn: attnOpts{qkvBias: s.AttnBias, oBias: s.OutBias}, mlpBias: s.MLPBias})
}

// readMistral reads MistralForCausalLM: Llama layers with a sliding
// window on every layer when sliding_window is set (MistralConfig default
// 4096; Mistral-Nemo sets null).
func readMistral(c *config, m *Model, b *builder) {
	m.Text = readStack(c, dims{hidden: 4096, layers: 32, heads: 32, kvHeads: 8, inter: 14336, vocab: 32000, maxPos: 4096 * 32})
	slidingAll(c, &m.Text, 0)
	buildDecoder(b, &m.Text, decoderSpec{base: "model", head: "lm_head"})
}
