package model

// readOLMoE reads OLMoE: RMSNorm on q and k over their full projection
// widths (OlmoeAttention.q_norm = RMSNorm(hidden), k_norm =
// RMSNorm(head_dim × kv_heads)), a router "gate" and experts whose width
// is intermediate_size (OlmoeSparseMoeBlock; OlmoeConfig defaults in
// configuration_olmoe.py: vocab 50304, 16 layers, 64 experts, top-8, untied).
func readOLMoE(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 2048, layers: 16, heads: 16, inter: 2048, vocab: 50304, maxPos: 4096})
	s.MoE = readMoE(c, moeDefaults{experts: 64, perToken: 8, expertFFN: s.Intermediate})
	s.MoE.ExpertFFN = s.Intermediate
	s.QKNorm = true
	s.AttnBias = c.boolean("attention_bias", false)
	markMoELayers(&s, func(int) bool { return true })
	m.Text = s
	moe := s.MoE
	buildDecoder(b, &m.Text, decoderSpec{base: "model", head: "lm_head",
		attn: attnOpts{qkvBias: s.AttnBias, oBias: s.AttnBias, qNorm: s.Heads * s.HeadDim, kNorm: s.KVHeads * s.HeadDim},
		mlp: func(g group, _ bool) {
			g = g.sub("mlp.")
			g.linear(CompRouter, "gate", "gate", s.Hidden, moe.Experts, false)
			gatedExperts(g, moe.Experts, s.Hidden, moe.ExpertFFN)
		}})
}
