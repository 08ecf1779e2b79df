package model

import "fmt"

// readT5 reads T5 and T5 v1.1 / T0 (encoder-decoder): a shared
// embedding, per stack q/k/v/o projections of width num_heads·d_kv (no
// bias), a relative_attention_bias (buckets × heads) in the first block of
// each stack only, T5LayerNorm (weight only), DenseReluDense wi/wo or,
// for gated-* feed_forward_proj, wi_0/wi_1/wo; the decoder adds
// EncDecAttention; lm_head is tied unless tie_word_embeddings is false
// (modeling_t5.py; T5Config defaults: vocab 32128, d_model 512, d_kv 64,
// d_ff 2048, 6 layers, 8 heads, relu, tied).
func readT5(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 512, layers: 6, heads: 8, inter: 2048, vocab: 32128, tied: true, headDim: 64, act: "relu"})
	s.HeadDim = c.dim("d_kv", 64)
	ff := c.str("feed_forward_proj", "relu")
	gated := len(ff) > 6 && ff[:6] == "gated-"
	s.Activation = ff
	s.Norm, s.MLP, s.Causal = RMSNorm, PlainMLP, true
	if gated {
		s.MLP = GatedMLP
	}
	s.KVHeads = s.Heads
	buckets := c.dim("relative_attention_num_buckets", 32)
	enc := s
	enc.Causal, enc.TiedEmbeddings = false, false
	s.Layers = c.layers("num_decoder_layers", enc.Layers)
	enc.LayerTypes = uniformLayers(enc.Layers, FullAttention)
	s.LayerTypes = uniformLayers(s.Layers, FullAttention)
	for i := range s.LayerTypes {
		s.LayerTypes[i].CrossAttention = true
	}
	m.Text, m.Encoder = s, &enc
	b.top(StackText).embedding(CompEmbedding, "shared", s.Vocab, s.Hidden)
	t5Stack(b, &enc, StackEncoder, "encoder", buckets, gated)
	t5Stack(b, &m.Text, StackText, "decoder", buckets, gated)
	lmHead(b, &m.Text, "lm_head", false)
}

// t5Stack adds one T5 stack: its blocks and final_layer_norm.
func t5Stack(b *builder, s *Stack, stack, name string, buckets int, gated bool) {
	h, inner := s.Hidden, s.Heads*s.HeadDim
	attn := func(g group, sub string) {
		for _, n := range []string{"q", "k", "v"} {
			g.linear(CompAttention, sub+"."+n, n, h, inner, false)
		}
		g.linear(CompAttention, sub+".o", "o", inner, h, false)
	}
	g := b.layers(stack, name+".block", 0, s.Layers)
	attn(g, "layer.0.SelfAttention")
	g.norm(CompNorm, "layer.0.layer_norm", h, false)
	first := group{b: b, stack: stack, prefix: name + ".block.0.", first: 0, n: 1}
	first.param(CompAttention, KindEmbedding, "layer.0.SelfAttention.relative_attention_bias", int64(buckets)*int64(s.Heads))
	ffn := 1
	if stack == StackText {
		attn(g, "layer.1.EncDecAttention")
		g.norm(CompNorm, "layer.1.layer_norm", h, false)
		ffn = 2
	}
	ff := g.sub(fmt.Sprintf("layer.%d.", ffn))
	if gated {
		ff.linear(CompMLP, "DenseReluDense.wi_0", "wi_0", h, s.Intermediate, false)
		ff.linear(CompMLP, "DenseReluDense.wi_1", "wi_1", h, s.Intermediate, false)
	} else {
		ff.linear(CompMLP, "DenseReluDense.wi", "wi", h, s.Intermediate, false)
	}
	ff.linear(CompMLP, "DenseReluDense.wo", "wo", s.Intermediate, h, false)
	ff.norm(CompNorm, "layer_norm", h, false)
	b.top(stack).norm(CompFinalNorm, name+".final_layer_norm", h, false)
}
