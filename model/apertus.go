package model

// readApertus reads Apertus (model_type "apertus"): Llama attention with
// per-head q_norm and k_norm (RMSNorm(head_dim)), pre-norms named
// attention_layernorm and feedforward_layernorm, and an MLP that is not
// gated — up_proj, the activation, down_proj (ApertusMLP is NemotronMLP,
// no biases). Its default activation, xIELU, has learned parameters,
// counted under mlp.act_fn. ApertusConfig defaults: vocab 131072, 4096
// wide, 32 layers and heads, MLP 14336, 65536 positions, untied
// (huggingface/transformers@f93a94820ddd536511187a57095b180ce9abfac0:
// src/transformers/models/apertus/modular_apertus.py).
func readApertus(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 4096, layers: 32, heads: 32, inter: 14336, vocab: 131072, maxPos: 65536, act: "xielu"})
	s.MLP = PlainMLP
	// The released configs carry the remote-code switches post_norm
	// (false) and qk_norm (true); transformers builds that layout only.
	if c.boolean("post_norm", false) {
		c.fail("post_norm", "false (transformers' Apertus normalises before each block)", true)
	}
	if !c.boolean("qk_norm", true) {
		c.fail("qk_norm", "true (transformers' Apertus always has q_norm and k_norm)", false)
	}
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias = s.AttnBias
	s.QKNorm = true
	m.Text = s
	st := &m.Text
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embed_tokens", st.Vocab, st.Hidden)
	g := b.layers(StackText, "model.layers", 0, st.Layers)
	g.norm(CompNorm, "attention_layernorm", st.Hidden, false)
	selfAttention(g, st, attnOpts{qkvBias: st.AttnBias, oBias: st.AttnBias, qNorm: st.HeadDim, kNorm: st.HeadDim})
	g.norm(CompNorm, "feedforward_layernorm", st.Hidden, false)
	mlp := g.sub("mlp.")
	plainMLP(mlp, "up_proj", "down_proj", st.Hidden, st.Intermediate, false)
	if st.Activation == "xielu" {
		// XIELUActivation's alpha_p and alpha_n are one-element
		// nn.Parameters; beta and eps are buffers (huggingface/transformers
		// v4.57.0: src/transformers/activations.py).
		mlp.param(CompMLP, KindParam, "act_fn.alpha_p", 1)
		mlp.param(CompMLP, KindParam, "act_fn.alpha_n", 1)
	}
	top.norm(CompFinalNorm, "model.norm", st.Hidden, false)
	lmHead(b, st, "lm_head", false)
}
