package model

// optPositionOffset is the number of extra rows OPT's learned position
// embedding has (OPTLearnedPositionalEmbedding: offset 2).
const optPositionOffset = 2

// readOPT reads OPT: token embeddings of width word_embed_proj_dim with
// project_in/project_out Linears (no bias) when it differs from
// hidden_size, learned positions (max_position_embeddings + 2 rows), q/k/v
// and out_proj with bias, fc1/fc2, two LayerNorms per layer, a final
// LayerNorm only when do_layer_norm_before (and not
// _remove_final_layer_norm), lm_head tied (modeling_opt.py; OPTConfig
// defaults: vocab 50272, 768 wide, 12 layers, ffn 3072).
func readOPT(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 768, layers: 12, heads: 12, inter: 3072, vocab: 50272, maxPos: 2048, tied: true, act: "relu"})
	s.Activation = c.str("activation_function", s.Activation)
	s.Norm, s.MLP = LayerNorm, PlainMLP
	bias := c.boolean("enable_bias", true)
	s.AttnBias, s.OutBias, s.MLPBias = bias, bias, bias
	proj := c.dim("word_embed_proj_dim", s.Hidden)
	m.Text = s
	h := s.Hidden
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.decoder.embed_tokens", s.Vocab, proj)
	top.embedding(CompEmbedding, "model.decoder.embed_positions", s.MaxPositions+optPositionOffset, h)
	if proj != h {
		top.linear(CompEmbedding, "model.decoder.project_in", "project_in", proj, h, false)
		top.linear(CompOther, "model.decoder.project_out", "project_out", h, proj, false)
	}
	g := b.layers(StackText, "model.decoder.layers", 0, s.Layers)
	a := g.sub("self_attn.")
	for _, n := range []string{"k_proj", "v_proj", "q_proj"} {
		a.linear(CompAttention, n, n, h, h, bias)
	}
	a.linear(CompAttention, "out_proj", "out_proj", h, h, bias)
	g.norm(CompNorm, "self_attn_layer_norm", h, c.boolean("layer_norm_elementwise_affine", true))
	plainMLP(g, "fc1", "fc2", h, s.Intermediate, bias)
	g.norm(CompNorm, "final_layer_norm", h, true)
	if c.boolean("do_layer_norm_before", true) && !c.boolean("_remove_final_layer_norm", false) {
		top.norm(CompFinalNorm, "model.decoder.final_layer_norm", h, true)
	}
	if !s.TiedEmbeddings {
		top.linear(CompLMHead, "lm_head", "lm_head", proj, s.Vocab, false)
	}
}
