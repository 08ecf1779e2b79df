package model

// readGPT2 reads GPT-2: learned position embeddings wpe, pre-LN blocks
// with Conv1D c_attn (h → 3h), c_proj, an MLP c_fc (h → n_inner, default
// 4h) and c_proj, all with bias; ln_f; lm_head tied to wte (modeling_gpt2.py;
// GPT2Config defaults: vocab 50257, 1024 positions, 768 wide, 12 layers).
// The per-layer attn.bias causal mask is a buffer, not a parameter.
func readGPT2(c *config, m *Model, b *builder) {
	s := readGPTStack(c, dims{hidden: 768, layers: 12, heads: 12, vocab: 50257, maxPos: 1024, tied: true, act: "gelu_new"})
	m.Text = s
	buildGPT(b, &m.Text, 3*s.Hidden)
}

// readGPTBigCode reads GPT-BigCode (StarCoder, SantaCoder): GPT-2 blocks
// whose c_attn is h → h + 2·head_dim under multi_query (one shared K/V
// head), else 3h (GPTBigCodeAttention; GPTBigCodeConfig defaults as GPT-2,
// multi_query true).
func readGPTBigCode(c *config, m *Model, b *builder) {
	s := readGPTStack(c, dims{hidden: 768, layers: 12, heads: 12, vocab: 50257, maxPos: 1024, tied: true, act: "gelu_pytorch_tanh"})
	qkv := 3 * s.Hidden
	if c.boolean("multi_query", true) {
		s.KVHeads = 1
		qkv = s.Hidden + 2*s.HeadDim
	}
	m.Text = s
	buildGPT(b, &m.Text, qkv)
}

// readGPTStack reads the GPT-2 style dimensions (n_embd, n_layer, n_head,
// n_inner with 4·n_embd when null, n_positions).
func readGPTStack(c *config, d dims) Stack {
	d.inter = 1
	s := readStack(c, d)
	if !c.has("intermediate_size") {
		s.Intermediate = 4 * s.Hidden
	}
	s.Activation = c.str("activation_function", s.Activation)
	s.Norm, s.MLP = LayerNorm, PlainMLP
	s.AttnBias, s.OutBias, s.MLPBias = true, true, true
	return s
}

// buildGPT adds a GPT-2 style inventory with a fused c_attn of width qkv.
func buildGPT(b *builder, s *Stack, qkv int) {
	h := s.Hidden
	top := b.top(StackText)
	top.embedding(CompEmbedding, "transformer.wte", s.Vocab, h)
	top.embedding(CompEmbedding, "transformer.wpe", s.MaxPositions, h)
	g := b.layers(StackText, "transformer.h", 0, s.Layers)
	g.norm(CompNorm, "ln_1", h, true)
	g.linear(CompAttention, "attn.c_attn", "c_attn", h, qkv, true)
	g.linear(CompAttention, "attn.c_proj", "c_proj", h, h, true)
	g.norm(CompNorm, "ln_2", h, true)
	g.linear(CompMLP, "mlp.c_fc", "c_fc", h, s.Intermediate, true)
	g.linear(CompMLP, "mlp.c_proj", "c_proj", s.Intermediate, h, true)
	top.norm(CompFinalNorm, "transformer.ln_f", h, true)
	lmHead(b, s, "lm_head", false)
}
