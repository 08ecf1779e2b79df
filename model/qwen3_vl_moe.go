package model

// readQwen3VLMoE reads Qwen3VLMoeForConditionalGeneration (Qwen3-VL-30B-A3B,
// Qwen3-VL-235B-A22B): the Qwen3-VL tower and mergers, and a Qwen3-VL-MoE
// language model (transformers
// src/transformers/models/qwen3_vl_moe/modular_qwen3_vl_moe.py@02e8340b9678).
func readQwen3VLMoE(c *config, m *Model, b *builder) {
	readQwen3VLFamily(c, m, b, "qwen3_vl_moe", "qwen3_vl_moe_text")
}

// readQwen3VLMoEText reads a Qwen3VLMoeTextConfig language model:
// Qwen3 attention (per-head q/k RMSNorms), and on every
// decoder_sparse_step-th layer outside mlp_only_layers a router "gate"
// Linear(h, E) and fused experts gate_up_proj (E, h, 2f) and down_proj
// (E, f, h) without bias (Qwen3VLMoeTextSparseMoeBlock /
// Qwen3VLMoeTextExperts), no shared expert. Qwen3VLMoeTextConfig
// defaults: 2048 wide, 24 layers, 16 heads and KV heads, MLP 5632, 60
// experts of 1408, top-4, vocab 151936, tied embeddings (a top-level
// tie_word_embeddings overrides it, see textSub).
func readQwen3VLMoEText(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 2048, layers: 24, heads: 16, kvHeads: 16, inter: 5632, vocab: 151936, maxPos: 128000, tied: true})
	s.MoE = readMoE(c, moeDefaults{experts: 60, perToken: 4, expertFFN: 1408})
	sparseStep(c, &s)
	m.Text = s
	moe, h := s.MoE, s.Hidden
	buildQwen3(c, &m.Text, b, "model", func(g group, isMoE bool) {
		g = g.sub("mlp.")
		if !isMoE {
			gatedMLP(g, CompMLP, h, s.Intermediate, false)
			return
		}
		g.linear(CompRouter, "gate", "gate", h, moe.Experts, false)
		x := g.sub("experts.")
		x.experts(CompExperts, "gate_up_proj", "gate_up_proj", moe.Experts, h, 2*moe.ExpertFFN, false)
		x.experts(CompExperts, "down_proj", "down_proj", moe.Experts, moe.ExpertFFN, h, false)
	})
}
