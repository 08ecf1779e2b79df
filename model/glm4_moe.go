package model

// readGLM4MoE reads GLM-4.5, GLM-4.6 and GLM-4.7 (model_type
// "glm4_moe"): Llama-style layers whose q/k/v projections carry a bias
// when attention_bias (o_proj never does), optional per-head q_norm and
// k_norm (use_qk_norm), the first first_k_dense_replace layers with a
// dense MLP of intermediate_size and the rest with a router (a bare
// (E, h) weight; e_score_correction_bias is a buffer), n_routed_experts
// experts of moe_intermediate_size and one shared MLP of
// moe_intermediate_size × n_shared_experts (Glm4MoeAttention,
// Glm4MoeTopkRouter, Glm4MoeMoE, Glm4MoeDecoderLayer in
// huggingface/transformers@a0699c971daff96403489086fcfd07469d20b17f:
// src/transformers/models/glm4_moe/modeling_glm4_moe.py). The checkpoint's
// multi-token-prediction layer (num_nextn_predict_layers) is ignored on
// load and not counted.
//
// Defaults are Glm4MoeConfig's (vocab 151552, 4096 wide, 46 layers, 96
// heads, 8 KV heads, MLP 10944, 128 experts of 1408, top-8, one shared,
// one dense layer, untied; commit c7ec229ad64cdcf0176f669969c66c9a652e7f38
// of configuration_glm4_moe.py). head_dim defaults to hidden/heads.
func readGLM4MoE(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 4096, layers: 46, heads: 96, kvHeads: 8, inter: 10944, vocab: 151552, maxPos: 131072})
	s.MoE = readMoE(c, moeDefaults{experts: 128, perToken: 8, expertFFN: 1408})
	s.MoE.SharedExperts = c.count("n_shared_experts", 1)
	s.MoE.SharedFFN = s.MoE.SharedExperts * s.MoE.ExpertFFN
	s.MoE.DenseLayers = c.intIn("first_k_dense_replace", 1, 0, maxLayers)
	markMoELayers(&s, func(i int) bool { return i >= s.MoE.DenseLayers })
	s.AttnBias = c.boolean("attention_bias", false)
	s.QKNorm = c.boolean("use_qk_norm", false)
	m.Text = s
	st := &m.Text
	attn := attnOpts{qkvBias: st.AttnBias}
	if st.QKNorm {
		attn.qNorm, attn.kNorm = st.HeadDim, st.HeadDim
	}
	buildDecoder(b, st, decoderSpec{base: "model", head: "lm_head", attn: attn,
		mlp: func(g group, isMoE bool) {
			g = g.sub("mlp.")
			if !isMoE {
				gatedMLP(g, CompMLP, st.Hidden, st.Intermediate, false)
				return
			}
			g.linear(CompRouter, "gate", "gate", st.Hidden, st.MoE.Experts, false)
			gatedExperts(g, st.MoE.Experts, st.Hidden, st.MoE.ExpertFFN)
			if st.MoE.SharedFFN > 0 {
				gatedMLP(g.sub("shared_experts."), CompSharedExperts, st.Hidden, st.MoE.SharedFFN, false)
			}
		}})
}
