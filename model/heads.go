package model

import (
	"slices"
	"strings"
)

// taskHeads are the architecture suffixes of heads other than a language
// model: they end in a few labels, not in vocabulary logits.
var taskHeads = []string{"ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering"}

// baseClasses are the transformers base classes (no head) that
// checkpoints are saved as — how embedding models ship: the decoder or
// encoder alone. Only these names count: a remote-code "...Model" class
// may well hold its LM head (InternVLChatModel, ChatGLMModel).
var baseClasses = map[string]bool{
	"LlamaModel": true, "MistralModel": true, "MixtralModel": true,
	"Qwen2Model": true, "Qwen3Model": true, "Qwen2MoeModel": true, "Qwen3MoeModel": true,
	"GemmaModel": true, "Gemma2Model": true, "Gemma3TextModel": true,
	"Phi3Model": true, "Olmo2Model": true, "SmolLM3Model": true,
	"BertModel": true, "XLMRobertaModel": true, "ModernBertModel": true,
}

// headless reports whether architectures[0] names a model without an
// output head over the vocabulary: a base class saved as such
// (baseClasses: "Qwen3Model", "LlamaModel", "XLMRobertaModel", ...) or a
// task head. Encoder-decoders keep their reading (BART's configs list
// BartModel first and still describe the sequence-to-sequence LM).
func headless(m *Model) bool {
	if m.Encoder != nil {
		return false
	}
	a := m.Architecture
	for _, h := range taskHeads {
		if strings.HasSuffix(a, h) {
			return true
		}
	}
	return baseClasses[a]
}

// dropLMHead marks m as having no LM head. A decoder saved as its base
// class loses the lm_head its family reader added (the checkpoint has
// none); a decoder with a task head gets transformers' generic score
// Linear(h, num_labels) instead (GenericForSequenceClassification and
// GenericForTokenClassification in huggingface/transformers v4.57.0:
// src/transformers/modeling_layers.py). Encoders already built their own
// heads from architectures[0].
func dropLMHead(c *config, m *Model, b *builder) {
	m.NoLMHead = true
	if !m.Text.Causal {
		return
	}
	b.mods = slices.DeleteFunc(b.mods, func(mod Module) bool {
		return mod.Component == CompLMHead && mod.Stack == StackText
	})
	a := m.Architecture
	switch {
	case strings.HasSuffix(a, "ForSequenceClassification"):
		b.top(StackText).linear(CompLMHead, "score", "score", m.Text.Hidden, numLabels(c), false)
	case strings.HasSuffix(a, "ForTokenClassification"):
		b.top(StackText).linear(CompLMHead, "score", "score", m.Text.Hidden, numLabels(c), true)
	case strings.HasSuffix(a, "ForQuestionAnswering"):
		b.top(StackText).linear(CompLMHead, "qa_outputs", "qa_outputs", m.Text.Hidden, 2, true)
	}
}

// numLabels is the classifier width: num_labels, else the size of
// id2label, else PretrainedConfig's default of 2.
func numLabels(c *config) int {
	labels := 0
	if id2 := c.sub("id2label"); id2 != nil {
		labels = len(id2.m)
	}
	return c.dim("num_labels", max(labels, 2))
}
