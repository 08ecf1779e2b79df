package model

// readFalcon reads Falcon, including the RefinedWeb / RefinedWebModel
// remote-code schema (n_head, n_head_kv, n_layer) of falcon-40b
// (modeling_falcon.py; FalconConfig defaults: vocab 65024, 4544 wide, 32
// layers, 71 heads, tied, parallel attention, no bias).
//
// query_key_value is h → (heads + 2·kv_heads)·head_dim for the new
// decoder architecture (grouped KV; RefinedWeb configs with n_head_kv),
// h + 2·head_dim under multi_query, 3h otherwise. New-architecture layers
// have two LayerNorms (ln_attn, ln_mlp); the others one input_layernorm
// (plus post_attention_layernorm when attention is not parallel).
func readFalcon(c *config, m *Model, b *builder) {
	rw := m.ModelType == "RefinedWeb" || m.ModelType == "RefinedWebModel" || m.Architecture == "RWForCausalLM"
	s := readStack(c, dims{hidden: 4544, layers: 32, heads: 71, kvHeads: 1, vocab: 65024, maxPos: 2048, tied: true, inter: 1, act: "gelu"})
	s.Intermediate = c.dim("ffn_hidden_size", 4*s.Hidden)
	s.Norm, s.MLP = LayerNorm, PlainMLP
	s.ParallelBlock = c.boolean("parallel_attn", true)
	bias := c.boolean("bias", false)
	s.AttnBias, s.OutBias, s.MLPBias = bias, bias, bias
	newArch := c.boolean("new_decoder_architecture", rw && c.has("num_key_value_heads"))
	qkv := 3 * s.Hidden
	switch {
	case newArch:
		qkv = (s.Heads + 2*s.KVHeads) * s.HeadDim
	case c.boolean("multi_query", true):
		s.KVHeads = 1
		qkv = s.Hidden + 2*s.HeadDim
	default:
		s.KVHeads = s.Heads
	}
	m.Text = s
	h := s.Hidden
	top := b.top(StackText)
	top.embedding(CompEmbedding, "transformer.word_embeddings", s.Vocab, h)
	g := b.layers(StackText, "transformer.h", 0, s.Layers)
	switch {
	case newArch && c.intIn("num_ln_in_parallel_attn", 2, 1, 2) == 2:
		g.norm(CompNorm, "ln_attn", h, true)
		g.norm(CompNorm, "ln_mlp", h, true)
	default:
		g.norm(CompNorm, "input_layernorm", h, true)
		if !s.ParallelBlock {
			g.norm(CompNorm, "post_attention_layernorm", h, true)
		}
	}
	g.linear(CompAttention, "self_attention.query_key_value", "query_key_value", h, qkv, bias)
	g.linear(CompAttention, "self_attention.dense", "dense", h, h, bias)
	plainMLP(g.sub("mlp."), "dense_h_to_4h", "dense_4h_to_h", h, s.Intermediate, bias)
	top.norm(CompFinalNorm, "transformer.ln_f", h, true)
	lmHead(b, &m.Text, "lm_head", false)
}
