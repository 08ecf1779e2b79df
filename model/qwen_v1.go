package model

// readQwenV1 reads the first Qwen generation (model_type "qwen",
// QWenLMHeadModel, remote code modeling_qwen.py): wte, RMSNorm ln_1/ln_2,
// a fused c_attn Linear(h, 3h) with bias and c_proj without (no_bias),
// an MLP w1, w2 (h → intermediate_size/2 each) and c_proj back, ln_f and
// an untied lm_head.
func readQwenV1(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 4096, layers: 32, heads: 32, inter: 22016, vocab: 151936, maxPos: 8192})
	if s.Intermediate%2 != 0 {
		c.fail("intermediate_size", "an even integer (QWenMLP splits it between w1 and w2)", s.Intermediate)
	}
	s.HeadDim = c.dim("kv_channels", s.HeadDim)
	s.AttnBias = true
	f := s.Intermediate / 2
	m.Text = s
	h, q := s.Hidden, s.Heads*s.HeadDim
	top := b.top(StackText)
	top.embedding(CompEmbedding, "transformer.wte", s.Vocab, h)
	g := b.layers(StackText, "transformer.h", 0, s.Layers)
	g.norm(CompNorm, "ln_1", h, false)
	g.linear(CompAttention, "attn.c_attn", "c_attn", h, 3*q, true)
	g.linear(CompAttention, "attn.c_proj", "c_proj", q, h, !c.boolean("no_bias", true))
	g.norm(CompNorm, "ln_2", h, false)
	g.linear(CompMLP, "mlp.w1", "w1", h, f, false)
	g.linear(CompMLP, "mlp.w2", "w2", h, f, false)
	g.linear(CompMLP, "mlp.c_proj", "c_proj", f, h, false)
	top.norm(CompFinalNorm, "transformer.ln_f", h, false)
	lmHead(b, &m.Text, "lm_head", false)
}
