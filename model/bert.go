package model

import "strings"

// readBERT reads BERT (an encoder-only model, described as the Text
// stack with Causal false): word, position and token-type embeddings with
// a LayerNorm; post-LN layers with query/key/value and attention.output
// dense, intermediate and output dense, all with bias (modeling_bert.py;
// BertConfig defaults: vocab 30522, 768 wide, 12 layers, 512 positions,
// 2 token types).
//
// The head follows architectures[0]: BertModel adds the pooler;
// BertForMaskedLM drops the pooler and adds cls.predictions (transform
// dense + LayerNorm, a decoder tied to word_embeddings, and a vocab-sized
// bias); *ForSequenceClassification adds the pooler and a classifier.
func readBERT(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 768, layers: 12, heads: 12, inter: 3072, vocab: 30522, maxPos: 512, act: "gelu"})
	m.Text = s
	top := buildBERTEncoder(c, m, b, "bert", 2)
	bertHead(c, m, top)
}

// buildBERTEncoder adds a BERT-style post-LN encoder under prefix ("bert",
// "roberta"): word, position and token-type embeddings with a LayerNorm,
// then layers of query/key/value and attention.output dense + LayerNorm,
// intermediate and output dense + LayerNorm, all with bias. It sets the
// stack's encoder flags and returns the group for the head's modules.
func buildBERTEncoder(c *config, m *Model, b *builder, prefix string, typeDefault int) group {
	s := &m.Text
	s.Norm, s.MLP, s.Causal = LayerNorm, PlainMLP, false
	s.AttnBias, s.OutBias, s.MLPBias = true, true, true
	s.TiedEmbeddings = true // no separate output matrix in any BERT head
	s.LayerTypes = uniformLayers(s.Layers, FullAttention)
	types := c.dim("type_vocab_size", typeDefault)
	h := s.Hidden
	top := b.top(StackText)
	top.embedding(CompEmbedding, prefix+".embeddings.word_embeddings", s.Vocab, h)
	top.embedding(CompEmbedding, prefix+".embeddings.position_embeddings", s.MaxPositions, h)
	top.embedding(CompEmbedding, prefix+".embeddings.token_type_embeddings", types, h)
	top.norm(CompNorm, prefix+".embeddings.LayerNorm", h, true)
	g := b.layers(StackText, prefix+".encoder.layer", 0, s.Layers)
	for _, n := range []string{"query", "key", "value"} {
		g.linear(CompAttention, "attention.self."+n, n, h, h, true)
	}
	g.linear(CompAttention, "attention.output.dense", "dense", h, h, true)
	g.norm(CompNorm, "attention.output.LayerNorm", h, true)
	g.linear(CompMLP, "intermediate.dense", "dense", h, s.Intermediate, true)
	g.linear(CompMLP, "output.dense", "dense", s.Intermediate, h, true)
	g.norm(CompNorm, "output.LayerNorm", h, true)
	return top
}

// bertHead adds the modules of the head architectures[0] names.
func bertHead(c *config, m *Model, top group) {
	h, arch := m.Text.Hidden, m.Architecture
	pooler := func() { top.linear(CompOther, "bert.pooler.dense", "dense", h, h, true) }
	mlm := func() {
		top.linear(CompLMHead, "cls.predictions.transform.dense", "dense", h, h, true)
		top.norm(CompLMHead, "cls.predictions.transform.LayerNorm", h, true)
		top.param(CompLMHead, KindParam, "cls.predictions.bias", int64(m.Text.Vocab))
	}
	switch {
	case arch == "BertForMaskedLM" || arch == "BertLMHeadModel":
		mlm()
	case arch == "BertForPreTraining":
		pooler()
		mlm()
		top.linear(CompLMHead, "cls.seq_relationship", "seq_relationship", h, 2, true)
	case strings.HasSuffix(arch, "ForSequenceClassification") || strings.HasSuffix(arch, "ForTokenClassification"):
		if strings.HasSuffix(arch, "ForSequenceClassification") {
			pooler()
		}
		top.linear(CompLMHead, "classifier", "classifier", h, numLabels(c), true)
	default: // BertModel
		pooler()
	}
}
