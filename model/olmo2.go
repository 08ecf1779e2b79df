package model

import "fmt"

// olmo2Defaults are Olmo2Config's defaults
// (huggingface/transformers@008f5c8c29be84d4721dc6d1e0fcd72300580be4:
// src/transformers/models/olmo2/modular_olmo2.py): vocab 50304, 4096
// wide, 32 layers and heads, 2048 positions, untied.
var olmo2Defaults = dims{hidden: 4096, layers: 32, heads: 32, inter: 11008, vocab: 50304, maxPos: 2048}

// readOLMo2 reads OLMo 2 (model_type "olmo2"): Llama projections (biases
// on q, k, v and o when attention_bias) with RMSNorms over the whole
// query and key projections (Olmo2Attention.q_norm = RMSNorm(heads ·
// head_dim), k_norm = RMSNorm(kv_heads · head_dim)), and the norms after
// each block instead of before it: post_attention_layernorm and
// post_feedforward_layernorm, no input_layernorm (Olmo2DecoderLayer in
// the same file).
func readOLMo2(c *config, m *Model, b *builder) {
	m.Text = readStack(c, olmo2Defaults)
	readLayerTypes(c, &m.Text)
	buildPostNorm(c, b, &m.Text, true)
}

// readOLMo3 reads OLMo 3 (model_type "olmo3"): OLMo 2 layers, three of
// every four sliding over sliding_window (default 4096) and the fourth
// global, unless layer_types says otherwise (Olmo3Config.__post_init__,
// Olmo3Attention in
// huggingface/transformers@02e8340b967815b4a5417c6273a7774aae298a03:
// src/transformers/models/olmo3/modular_olmo3.py).
func readOLMo3(c *config, m *Model, b *builder) {
	s := readStack(c, olmo2Defaults)
	s.SlidingWindow = c.count("sliding_window", 4096)
	for i := range s.LayerTypes {
		if (i+1)%4 != 0 && s.SlidingWindow > 0 {
			s.LayerTypes[i].Attention = SlidingAttention
		}
	}
	readLayerTypes(c, &s)
	checkWindow(c, &s)
	m.Text = s
	buildPostNorm(c, b, &m.Text, true)
}

// checkWindow refuses sliding layers without a window to slide over.
func checkWindow(c *config, s *Stack) {
	for _, lt := range s.LayerTypes {
		if lt.Attention == SlidingAttention && s.SlidingWindow <= 0 {
			c.fail("sliding_window", "a positive window for the sliding_attention layers of layer_types", fmt.Sprint(s.SlidingWindow))
			return
		}
	}
}

// buildPostNorm adds a decoder whose layers normalise each block's output
// (OLMo 2/3 and EXAONE 4: self_attn, post_attention_layernorm, mlp,
// post_feedforward_layernorm). fullQK selects OLMo 2's norms over the
// whole q/k projections; otherwise q_norm and k_norm are per head.
func buildPostNorm(c *config, b *builder, s *Stack, fullQK bool) {
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias = s.AttnBias
	s.QKNorm = true
	attn := attnOpts{qkvBias: s.AttnBias, oBias: s.AttnBias, qNorm: s.HeadDim, kNorm: s.HeadDim}
	if fullQK {
		attn.qNorm, attn.kNorm = s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	}
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embed_tokens", s.Vocab, s.Hidden)
	g := b.layers(StackText, "model.layers", 0, s.Layers)
	selfAttention(g, s, attn)
	g.norm(CompNorm, "post_attention_layernorm", s.Hidden, false)
	gatedMLP(g.sub("mlp."), CompMLP, s.Hidden, s.Intermediate, false)
	g.norm(CompNorm, "post_feedforward_layernorm", s.Hidden, false)
	top.norm(CompFinalNorm, "model.norm", s.Hidden, false)
	lmHead(b, s, "lm_head", false)
}
