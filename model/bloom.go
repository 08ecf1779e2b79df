package model

// readBloom reads BLOOM: word_embeddings followed by a
// word_embeddings_layernorm, pre-LN blocks with a fused query_key_value
// (h → 3h) and dense, an MLP of fixed width 4h, all with bias, ln_f and an
// lm_head tied to the embedding. ALiBi needs no position parameters
// (modeling_bloom.py; BloomConfig defaults: vocab 250880, tied).
func readBloom(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 64, layers: 2, heads: 8, vocab: 250880, tied: true, inter: 1, act: "gelu"})
	s.Intermediate = 4 * s.Hidden // BloomMLP: dense_h_to_4h is always 4·hidden_size
	s.Norm, s.MLP = LayerNorm, PlainMLP
	s.AttnBias, s.OutBias, s.MLPBias = true, true, true
	m.Text = s
	h := s.Hidden
	top := b.top(StackText)
	top.embedding(CompEmbedding, "transformer.word_embeddings", s.Vocab, h)
	top.norm(CompNorm, "transformer.word_embeddings_layernorm", h, true)
	g := b.layers(StackText, "transformer.h", 0, s.Layers)
	g.norm(CompNorm, "input_layernorm", h, true)
	g.linear(CompAttention, "self_attention.query_key_value", "query_key_value", h, 3*h, true)
	g.linear(CompAttention, "self_attention.dense", "dense", h, h, true)
	g.norm(CompNorm, "post_attention_layernorm", h, true)
	plainMLP(g.sub("mlp."), "dense_h_to_4h", "dense_4h_to_h", h, s.Intermediate, true)
	top.norm(CompFinalNorm, "transformer.ln_f", h, true)
	lmHead(b, &m.Text, "lm_head", false)
}
