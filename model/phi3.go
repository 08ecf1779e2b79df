package model

// phi3Defaults are Phi3Config's defaults (configuration_phi3.py).
var phi3Defaults = dims{hidden: 3072, layers: 32, heads: 32, inter: 8192, vocab: 32064, maxPos: 4096}

// readPhi3 reads Phi-3, Phi-3.5 and Phi-4-mini: fused qkv_proj
// Linear(h, (heads + 2·kv_heads)·head_dim) and gate_up_proj
// Linear(h, 2f), no biases (Phi3Attention, Phi3MLP in modeling_phi3.py).
func readPhi3(c *config, m *Model, b *builder) {
	m.Text = readStack(c, phi3Defaults)
	buildPhi3(c, &m.Text, b, "model")
}

// buildPhi3 adds a Phi-3 decoder inventory under base.
func buildPhi3(c *config, s *Stack, b *builder, base string) {
	s.SlidingWindow = c.count("sliding_window", 0)
	if s.SlidingWindow > 0 && s.SlidingWindow < s.MaxPositions {
		s.LayerTypes = uniformLayers(s.Layers, SlidingAttention)
	}
	buildDecoder(b, s, decoderSpec{base: base, head: "lm_head", attn: attnOpts{fused: true},
		mlp: func(g group, _ bool) {
			g = g.sub("mlp.")
			g.linear(CompMLP, "gate_up_proj", "gate_up_proj", s.Hidden, 2*s.Intermediate, false)
			g.linear(CompMLP, "down_proj", "down_proj", s.Intermediate, s.Hidden, false)
		}})
}
