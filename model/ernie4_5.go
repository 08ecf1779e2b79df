package model

import "fmt"

// ernieDefaults are Ernie4_5Config's defaults: vocab 103424, 1024 wide,
// 18 layers, 16 heads, 2 KV heads, head_dim 128, MLP 3072, tied
// (huggingface/transformers v4.57.0:
// src/transformers/models/ernie4_5/configuration_ernie4_5.py).
var ernieDefaults = dims{hidden: 1024, layers: 18, heads: 16, kvHeads: 2, headDim: 128, inter: 3072, vocab: 103424, maxPos: 131072, tied: true}

// readErnie45 reads ERNIE 4.5 dense models (model_type "ernie4_5"): Llama
// layers whose q/k/v/o and MLP projections all carry a bias when use_bias
// (Ernie4_5Attention, Ernie4_5MLP in huggingface/transformers v4.57.0:
// src/transformers/models/ernie4_5/modeling_ernie4_5.py).
func readErnie45(c *config, m *Model, b *builder) {
	m.Text = readStack(c, ernieDefaults)
	s := &m.Text
	bias := c.boolean("use_bias", false)
	s.AttnBias, s.OutBias, s.MLPBias = bias, bias, bias
	buildDecoder(b, s, decoderSpec{base: "model", head: "lm_head", mlpBias: bias,
		attn: attnOpts{qkvBias: bias, oBias: bias}})
}

// readErnie45MoE reads ERNIE 4.5 MoE models (model_type "ernie4_5_moe"):
// ERNIE 4.5 attention, and MoE layers — every moe_layer_interval-th layer
// from moe_layer_start_index to moe_layer_end_index (-1: the last) — of an
// fp32 router "gate" Linear(h, E), moe_num_experts SwiGLU experts of
// moe_intermediate_size, a shared MLP of moe_intermediate_size ×
// moe_num_shared_experts, and moe_statics.e_score_correction_bias, an
// (1, E) nn.Parameter that transformers counts although it never trains
// (Ernie4_5_MoeStatics, Ernie4_5_MoeSparseMoeBlock,
// Ernie4_5_MoeDecoderLayer in
// huggingface/transformers@a0699c971daff96403489086fcfd07469d20b17f:
// src/transformers/models/ernie4_5_moe/modeling_ernie4_5_moe.py;
// Ernie4_5_MoeConfig defaults: 2560 wide, 28 layers, 20 heads, 4 KV heads,
// MLP 12288, 64 experts of 1536, top-6, 2 shared, MoE from layer 1, tied).
func readErnie45MoE(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 2560, layers: 28, heads: 20, kvHeads: 4, inter: 12288, vocab: 103424, maxPos: 131072, tied: true})
	s.MoE = &MoE{
		Experts:         c.intIn("moe_num_experts", 64, 1, maxExperts),
		ExpertsPerToken: c.intIn("moe_k", 6, 1, maxExperts),
		ExpertFFN:       c.dim("moe_intermediate_size", 1536),
		SharedExperts:   c.count("moe_num_shared_experts", 2),
	}
	if s.MoE.ExpertsPerToken > s.MoE.Experts {
		c.fail("moe_k", fmt.Sprintf("at most moe_num_experts (%d)", s.MoE.Experts), s.MoE.ExpertsPerToken)
	}
	s.MoE.SharedFFN = s.MoE.SharedExperts * s.MoE.ExpertFFN
	start := c.intIn("moe_layer_start_index", 1, 0, maxLayers)
	end := c.intIn("moe_layer_end_index", -1, -1, maxLayers)
	if end < 0 {
		end = s.Layers - 1
	}
	every := c.intIn("moe_layer_interval", 1, 1, maxLayers)
	markMoELayers(&s, func(i int) bool { return (i+1)%every == 0 && i >= start && i <= end })
	s.MoE.DenseLayers = min(start, s.Layers)
	bias := c.boolean("use_bias", false)
	s.AttnBias, s.OutBias, s.MLPBias = bias, bias, bias
	m.Text = s
	st := &m.Text
	moe := st.MoE
	buildDecoder(b, st, decoderSpec{base: "model", head: "lm_head", mlpBias: bias,
		attn: attnOpts{qkvBias: bias, oBias: bias},
		mlp: func(g group, isMoE bool) {
			g = g.sub("mlp.")
			if !isMoE {
				gatedMLP(g, CompMLP, st.Hidden, st.Intermediate, bias)
				return
			}
			g.param(CompRouter, KindParam, "moe_statics.e_score_correction_bias", int64(moe.Experts))
			g.linear(CompRouter, "gate", "gate", st.Hidden, moe.Experts, false)
			x := g.sub("experts.*.")
			x.experts(CompExperts, "gate_proj", "gate_proj", moe.Experts, st.Hidden, moe.ExpertFFN, bias)
			x.experts(CompExperts, "up_proj", "up_proj", moe.Experts, st.Hidden, moe.ExpertFFN, bias)
			x.experts(CompExperts, "down_proj", "down_proj", moe.Experts, moe.ExpertFFN, st.Hidden, bias)
			if moe.SharedFFN > 0 {
				gatedMLP(g.sub("shared_experts."), CompSharedExperts, st.Hidden, moe.SharedFFN, bias)
			}
		}})
}
