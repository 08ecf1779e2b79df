package model

// readGemma reads Gemma (v1): Llama layers with a (1 + w) RMSNorm (same
// parameter count), GeGLU MLP, head_dim 256 and tied embeddings
// (GemmaConfig defaults in configuration_gemma.py).
func readGemma(c *config, m *Model, b *builder) {
	m.Text = readStack(c, dims{hidden: 3072, layers: 28, heads: 16, headDim: 256, inter: 24576, vocab: 256000, maxPos: 8192, tied: true, act: "gelu_pytorch_tanh"})
	m.Text.AttnBias = c.boolean("attention_bias", false)
	buildDecoder(b, &m.Text, decoderSpec{base: "model", head: "lm_head",
		attn: attnOpts{qkvBias: m.Text.AttnBias, oBias: m.Text.AttnBias}})
}

// readGemma2 reads Gemma 2: four RMSNorms per layer (input,
// post_attention, pre_feedforward, post_feedforward) and sliding-window
// attention on even layers (Gemma2DecoderLayer; Gemma2Config.layer_types:
// sliding when (i+1) % 2 != 0; defaults window 4096, tied).
func readGemma2(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 2304, layers: 26, heads: 8, kvHeads: 4, headDim: 256, inter: 9216, vocab: 256000, maxPos: 8192, tied: true, act: "gelu_pytorch_tanh"})
	s.SlidingWindow = c.count("sliding_window", 4096)
	for i := range s.LayerTypes {
		if (i+1)%2 != 0 && s.SlidingWindow > 0 {
			s.LayerTypes[i].Attention = SlidingAttention
		}
	}
	readLayerTypes(c, &s)
	s.AttnBias = c.boolean("attention_bias", false)
	m.Text = s
	buildDecoder(b, &m.Text, decoderSpec{base: "model", head: "lm_head", sandwich: true,
		attn: attnOpts{qkvBias: s.AttnBias, oBias: s.AttnBias}})
}

// gemma3TextDefaults are Gemma3TextConfig's defaults
// (configuration_gemma3.py); gemma-3-4b-it's text_config relies on them for
// heads (8), KV heads (4), head_dim (256) and vocab (262208).
var gemma3TextDefaults = dims{hidden: 2304, layers: 26, heads: 8, kvHeads: 4, headDim: 256, inter: 9216, vocab: 262208, maxPos: 131072, tied: true, act: "gelu_pytorch_tanh"}

// readGemma3Text reads a Gemma 3 text decoder (Gemma3ForCausalLM).
func readGemma3Text(c *config, m *Model, b *builder) {
	m.Text = readGemma3Stack(c)
	buildGemma3(b, &m.Text, "model")
}

// readGemma3Stack reads a Gemma3TextConfig: every
// sliding_window_pattern-th layer is global, the others slide over
// sliding_window (default 4096, pattern 6).
func readGemma3Stack(c *config) Stack {
	s := readStack(c, gemma3TextDefaults)
	s.SlidingWindow = c.count("sliding_window", 4096)
	pattern := c.intIn("sliding_window_pattern", 6, 1, maxLayers)
	for i := range s.LayerTypes {
		if (i+1)%pattern != 0 && s.SlidingWindow > 0 {
			s.LayerTypes[i].Attention = SlidingAttention
		}
	}
	readLayerTypes(c, &s)
	s.AttnBias = c.boolean("attention_bias", false)
	s.QKNorm = true
	return s
}

// buildGemma3 adds a Gemma 3 decoder: Gemma 2 layers plus per-head q/k
// RMSNorms (Gemma3Attention.q_norm/k_norm, width head_dim).
func buildGemma3(b *builder, s *Stack, base string) {
	buildDecoder(b, s, decoderSpec{base: base, head: "lm_head", sandwich: true,
		attn: attnOpts{qkvBias: s.AttnBias, oBias: s.AttnBias, qNorm: s.HeadDim, kNorm: s.HeadDim}})
}
