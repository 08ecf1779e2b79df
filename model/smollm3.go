package model

import "fmt"

// readSmolLM3 reads SmolLM3 (model_type "smollm3"): Llama layers (q/k/v/o
// biases when attention_bias, MLP biases when mlp_bias) in which some
// layers apply no rotary embedding — no_rope_layers holds 1 for a layer
// with RoPE and 0 for a NoPE layer, by default every
// no_rope_layer_interval-th layer (4) is NoPE — and optional sliding
// windows as Qwen2's (use_sliding_window from max_window_layers on).
// SmolLM3Config ties the embeddings by default (vocab 128256, 2048 wide,
// 36 layers, 16 heads, 4 KV heads, MLP 11008; huggingface/transformers
// v4.57.0: src/transformers/models/smollm3/configuration_smollm3.py and
// modeling_smollm3.py).
func readSmolLM3(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 2048, layers: 36, heads: 16, kvHeads: 4, inter: 11008, vocab: 128256, maxPos: 32768, tied: true})
	qwenSliding(c, &s)
	rope := c.ints("no_rope_layers", 0, 1)
	switch {
	case rope == nil:
		every := c.intIn("no_rope_layer_interval", 4, 1, maxLayers)
		for i := range s.LayerTypes {
			s.LayerTypes[i].NoPE = (i+1)%every == 0
		}
	case len(rope) != s.Layers:
		c.fail("no_rope_layers", fmt.Sprintf("%d entries (num_hidden_layers)", s.Layers), len(rope))
	default:
		for i, r := range rope {
			s.LayerTypes[i].NoPE = r == 0
		}
	}
	m.Text = s
	buildLlama(c, &m.Text, b, "model")
}
