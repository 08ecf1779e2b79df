package model

// readStarcoder2 reads StarCoder2 (model_type "starcoder2"): LayerNorms
// with bias before attention and MLP, q/k/v/o projections with biases
// when use_bias, an MLP that is not gated — c_fc Linear(h, f), the
// activation, c_proj Linear(f, h), both with bias when use_bias — a final
// LayerNorm and a tied head by default; sliding_window, when set, applies
// to every layer (Starcoder2Attention, Starcoder2MLP,
// Starcoder2DecoderLayer in huggingface/transformers v4.57.0:
// src/transformers/models/starcoder2/modeling_starcoder2.py;
// Starcoder2Config defaults: vocab 49152, 3072 wide, 30 layers, 24 heads,
// 2 KV heads, MLP 12288, 4096 positions, use_bias, tied).
func readStarcoder2(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 3072, layers: 30, heads: 24, kvHeads: 2, inter: 12288, vocab: 49152, maxPos: 4096, tied: true, act: "gelu_pytorch_tanh"})
	slidingAll(c, &s, 0)
	s.Norm, s.MLP = LayerNorm, PlainMLP
	bias := c.boolean("use_bias", true)
	s.AttnBias, s.OutBias, s.MLPBias = bias, bias, bias
	m.Text = s
	st := &m.Text
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embed_tokens", st.Vocab, st.Hidden)
	g := b.layers(StackText, "model.layers", 0, st.Layers)
	g.norm(CompNorm, "input_layernorm", st.Hidden, true)
	selfAttention(g, st, attnOpts{qkvBias: bias, oBias: bias})
	g.norm(CompNorm, "post_attention_layernorm", st.Hidden, true)
	plainMLP(g.sub("mlp."), "c_fc", "c_proj", st.Hidden, st.Intermediate, bias)
	top.norm(CompFinalNorm, "model.norm", st.Hidden, true)
	lmHead(b, st, "lm_head", false)
}
