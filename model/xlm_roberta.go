package model

import "strings"

// readXLMRoberta reads XLM-RoBERTa (model_type "xlm-roberta"; RoBERTa's
// layout under "roberta."): BERT's post-LN encoder with
// max_position_embeddings rows of position embeddings (514 in the
// releases: padding_idx + 1 offsets the positions) and one token type by
// default (XLMRobertaEmbeddings, XLMRobertaLayer in
// huggingface/transformers v4.57.0:
// src/transformers/models/xlm_roberta/modeling_xlm_roberta.py;
// XLMRobertaConfig defaults: vocab 30522, 768 wide, 12 layers and heads,
// MLP 3072, 512 positions, 2 token types — the released configs set
// their own).
//
// The head follows architectures[0]: XLMRobertaModel adds the pooler
// (add_pooling_layer defaults to true); XLMRobertaForMaskedLM adds
// lm_head (dense, layer_norm, a decoder tied to the word embeddings and
// a vocab-sized bias) and no pooler; *ForSequenceClassification adds
// classifier.dense and classifier.out_proj (XLMRobertaClassificationHead)
// and no pooler.
func readXLMRoberta(c *config, m *Model, b *builder) {
	m.Text = readStack(c, dims{hidden: 768, layers: 12, heads: 12, inter: 3072, vocab: 30522, maxPos: 512, act: "gelu"})
	top := buildBERTEncoder(c, m, b, "roberta", 2)
	h, arch := m.Text.Hidden, m.Architecture
	switch {
	case arch == "XLMRobertaForMaskedLM" || arch == "XLMRobertaForCausalLM":
		top.linear(CompLMHead, "lm_head.dense", "dense", h, h, true)
		top.norm(CompLMHead, "lm_head.layer_norm", h, true)
		top.param(CompLMHead, KindParam, "lm_head.bias", int64(m.Text.Vocab))
	case strings.HasSuffix(arch, "ForSequenceClassification"):
		top.linear(CompLMHead, "classifier.dense", "dense", h, h, true)
		top.linear(CompLMHead, "classifier.out_proj", "out_proj", h, numLabels(c), true)
	case strings.HasSuffix(arch, "ForTokenClassification"):
		top.linear(CompLMHead, "classifier", "classifier", h, numLabels(c), true)
	default: // XLMRobertaModel
		top.linear(CompOther, "roberta.pooler.dense", "dense", h, h, true)
	}
}
