package model

// qwen2Defaults are Qwen2Config's defaults (configuration_qwen2.py).
var qwen2Defaults = dims{hidden: 4096, layers: 32, heads: 32, kvHeads: 32, inter: 22016, vocab: 151936, maxPos: 32768}

// readQwen2 reads Qwen2/Qwen2.5: Llama layers with biases on q, k and v
// (not o) (Qwen2Attention in modeling_qwen2.py).
func readQwen2(c *config, m *Model, b *builder) {
	m.Text = readStack(c, qwen2Defaults)
	qwenSliding(c, &m.Text)
	m.Text.AttnBias = true
	buildDecoder(b, &m.Text, decoderSpec{base: "model", head: "lm_head", attn: attnOpts{qkvBias: true}})
}

// qwenSliding applies Qwen2's use_sliding_window: layers from
// max_window_layers on use sliding_window (Qwen2Config.layer_types).
func qwenSliding(c *config, s *Stack) {
	readLayerTypes(c, s)
	if !c.boolean("use_sliding_window", false) {
		return
	}
	s.SlidingWindow = c.count("sliding_window", 4096)
	from := c.count("max_window_layers", 28)
	for i := from; i < s.Layers && s.SlidingWindow > 0; i++ {
		s.LayerTypes[i].Attention = SlidingAttention
	}
}

// readQwen3 reads Qwen3: no attention biases, per-head RMSNorm on q and k
// (Qwen3Attention.q_norm/k_norm, width head_dim; modeling_qwen3.py).
func readQwen3(c *config, m *Model, b *builder) {
	m.Text = readStack(c, dims{hidden: 4096, layers: 32, heads: 32, kvHeads: 32, headDim: 128, inter: 22016, vocab: 151936, maxPos: 32768})
	qwenSliding(c, &m.Text)
	buildQwen3(c, &m.Text, b, "model", nil)
}

// buildQwen3 adds a Qwen3 decoder inventory under base, with an optional
// MoE FFN builder.
func buildQwen3(c *config, s *Stack, b *builder, base string, mlp func(g group, moe bool)) {
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias = s.AttnBias
	s.QKNorm = true
	buildDecoder(b, s, decoderSpec{base: base, head: "lm_head", mlp: mlp,
		attn: attnOpts{qkvBias: s.AttnBias, oBias: s.AttnBias, qNorm: s.HeadDim, kNorm: s.HeadDim}})
}
