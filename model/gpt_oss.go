package model

// readGPTOSS reads gpt-oss: attention with biases on q/k/v/o and a learned
// sink per head; a router Linear(h, E) with bias; experts stored as fused
// tensors gate_up_proj (E, h, 2f) with bias (E, 2f) and down_proj
// (E, f, h) with bias (E, h) (GptOssAttention, GptOssTopKRouter,
// GptOssExperts in modeling_gpt_oss.py). Layers alternate sliding and full
// attention (GptOssConfig.layer_types; defaults: 36 layers, 128 experts,
// top-4, head_dim 64, window 128).
func readGPTOSS(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 2880, layers: 36, heads: 64, kvHeads: 8, headDim: 64, inter: 2880, vocab: 201088, maxPos: 131072})
	s.SlidingWindow = c.count("sliding_window", 128)
	for i := range s.LayerTypes {
		if i%2 == 0 && s.SlidingWindow > 0 {
			s.LayerTypes[i].Attention = SlidingAttention
		}
	}
	readLayerTypes(c, &s)
	s.MoE = readMoE(c, moeDefaults{experts: 128, perToken: 4, expertFFN: s.Intermediate})
	s.MoE.ExpertFFN = s.Intermediate
	s.MoE.RouterBias = true
	s.AttnBias = c.boolean("attention_bias", true)
	s.OutBias = s.AttnBias
	markMoELayers(&s, func(int) bool { return true })
	m.Text = s
	e, f := s.MoE.Experts, s.Intermediate
	buildDecoder(b, &m.Text, decoderSpec{base: "model", head: "lm_head",
		attn: attnOpts{qkvBias: s.AttnBias, oBias: s.AttnBias, sinks: true},
		mlp: func(g group, _ bool) {
			g = g.sub("mlp.")
			g.linear(CompRouter, "router", "router", s.Hidden, e, true)
			x := g.sub("experts.")
			x.experts(CompExperts, "gate_up_proj", "gate_up_proj", e, s.Hidden, 2*f, true)
			x.experts(CompExperts, "down_proj", "down_proj", e, f, s.Hidden, true)
		}})
}
