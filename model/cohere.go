package model

import "fmt"

// cohereDefaults are CohereConfig's and Cohere2Config's shared defaults:
// vocab 256000, 8192 wide, 40 layers, 64 heads, MLP 22528, 8192
// positions, tied embeddings (huggingface/transformers v4.57.0:
// src/transformers/models/cohere/configuration_cohere.py,
// src/transformers/models/cohere2/configuration_cohere2.py).
var cohereDefaults = dims{hidden: 8192, layers: 40, heads: 64, inter: 22528, vocab: 256000, maxPos: 8192, tied: true}

// readCohere reads Command R and Aya (model_type "cohere"): a parallel
// block — attention and the gated MLP both read one input_layernorm and
// their outputs are added to the residual together — whose LayerNorms
// have a weight and no bias (CohereLayerNorm), q/k/v/o biases when
// attention_bias, and, when use_qk_norm, CohereLayerNorms over each head
// of q and k (weights of heads × head_dim and kv_heads × head_dim)
// (CohereAttention, CohereDecoderLayer in huggingface/transformers
// v4.57.0: src/transformers/models/cohere/modeling_cohere.py).
func readCohere(c *config, m *Model, b *builder) {
	s := readStack(c, cohereDefaults)
	s.QKNorm = c.boolean("use_qk_norm", false)
	m.Text = s
	buildCohere(c, b, &m.Text)
}

// readCohere2 reads Command R7B and Command A (model_type "cohere2"):
// Cohere's parallel block without q/k norms, and sliding-window attention
// on three of every four layers (sliding_window_pattern, default 4; or
// layer_types), the global layers applying no rotary embedding
// (Cohere2Attention: RoPE only with a sliding window;
// huggingface/transformers@ca095230eda56a13ead849509f02fbaaa9b3f0e0:
// src/transformers/models/cohere2/modeling_cohere2.py).
func readCohere2(c *config, m *Model, b *builder) {
	s := readStack(c, cohereDefaults)
	s.SlidingWindow = c.count("sliding_window", 4096)
	period := c.intIn("sliding_window_pattern", 4, 1, maxLayers)
	if !c.has("layer_types") && period > s.Layers {
		c.fail("sliding_window_pattern", fmt.Sprintf("at most num_hidden_layers (%d)", s.Layers), period)
	}
	for i := range s.LayerTypes {
		if (i+1)%period != 0 && s.SlidingWindow > 0 {
			s.LayerTypes[i].Attention = SlidingAttention
		}
	}
	readLayerTypes(c, &s)
	checkWindow(c, &s)
	for i := range s.LayerTypes {
		s.LayerTypes[i].NoPE = s.LayerTypes[i].Attention != SlidingAttention
	}
	m.Text = s
	buildCohere(c, b, &m.Text)
}

// buildCohere adds a Cohere decoder: one weight-only LayerNorm per layer,
// attention and MLP side by side, a final weight-only norm, and an
// lm_head unless tied.
func buildCohere(c *config, b *builder, s *Stack) {
	s.Norm, s.ParallelBlock = LayerNorm, true
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias = s.AttnBias
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embed_tokens", s.Vocab, s.Hidden)
	g := b.layers(StackText, "model.layers", 0, s.Layers)
	g.norm(CompNorm, "input_layernorm", s.Hidden, false)
	attn := attnOpts{qkvBias: s.AttnBias, oBias: s.AttnBias}
	if s.QKNorm {
		attn.qNorm, attn.kNorm = s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	}
	selfAttention(g, s, attn)
	gatedMLP(g.sub("mlp."), CompMLP, s.Hidden, s.Intermediate, false)
	top.norm(CompFinalNorm, "model.norm", s.Hidden, false)
	lmHead(b, s, "lm_head", false)
}
