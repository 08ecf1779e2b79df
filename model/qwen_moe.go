package model

// readQwen2MoE reads Qwen1.5-MoE / Qwen2-MoE: Qwen2 attention (q/k/v
// bias), a router "gate", routed experts of moe_intermediate_size, one
// shared_expert of shared_expert_intermediate_size and its sigmoid
// shared_expert_gate Linear(h, 1) (Qwen2MoeSparseMoeBlock in
// modeling_qwen2_moe.py; Qwen2MoeConfig defaults).
func readQwen2MoE(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 4096, layers: 24, heads: 32, kvHeads: 32, inter: 22016, vocab: 151936, maxPos: 32768})
	qwenSliding(c, &s)
	s.MoE = readMoE(c, moeDefaults{experts: 60, perToken: 4, expertFFN: 1408})
	s.MoE.SharedFFN = c.count("shared_expert_intermediate_size", 5632)
	if s.MoE.SharedFFN > 0 {
		s.MoE.SharedExperts = 1
	}
	sparseStep(c, &s)
	s.AttnBias = c.boolean("qkv_bias", true)
	m.Text = s
	moe := s.MoE
	buildDecoder(b, &m.Text, decoderSpec{base: "model", head: "lm_head", attn: attnOpts{qkvBias: s.AttnBias},
		mlp: func(g group, isMoE bool) {
			g = g.sub("mlp.")
			if !isMoE {
				gatedMLP(g, CompMLP, s.Hidden, s.Intermediate, false)
				return
			}
			g.linear(CompRouter, "gate", "gate", s.Hidden, moe.Experts, false)
			gatedExperts(g, moe.Experts, s.Hidden, moe.ExpertFFN)
			if moe.SharedFFN > 0 {
				gatedMLP(g.sub("shared_expert."), CompSharedExperts, s.Hidden, moe.SharedFFN, false)
				g.linear(CompRouter, "shared_expert_gate", "shared_expert_gate", s.Hidden, 1, false)
			}
		}})
}

// readQwen3MoE reads Qwen3-MoE: Qwen3 attention (q/k norms), a router
// "gate" and routed experts, no shared expert (Qwen3MoeSparseMoeBlock in
// modeling_qwen3_moe.py; Qwen3MoeConfig defaults).
func readQwen3MoE(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 2048, layers: 24, heads: 32, kvHeads: 4, headDim: 128, inter: 6144, vocab: 151936, maxPos: 32768})
	qwenSliding(c, &s)
	s.MoE = readMoE(c, moeDefaults{experts: 128, perToken: 8, expertFFN: 768})
	sparseStep(c, &s)
	m.Text = s
	moe := s.MoE
	buildQwen3(c, &m.Text, b, "model", func(g group, isMoE bool) {
		g = g.sub("mlp.")
		if !isMoE {
			gatedMLP(g, CompMLP, s.Hidden, s.Intermediate, false)
			return
		}
		g.linear(CompRouter, "gate", "gate", s.Hidden, moe.Experts, false)
		gatedExperts(g, moe.Experts, s.Hidden, moe.ExpertFFN)
	})
}
