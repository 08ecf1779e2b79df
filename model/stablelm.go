package model

// readStableLM reads StableLM 2 / StableLM-3B-4E1T (model_type
// "stablelm", modeling_stablelm.py): Llama layers with LayerNorms that
// have biases, q/k/v biases when use_qkv_bias, optional per-head q/k
// LayerNorms (qk_layernorm), no post_attention_layernorm under
// use_parallel_residual, an untied lm_head by default (StableLmConfig
// defaults: vocab 50304, 2560 wide, 32 layers, 32 heads, MLP 6912).
// The older StableLM-alpha checkpoints are GPT-NeoX models.
func readStableLM(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 2560, layers: 32, heads: 32, inter: 6912, vocab: 50304, maxPos: 4096})
	s.Norm = LayerNorm
	s.AttnBias = c.boolean("use_qkv_bias", false)
	s.QKNorm = c.boolean("qk_layernorm", false)
	s.ParallelBlock = c.boolean("use_parallel_residual", false)
	m.Text = s
	buildDecoder(b, &m.Text, decoderSpec{base: "model", head: "lm_head", normBias: true, noPostNorm: s.ParallelBlock,
		attn: attnOpts{qkvBias: s.AttnBias, perHeadNorms: s.QKNorm}})
}
