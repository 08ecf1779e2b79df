package model

import (
	"fmt"
	"sort"
	"strings"
)

// This file holds what the hybrid families (recurrent layers mixed with
// attention layers) share: reading per-layer kinds from the keys configs
// use for them, and the modules of the recurrent mixers.

// kindNames maps the names a config uses for its layers to their
// structure. Attention "" means no self-attention.
type kindNames map[string]LayerType

// names lists the accepted names for an error message.
func (k kindNames) names() string {
	var out []string
	for n := range k {
		out = append(out, fmt.Sprintf("%q", n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// layerKindList reads key, a list with one layer name per layer
// (layer_types, layers_block_type), through kinds. It returns nil when the
// key is absent. When the config also states num_hidden_layers, the two
// must agree.
func layerKindList(c *config, key string, kinds kindNames) []LayerType {
	names := c.strs(key)
	if names == nil {
		return nil
	}
	out := make([]LayerType, len(names))
	for i, n := range names {
		lt, ok := kinds[n]
		if !ok {
			c.fail(fmt.Sprintf("%s[%d]", key, i), "one of "+kinds.names(), n)
			return nil
		}
		out[i] = fillAttn(lt)
	}
	return checkLayerCount(c, key, out)
}

// layerPattern reads key, a string with one character per layer
// (Nemotron-H's hybrid_override_pattern), through kinds.
func layerPattern(c *config, key string, kinds kindNames) []LayerType {
	if !c.has(key) {
		return nil
	}
	p := c.str(key, "")
	if len(p) > maxLayers {
		c.fail(key, fmt.Sprintf("at most %d layers", maxLayers), len(p))
		return nil
	}
	out := make([]LayerType, 0, len(p))
	for i, r := range p {
		lt, ok := kinds[string(r)]
		if !ok {
			c.fail(key, fmt.Sprintf("a string of %s (character %d is %q)", kinds.names(), i, r), p)
			return nil
		}
		out = append(out, fillAttn(lt))
	}
	if len(out) == 0 {
		c.fail(key, "at least one layer", p)
		return nil
	}
	return checkLayerCount(c, key, out)
}

// fillAttn makes the zero attention kind explicit (NoSelfAttention).
func fillAttn(lt LayerType) LayerType {
	if lt.Attention == "" {
		lt.Attention = NoSelfAttention
	}
	return lt
}

// checkLayerCount refuses a per-layer list whose length contradicts
// num_hidden_layers; the list is the layer count when the key is absent.
func checkLayerCount(c *config, key string, lts []LayerType) []LayerType {
	if c.has("num_hidden_layers") {
		if n := c.layers("num_hidden_layers", 1); n != len(lts) && c.err() == nil {
			c.fail(key, fmt.Sprintf("one entry per layer, %d as num_hidden_layers says", n), len(lts))
			return nil
		}
	}
	if len(lts) > maxLayers {
		c.fail(key, fmt.Sprintf("at most %d layers", maxLayers), len(lts))
		return nil
	}
	return lts
}

// kindRun is a run of consecutive layers with the same structure.
type kindRun struct {
	first, n int
	lt       LayerType
}

// kindRuns splits s's layers into maximal runs of one LayerType.
func kindRuns(s *Stack) []kindRun {
	var out []kindRun
	for i, lt := range s.LayerTypes[:min(len(s.LayerTypes), s.Layers)] {
		if k := len(out); k > 0 && out[k-1].lt == lt {
			out[k-1].n++
			continue
		}
		out = append(out, kindRun{first: i, n: 1, lt: lt})
	}
	return out
}

// recurrentLayers counts the layers of s that run its recurrent mixer.
func recurrentLayers(s *Stack) int {
	n := 0
	for _, lt := range s.LayerTypes {
		if lt.State != "" {
			n++
		}
	}
	return n
}

// checkRecurrent refuses a recurrent state whose shape does not fit
// together: value heads a multiple of key heads (DeltaNet), heads a
// multiple of groups (Mamba-2).
func checkRecurrent(c *config, r *RecurrentState, headsKey, groupsKey string) {
	if r.Groups > 0 && r.Heads%r.Groups != 0 {
		c.fail(groupsKey, fmt.Sprintf("a divisor of %s (%d)", headsKey, r.Heads), r.Groups)
	}
}

// mamba2Mixer adds a Mamba-2 mixer under g (Mamba2Mixer in
// src/transformers/models/mamba2/modeling_mamba2.py; Bamba, Nemotron-H,
// GraniteMoeHybrid and Falcon-H1 reuse it): in_proj h → d_inner + conv_dim
// + heads (z, xBC, dt), a depthwise conv1d over conv_dim channels,
// dt_bias, A_log and D per head, a gated RMSNorm over d_inner (when norm),
// out_proj d_inner → h.
func mamba2Mixer(g group, h int, r *RecurrentState, bias, convBias, norm bool) {
	inner := r.Heads * r.HeadDim
	g.linear(CompRecurrent, "in_proj", "in_proj", h, inner+r.ConvDim()+r.Heads, bias)
	conv1d(g, r.ConvDim(), r.ConvKernel, convBias)
	g.param(CompRecurrent, KindParam, "dt_bias", int64(r.Heads))
	g.param(CompRecurrent, KindParam, "A_log", int64(r.Heads))
	g.param(CompRecurrent, KindParam, "D", int64(r.Heads))
	if norm {
		g.norm(CompRecurrent, "norm", inner, false)
	}
	g.linear(CompRecurrent, "out_proj", "out_proj", inner, h, bias)
}

// conv1d adds a depthwise nn.Conv1d(ch, ch, k, groups=ch): ch·k weights
// and ch biases.
func conv1d(g group, ch, k int, bias bool) {
	each := int64(ch) * int64(k)
	if bias {
		each += int64(ch)
	}
	g.param(CompRecurrent, KindConv, "conv1d", each)
}
