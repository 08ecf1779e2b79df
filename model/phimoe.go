package model

// readPhiMoE reads Phi-3.5-MoE (model_type "phimoe"): Llama attention
// with q/k/v/o biases when attention_bias, LayerNorms with weight and
// bias before attention and MoE and at the end, and in every layer a
// block_sparse_moe of a bias-free router "gate" Linear(h, E) and E SwiGLU
// experts w1 (gate), w3 (up), w2 (down) of width intermediate_size; an
// lm_head with a bias when lm_head_bias (PhimoeAttention,
// PhimoeSparseMoeBlock, PhimoeDecoderLayer, PhimoeForCausalLM in
// huggingface/transformers v4.57.0:
// src/transformers/models/phimoe/modeling_phimoe.py; PhimoeConfig
// defaults: vocab 32064, 4096 wide, 32 layers and heads, 8 KV heads, 16
// experts of 6400, top-2, no biases, untied).
func readPhiMoE(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 4096, layers: 32, heads: 32, kvHeads: 8, inter: 6400, vocab: 32064, maxPos: 4096 * 32})
	slidingAll(c, &s, 0)
	s.MoE = readMoE(c, moeDefaults{experts: 16, perToken: 2, expertFFN: s.Intermediate})
	s.MoE.ExpertFFN = s.Intermediate
	markMoELayers(&s, func(int) bool { return true })
	s.Norm = LayerNorm
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias = s.AttnBias
	headBias := c.boolean("lm_head_bias", false)
	m.Text = s
	st := &m.Text
	e := st.MoE.Experts
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embed_tokens", st.Vocab, st.Hidden)
	g := b.layers(StackText, "model.layers", 0, st.Layers)
	g.norm(CompNorm, "input_layernorm", st.Hidden, true)
	selfAttention(g, st, attnOpts{qkvBias: st.AttnBias, oBias: st.AttnBias})
	g.norm(CompNorm, "post_attention_layernorm", st.Hidden, true)
	moe := g.sub("block_sparse_moe.")
	moe.linear(CompRouter, "gate", "gate", st.Hidden, e, false)
	x := moe.sub("experts.*.")
	x.experts(CompExperts, "w1", "w1", e, st.Hidden, st.Intermediate, false)
	x.experts(CompExperts, "w2", "w2", e, st.Intermediate, st.Hidden, false)
	x.experts(CompExperts, "w3", "w3", e, st.Hidden, st.Intermediate, false)
	top.norm(CompFinalNorm, "model.norm", st.Hidden, true)
	lmHead(b, st, "lm_head", headBias)
}
