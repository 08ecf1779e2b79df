package model

import "fmt"

// readMiniMaxM2 reads MiniMax-M2 and M2.x (model_type "minimax_m2"): full
// attention in every layer with RMSNorms over the whole query and key
// projections (MiniMaxM2Attention is FlexOlmoAttention: q_norm =
// RMSNorm(heads · head_dim), k_norm = RMSNorm(kv_heads · head_dim); no
// biases), and in every layer a MoE of num_local_experts experts of
// intermediate_size, stored fused (MixtralExperts: gate_up_proj
// (E, 2f, h), down_proj (E, h, f)), with a bias-free router (E, h); its
// e_score_correction_bias is a buffer. No shared expert
// (huggingface/transformers@ea9df1d3bd9784aa7e6abd8f4be29551dd58d6d8:
// src/transformers/models/minimax_m2/modular_minimax_m2.py; MiniMaxM2Config
// defaults: vocab 200064, 3072 wide, 62 layers, 48 heads, 8 KV heads,
// head_dim 128, 256 experts of 1536, top-8, untied). The remote-code keys
// for multi-token prediction (use_mtp, num_mtp_modules) build nothing in
// transformers and the release checkpoints store no MTP weights.
//
// Keys of the remote-code schema that would change the layout are
// refused: a shared expert (shared_intermediate_size > 0), an
// attn_type_list with linear-attention layers (MiniMax-M1's lightning
// attention), and qk_norm_type other than "per_layer".
func readMiniMaxM2(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 3072, layers: 62, heads: 48, kvHeads: 8, headDim: 128, inter: 1536, vocab: 200064, maxPos: 196608})
	s.MoE = readMoE(c, moeDefaults{experts: 256, perToken: 8, expertFFN: s.Intermediate})
	s.MoE.ExpertFFN = s.Intermediate
	if n := c.count("shared_intermediate_size", 0); n > 0 {
		c.fail("shared_intermediate_size", "0 (MiniMaxM2 builds no shared expert)", n)
	}
	if t := c.str("qk_norm_type", "per_layer"); t != "per_layer" {
		c.fail("qk_norm_type", `"per_layer" (norms over the whole q and k projections)`, t)
	}
	if kinds := c.ints("attn_type_list", 0, 1); kinds != nil {
		if len(kinds) != s.Layers {
			c.fail("attn_type_list", fmt.Sprintf("%d entries (num_hidden_layers)", s.Layers), len(kinds))
		}
		for i, k := range kinds {
			if k != 1 {
				c.fail(fmt.Sprintf("attn_type_list[%d]", i), "1 (full attention; 0 is MiniMax-M1's lightning attention)", k)
				break
			}
		}
	}
	markMoELayers(&s, func(int) bool { return true })
	s.QKNorm = true
	m.Text = s
	st := &m.Text
	buildDecoder(b, st, decoderSpec{base: "model", head: "lm_head",
		attn: attnOpts{qNorm: st.Heads * st.HeadDim, kNorm: st.KVHeads * st.HeadDim},
		mlp: func(g group, _ bool) {
			g = g.sub("mlp.")
			g.linear(CompRouter, "gate", "gate", st.Hidden, st.MoE.Experts, false)
			fusedGatedExperts(g, st.MoE.Experts, st.Hidden, st.MoE.ExpertFFN)
		}})
}
