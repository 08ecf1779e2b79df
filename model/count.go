package model

import "strings"

// ComponentParams is the parameter total of one component.
type ComponentParams struct {
	// Component is a Module.Component value ("embedding", "attention", ...).
	Component string `json:"component"`
	// Params is the number of parameters in it.
	Params int64 `json:"params"`
}

// componentOrder is the order ByComponent reports components in.
var componentOrder = []string{
	CompEmbedding, CompAttention, CompRecurrent, CompMLP, CompSharedExperts, CompExperts,
	CompRouter, CompNorm, CompFinalNorm, CompLMHead, CompVision, CompProjector, CompOther,
}

// TotalParams is the number of parameters PyTorch's num_parameters()
// reports for the model: tied tensors once, buffers excluded.
func (m *Model) TotalParams() int64 {
	var n int64
	for _, mod := range m.Modules {
		n += mod.Params
	}
	return n
}

// ActiveParams is the number of parameters one token passes through: for
// a mixture of experts, num_experts_per_tok routed experts per MoE layer
// instead of all of them; for dense models it equals TotalParams.
func (m *Model) ActiveParams() int64 {
	k := 0
	if m.Text.MoE != nil {
		k = m.Text.MoE.ExpertsPerToken
	}
	var n int64
	for _, mod := range m.Modules {
		n += mod.active(k)
	}
	return n
}

// active is the number of the module's parameters one token uses when k
// experts per layer are routed to.
func (mod Module) active(k int) int64 {
	if !mod.Expert || mod.Experts <= 0 {
		return mod.Params
	}
	k = min(k, mod.Experts)
	return mod.Each * int64(mod.Instances/mod.Experts) * int64(k)
}

// ByComponent returns the parameter totals per component in a fixed
// order (embedding, attention, mlp, ..., projector, other), omitting
// components the model does not have.
func (m *Model) ByComponent() []ComponentParams {
	sums := map[string]int64{}
	for _, mod := range m.Modules {
		sums[mod.Component] += mod.Params
	}
	out := make([]ComponentParams, 0, len(sums))
	for _, c := range componentOrder {
		if p, ok := sums[c]; ok {
			out = append(out, ComponentParams{Component: c, Params: p})
			delete(sums, c)
		}
	}
	for _, mod := range m.Modules { // components outside the fixed order, in module order
		if p, ok := sums[mod.Component]; ok {
			out = append(out, ComponentParams{Component: mod.Component, Params: p})
			delete(sums, mod.Component)
		}
	}
	return out
}

// StackParams is the number of parameters in one stack ("text",
// "encoder", "vision", "projector").
func (m *Model) StackParams(stack string) int64 {
	var n int64
	for _, mod := range m.Modules {
		if mod.Stack == stack {
			n += mod.Params
		}
	}
	return n
}

// Linears returns the Linear modules (including routed experts and fused
// projections), the weights LoRA targets, QLoRA quantizes and autocast
// casts. Each has a Short name such as "q_proj".
func (m *Model) Linears() []Module {
	var out []Module
	for _, mod := range m.Modules {
		if mod.Kind == KindLinear {
			out = append(out, mod)
		}
	}
	return out
}

// LinearParams is the number of parameters in Linear modules.
func (m *Model) LinearParams() int64 {
	var n int64
	for _, mod := range m.Linears() {
		n += mod.Params
	}
	return n
}

// LayerParams is the number of parameters in layer i of stack (the unit an
// FSDP wrap policy or a pipeline stage holds); 0 when i is out of range.
func (m *Model) LayerParams(stack string, i int) int64 {
	var n int64
	for _, mod := range m.Modules {
		if mod.Stack != stack || mod.Layer < 0 || i < mod.Layer || i >= mod.Layer+mod.Layers {
			continue
		}
		n += mod.Params / int64(mod.Layers)
	}
	return n
}

// OutsideLayerParams is the number of parameters of stack that belong to
// no layer: embeddings, final norm, lm_head, patch embeddings.
func (m *Model) OutsideLayerParams(stack string) int64 {
	var n int64
	for _, mod := range m.Modules {
		if mod.Stack == stack && mod.Layer < 0 {
			n += mod.Params
		}
	}
	return n
}

// MatchLinears returns the Linear modules whose Short name, or last
// dotted element of Name, is in names, the way PEFT matches
// target_modules by suffix. The name "all-linear" selects, as PEFT does,
// every nn.Linear except the output head — in every stack, vision tower
// and projector included; callers that freeze the tower filter by Stack.
// Experts stored as fused 3-D parameters (gpt-oss, Llama 4) are not
// nn.Linear modules and only match by name.
func (m *Model) MatchLinears(names []string) []Module {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []Module
	for _, mod := range m.Linears() {
		all := want["all-linear"] && mod.Component != CompLMHead && !fusedExperts(mod)
		if all || want[mod.Short] || want[lastElem(mod.Name)] {
			out = append(out, mod)
		}
	}
	return out
}

// fusedExperts reports whether mod is a fused (experts, in, out) tensor
// rather than one nn.Linear per expert (named "experts.*.<proj>").
func fusedExperts(mod Module) bool {
	return mod.Expert && !strings.Contains(mod.Name, "experts.*.")
}

func lastElem(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' {
			return name[i+1:]
		}
	}
	return name
}
