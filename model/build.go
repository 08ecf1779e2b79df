package model

import (
	"fmt"
	"math/bits"
)

// Components a module can belong to (Module.Component).
const (
	CompEmbedding     = "embedding"
	CompAttention     = "attention"
	CompRecurrent     = "recurrent" // linear-attention and SSM mixers
	CompMLP           = "mlp"
	CompExperts       = "experts"
	CompSharedExperts = "shared_experts"
	CompRouter        = "router"
	CompNorm          = "norm"
	CompFinalNorm     = "final_norm"
	CompLMHead        = "lm_head"
	CompVision        = "vision"
	CompProjector     = "projector"
	CompOther         = "other"
)

// Stacks a module can belong to (Module.Stack).
const (
	StackText      = "text"
	StackEncoder   = "encoder"
	StackVision    = "vision"
	StackProjector = "projector"
)

// Kinds of module (Module.Kind).
const (
	KindLinear    = "linear"
	KindEmbedding = "embedding"
	KindNorm      = "norm"
	KindConv      = "conv"
	KindParam     = "param"
)

// mul64 multiplies two non-negative int64s, reporting overflow.
func mul64(a, b int64) (int64, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > 1<<63-1 {
		return 0, false
	}
	return int64(lo), true
}

// builder accumulates the parameter inventory of a model. The first
// overflow is kept in err and later additions are ignored.
type builder struct {
	mods []Module
	err  error
}

func (b *builder) add(m Module) {
	if b.err != nil {
		return
	}
	p, ok := mul64(m.Each, int64(m.Instances))
	if !ok || m.Each <= 0 || m.Instances <= 0 {
		b.err = fmt.Errorf("%s: parameter count out of range (%d × %d)", m.Name, m.Each, m.Instances)
		return
	}
	m.Params = p
	b.mods = append(b.mods, m)
}

// group adds modules that repeat over a run of layers (or, with first
// -1, single modules outside the layers) under a common name prefix.
type group struct {
	b      *builder
	stack  string
	prefix string // e.g. "model.layers.*."
	first  int    // first layer, -1 outside the layers
	n      int    // number of layers
}

// layers returns the group of layers [first, first+n) named prefix+"*.".
func (b *builder) layers(stack, prefix string, first, n int) group {
	return group{b: b, stack: stack, prefix: prefix + ".*.", first: first, n: n}
}

// top returns the group of modules outside the layers; names are used as given.
func (b *builder) top(stack string) group {
	return group{b: b, stack: stack, first: -1, n: 1}
}

// repeat returns a group of n copies of modules outside the layers,
// named prefix+".*." (e.g. Qwen3-VL's deepstack mergers).
func (b *builder) repeat(stack, prefix string, n int) group {
	return group{b: b, stack: stack, prefix: prefix + ".*.", first: -1, n: n}
}

// sub returns g with a longer name prefix (e.g. "self_attn.").
func (g group) sub(prefix string) group {
	g.prefix += prefix
	return g
}

func (g group) module(m Module) {
	m.Name = g.prefix + m.Name
	m.Stack = g.stack
	m.Layer = g.first
	if g.first >= 0 {
		m.Layers = g.n
	}
	inst := g.n
	if m.Experts > 0 {
		inst *= m.Experts
	}
	m.Instances = inst
	g.b.add(m)
}

// linearEach is the parameter count of one Linear(in, out).
func (g group) linearEach(name string, in, out int, bias bool) int64 {
	each, ok := mul64(int64(in), int64(out))
	if bias {
		each, ok = each+int64(out), ok && each+int64(out) >= each
	}
	if !ok && g.b.err == nil {
		g.b.err = fmt.Errorf("%s%s: Linear(%d, %d) overflows", g.prefix, name, in, out)
	}
	return each
}

// linear adds an nn.Linear(in, out) (or Conv1D, same count) named name
// with PEFT short name short.
func (g group) linear(comp, name, short string, in, out int, bias bool) {
	g.module(Module{Name: name, Short: short, Component: comp, Kind: KindLinear,
		Each: g.linearEach(name, in, out, bias), In: in, Out: out, Bias: bias})
}

// experts adds e routed experts' copies of a Linear(in, out) per layer.
func (g group) experts(comp, name, short string, e, in, out int, bias bool) {
	g.module(Module{Name: name, Short: short, Component: comp, Kind: KindLinear,
		Each: g.linearEach(name, in, out, bias), In: in, Out: out, Bias: bias,
		Expert: true, Experts: e})
}

// norm adds a normalisation layer of the given width: weight, plus bias
// for a LayerNorm with bias.
func (g group) norm(comp, name string, width int, bias bool) {
	each := int64(width)
	if bias {
		each *= 2
	}
	g.module(Module{Name: name, Component: comp, Kind: KindNorm, Each: each})
}

// embedding adds an nn.Embedding(rows, cols).
func (g group) embedding(comp, name string, rows, cols int) {
	g.module(Module{Name: name, Component: comp, Kind: KindEmbedding,
		Each: g.linearEach(name, rows, cols, false)})
}

// param adds a bare tensor (or conv) of each elements.
func (g group) param(comp, kind, name string, each int64) {
	g.module(Module{Name: name, Component: comp, Kind: kind, Each: each})
}
