package model

// readModernBERT reads ModernBERT (model_type "modernbert"), an encoder:
// token embeddings and a LayerNorm (embeddings.tok_embeddings,
// embeddings.norm), layers of attn_norm (an Identity in layer 0), a fused
// attn.Wqkv Linear(h, 3h) and attn.Wo, mlp_norm and a GeGLU MLP whose
// mlp.Wi Linear(h, 2f) holds both branches and mlp.Wo Linear(f, h), and a
// final_norm; LayerNorms have a bias only when norm_bias, the attention
// and MLP Linears only when attention_bias and mlp_bias. Every
// global_attn_every_n_layers-th layer (from layer 0) attends globally,
// the others to a local window of local_attention tokens (half on each
// side; layer_types, when the config writes them, say the same).
// ModernBertModel has no head; ModernBertForMaskedLM adds
// head.dense, head.norm and a decoder tied to the embeddings with a bias
// when decoder_bias (ModernBertEmbeddings, ModernBertAttention,
// ModernBertMLP, ModernBertEncoderLayer, ModernBertPredictionHead in
// huggingface/transformers v4.57.0:
// src/transformers/models/modernbert/modeling_modernbert.py;
// ModernBertConfig defaults: vocab 50368, 768 wide, 22 layers, 12 heads,
// MLP 1152, 8192 positions, no norm/attention/MLP biases, decoder_bias,
// global every 3 layers, local window 128, tied).
func readModernBERT(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 768, layers: 22, heads: 12, inter: 1152, vocab: 50368, maxPos: 8192, tied: true, act: "gelu"})
	s.Norm, s.MLP, s.Causal = LayerNorm, GatedMLP, false
	s.TiedEmbeddings = true
	every := c.intIn("global_attn_every_n_layers", 3, 1, maxLayers)
	s.SlidingWindow = c.count("local_attention", 128)
	for i := range s.LayerTypes {
		if i%every != 0 && s.SlidingWindow > 0 {
			s.LayerTypes[i].Attention = SlidingAttention
		}
	}
	readLayerTypes(c, &s) // transformers 5 writes the pattern out
	checkWindow(c, &s)
	normBias := c.boolean("norm_bias", false)
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias = s.AttnBias
	s.MLPBias = c.boolean("mlp_bias", false)
	m.Text = s
	st := &m.Text
	h := st.Hidden
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embeddings.tok_embeddings", st.Vocab, h)
	top.norm(CompNorm, "model.embeddings.norm", h, normBias)
	// Layer 0's attn_norm is an Identity.
	for _, r := range []struct{ first, n int }{{0, 1}, {1, st.Layers - 1}} {
		if r.n <= 0 {
			continue
		}
		g := b.layers(StackText, "model.layers", r.first, r.n)
		if r.first > 0 {
			g.norm(CompNorm, "attn_norm", h, normBias)
		}
		g.linear(CompAttention, "attn.Wqkv", "Wqkv", h, 3*h, st.AttnBias)
		g.linear(CompAttention, "attn.Wo", "Wo", h, h, st.AttnBias)
		g.norm(CompNorm, "mlp_norm", h, normBias)
		g.linear(CompMLP, "mlp.Wi", "Wi", h, 2*st.Intermediate, st.MLPBias)
		g.linear(CompMLP, "mlp.Wo", "Wo", st.Intermediate, h, st.MLPBias)
	}
	top.norm(CompFinalNorm, "model.final_norm", h, normBias)
	if m.Architecture == "ModernBertForMaskedLM" {
		top.linear(CompLMHead, "head.dense", "dense", h, h, c.boolean("classifier_bias", false))
		top.norm(CompLMHead, "head.norm", h, normBias)
		if c.boolean("decoder_bias", true) {
			top.param(CompLMHead, KindParam, "decoder.bias", int64(st.Vocab))
		}
	}
}
