package model

// readGPTNeoX reads GPT-NeoX, Pythia and StableLM-alpha: LayerNorms with
// bias, a fused query_key_value (h → 3h) and dense, dense_h_to_4h /
// dense_4h_to_h, all with bias; untied embed_in / embed_out
// (modeling_gpt_neox.py; GPTNeoXConfig defaults: vocab 50432, 6144 wide,
// 44 layers, 64 heads, intermediate 24576, parallel residual, untied).
// The attention.bias / masked_bias / rotary inv_freq tensors some
// checkpoints store are buffers, not parameters.
func readGPTNeoX(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 6144, layers: 44, heads: 64, inter: 24576, vocab: 50432, maxPos: 2048, act: "gelu"})
	s.Norm, s.MLP = LayerNorm, PlainMLP
	s.ParallelBlock = c.boolean("use_parallel_residual", true)
	bias := c.boolean("attention_bias", true)
	s.AttnBias, s.OutBias, s.MLPBias = bias, bias, true
	m.Text = s
	h := s.Hidden
	top := b.top(StackText)
	top.embedding(CompEmbedding, "gpt_neox.embed_in", s.Vocab, h)
	g := b.layers(StackText, "gpt_neox.layers", 0, s.Layers)
	g.norm(CompNorm, "input_layernorm", h, true)
	g.norm(CompNorm, "post_attention_layernorm", h, true)
	g.linear(CompAttention, "attention.query_key_value", "query_key_value", h, 3*s.Heads*s.HeadDim, bias)
	g.linear(CompAttention, "attention.dense", "dense", s.Heads*s.HeadDim, h, bias)
	plainMLP(g.sub("mlp."), "dense_h_to_4h", "dense_4h_to_h", h, s.Intermediate, true)
	top.norm(CompFinalNorm, "gpt_neox.final_layer_norm", h, true)
	lmHead(b, &m.Text, "embed_out", false)
}
