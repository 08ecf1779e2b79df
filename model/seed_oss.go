package model

// readSeedOSS reads Seed-OSS (model_type "seed_oss"): Llama layers with
// biases on q, k and v when attention_bias, on o_proj when
// attention_out_bias, on the MLP when mlp_bias (SeedOssAttention,
// SeedOssMLP in huggingface/transformers v4.57.0:
// src/transformers/models/seed_oss/modeling_seed_oss.py; SeedOssConfig
// defaults: vocab 155136, 4096 wide, 64 layers, 80 heads, 8 KV heads,
// head_dim 128, MLP 27648, attention_bias true, untied).
func readSeedOSS(c *config, m *Model, b *builder) {
	m.Text = readStack(c, dims{hidden: 4096, layers: 64, heads: 80, kvHeads: 8, headDim: 128, inter: 27648, vocab: 155136, maxPos: 524288})
	s := &m.Text
	s.AttnBias = c.boolean("attention_bias", true)
	s.OutBias = c.boolean("attention_out_bias", false)
	s.MLPBias = c.boolean("mlp_bias", false)
	buildDecoder(b, s, decoderSpec{base: "model", head: "lm_head", mlpBias: s.MLPBias,
		attn: attnOpts{qkvBias: s.AttnBias, oBias: s.OutBias}})
}
