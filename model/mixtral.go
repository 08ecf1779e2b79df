package model

// readMixtral reads MixtralForCausalLM: Mistral attention and, in every
// layer, block_sparse_moe with a router "gate" Linear(h, E, no bias) and
// E SwiGLU experts w1 (gate), w3 (up), w2 (down) of width
// intermediate_size (MixtralSparseMoeBlock in modeling_mixtral.py;
// MixtralConfig defaults).
func readMixtral(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 4096, layers: 32, heads: 32, kvHeads: 8, inter: 14336, vocab: 32000, maxPos: 4096 * 32})
	slidingAll(c, &s, 0)
	s.MoE = readMoE(c, moeDefaults{experts: 8, perToken: 2, expertFFN: s.Intermediate})
	s.MoE.ExpertFFN = s.Intermediate
	markMoELayers(&s, func(int) bool { return true })
	m.Text = s
	e := s.MoE.Experts
	buildDecoder(b, &m.Text, decoderSpec{base: "model", head: "lm_head", mlp: func(g group, _ bool) {
		g = g.sub("block_sparse_moe.")
		g.linear(CompRouter, "gate", "gate", s.Hidden, e, false)
		x := g.sub("experts.*.")
		x.experts(CompExperts, "w1", "w1", e, s.Hidden, s.Intermediate, false)
		x.experts(CompExperts, "w2", "w2", e, s.Intermediate, s.Hidden, false)
		x.experts(CompExperts, "w3", "w3", e, s.Hidden, s.Intermediate, false)
	}})
}
