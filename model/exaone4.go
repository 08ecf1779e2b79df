package model

import "fmt"

// readEXAONE4 reads EXAONE 4.0 (model_type "exaone4"): OLMo 2's
// post-block norms (Exaone4DecoderLayer is Olmo2DecoderLayer) with
// per-head q_norm and k_norm (RMSNorm(head_dim)), no biases, and hybrid
// attention: sliding-window layers in the sliding_window_pattern and
// global layers that apply no rotary embedding (Exaone4Attention: RoPE
// only when sliding_window is null or the layer slides). Defaults are
// Exaone4Config's, untied
// (huggingface/transformers@008e574391258935f3ecc3035c882e73bbcac419:
// src/transformers/models/exaone4/modular_exaone4.py).
//
// Without layer_types, sliding_window_pattern is either a period (every
// pattern-th layer global) or a string of "L" (local) and "G" (global)
// repeated over the layers, whose last layer is always global; a null
// sliding_window makes every layer global with RoPE.
func readEXAONE4(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 4096, layers: 32, heads: 32, inter: 16384, vocab: 102400, maxPos: 2048})
	s.SlidingWindow = c.count("sliding_window", 4096)
	if c.lookupNull("sliding_window") {
		s.SlidingWindow = 0
	}
	if s.SlidingWindow > 0 {
		exaoneLayers(c, &s)
	}
	readLayerTypes(c, &s)
	checkWindow(c, &s)
	for i := range s.LayerTypes {
		s.LayerTypes[i].NoPE = s.SlidingWindow > 0 && s.LayerTypes[i].Attention != SlidingAttention
	}
	m.Text = s
	buildPostNorm(c, b, &m.Text, false)
}

// exaoneLayers marks sliding layers from sliding_window_pattern (an
// integer period, default 4, or an "L"/"G" string).
func exaoneLayers(c *config, s *Stack) {
	v, _, ok := c.lookup("sliding_window_pattern")
	if p, isStr := v.(string); ok && isStr {
		if p == "" {
			c.fail("sliding_window_pattern", `letters "L" (local) and "G" (global)`, p)
			return
		}
		for i := range s.LayerTypes {
			switch p[i%len(p)] {
			case 'L':
				if i < s.Layers-1 {
					s.LayerTypes[i].Attention = SlidingAttention
				}
			case 'G':
			default:
				c.fail("sliding_window_pattern", `letters "L" (local) and "G" (global)`, p)
				return
			}
		}
		return
	}
	period := c.intIn("sliding_window_pattern", 4, 1, maxLayers)
	if period > s.Layers {
		c.fail("sliding_window_pattern", fmt.Sprintf("at most num_hidden_layers (%d)", s.Layers), period)
		return
	}
	for i := range s.LayerTypes {
		if (i+1)%period != 0 {
			s.LayerTypes[i].Attention = SlidingAttention
		}
	}
}
