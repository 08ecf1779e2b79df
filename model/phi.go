package model

// readPhi reads Phi-1/1.5/2, both transformers' "phi" schema and the
// legacy remote-code "phi-msft" schema (n_embd, n_layer, n_head, n_inner,
// rotary_dim). transformers' PhiForCausalLM: a parallel block with one
// LayerNorm per layer, q/k/v and "dense" projections with bias, a plain
// fc1/fc2 MLP (default width 4h), final_layernorm and an lm_head with bias
// (modeling_phi.py; PhiConfig defaults: vocab 51200, 2048 wide, 24 layers).
func readPhi(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 2048, layers: 24, heads: 32, vocab: 51200, maxPos: 2048, inter: 1, act: "gelu_new"})
	if !c.has("intermediate_size") {
		s.Intermediate = 4 * s.Hidden // n_inner: null means 4·n_embd
	}
	s.Activation = c.str("activation_function", s.Activation)
	s.Norm, s.MLP, s.ParallelBlock = LayerNorm, PlainMLP, true
	s.AttnBias, s.OutBias, s.MLPBias = true, true, true
	m.Text = s
	h := s.Hidden
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embed_tokens", s.Vocab, h)
	g := b.layers(StackText, "model.layers", 0, s.Layers)
	g.norm(CompNorm, "input_layernorm", h, true)
	a := g.sub("self_attn.")
	q, kv := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	a.linear(CompAttention, "q_proj", "q_proj", h, q, true)
	a.linear(CompAttention, "k_proj", "k_proj", h, kv, true)
	a.linear(CompAttention, "v_proj", "v_proj", h, kv, true)
	a.linear(CompAttention, "dense", "dense", q, h, true)
	if c.boolean("qk_layernorm", false) {
		a.norm(CompNorm, "q_layernorm", s.HeadDim, true)
		a.norm(CompNorm, "k_layernorm", s.HeadDim, true)
	}
	plainMLP(g.sub("mlp."), "fc1", "fc2", h, s.Intermediate, true)
	top.norm(CompFinalNorm, "model.final_layernorm", h, true)
	lmHead(b, &m.Text, "lm_head", true)
}

// plainMLP adds an up/down MLP (Linear, activation, Linear).
func plainMLP(g group, up, down string, h, f int, bias bool) {
	g.linear(CompMLP, up, up, h, f, bias)
	g.linear(CompMLP, down, down, f, h, bias)
}
