package model

// bartPositionOffset is the number of extra rows BART's learned position
// embeddings have (BartLearnedPositionalEmbedding: offset 2).
const bartPositionOffset = 2

// readBART reads BART (encoder-decoder): a shared embedding, learned
// positions (max_position_embeddings + 2) and a layernorm_embedding per
// stack, post-LN layers with k/v/q/out_proj and fc1/fc2 with bias, the
// decoder adding encoder_attn; lm_head is tied to the shared embedding and
// final_logits_bias is a buffer. BartModel (architectures[0] of
// bart-large) has no head at all (modeling_bart.py; BartConfig defaults:
// vocab 50265, d_model 1024, 12+12 layers, 16 heads, ffn 4096).
func readBART(c *config, m *Model, b *builder) {
	h := c.dim("d_model", 1024)
	vocab := c.dim("vocab_size", 50265)
	pos := c.intIn("max_position_embeddings", 1024, 1, maxDim)
	stack := func(pre string, layers, heads, ffn int) Stack {
		s := Stack{Hidden: h, Layers: c.layers(pre+"_layers", layers), Heads: c.dim(pre+"_attention_heads", heads),
			Intermediate: c.dim(pre+"_ffn_dim", ffn), Vocab: vocab, MaxPositions: pos,
			Norm: LayerNorm, MLP: PlainMLP, AttnBias: true, OutBias: true, MLPBias: true, TiedEmbeddings: true,
			Activation: c.str("activation_function", "gelu")}
		if s.Heads > 0 && h%s.Heads != 0 {
			c.fail(pre+"_attention_heads", "a divisor of d_model", s.Heads)
		}
		s.KVHeads, s.HeadDim = s.Heads, h/max(s.Heads, 1)
		s.LayerTypes = uniformLayers(s.Layers, FullAttention)
		return s
	}
	enc := stack("encoder", 12, 16, 4096)
	dec := stack("decoder", 12, 16, 4096)
	dec.Causal = true
	for i := range dec.LayerTypes {
		dec.LayerTypes[i].CrossAttention = true
	}
	if c.err() != nil {
		return
	}
	m.Text, m.Encoder = dec, &enc
	b.top(StackText).embedding(CompEmbedding, "model.shared", vocab, h)
	bartStack(c, b, &enc, StackEncoder, "model.encoder")
	bartStack(c, b, &m.Text, StackText, "model.decoder")
}

// bartStack adds one BART stack.
func bartStack(c *config, b *builder, s *Stack, stack, name string) {
	h := s.Hidden
	top := b.top(stack)
	top.embedding(CompEmbedding, name+".embed_positions", s.MaxPositions+bartPositionOffset, h)
	g := b.layers(stack, name+".layers", 0, s.Layers)
	attn := func(sub string) {
		a := g.sub(sub + ".")
		for _, n := range []string{"k_proj", "v_proj", "q_proj", "out_proj"} {
			a.linear(CompAttention, n, n, h, h, true)
		}
		g.norm(CompNorm, sub+"_layer_norm", h, true)
	}
	attn("self_attn")
	if stack == StackText {
		attn("encoder_attn")
	}
	plainMLP(g, "fc1", "fc2", h, s.Intermediate, true)
	g.norm(CompNorm, "final_layer_norm", h, true)
	top.norm(CompNorm, name+".layernorm_embedding", h, true)
	if c.boolean("add_final_layer_norm", false) {
		top.norm(CompFinalNorm, name+".layer_norm", h, true)
	}
}
