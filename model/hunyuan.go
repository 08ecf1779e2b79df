package model

import (
	"fmt"
	"slices"
)

// hunyuanDefaults are HunYuanDenseV1Config's and HunYuanMoEV1Config's
// defaults: vocab 290943, 4096 wide, 32 layers and heads, MLP 11008, 2048
// positions, untied (huggingface/transformers@28ca27cb2b78dae855b6e9ce1461fed18a9a9594:
// src/transformers/models/hunyuan_v1_dense/configuration_hunyuan_v1_dense.py;
// @6e4054ae4d2748051a0080ccb6eebfbcc0848d88:
// src/transformers/models/hunyuan_v1_moe/configuration_hunyuan_v1_moe.py,
// which adds num_experts 1 and moe_topk 1).
var hunyuanDefaults = dims{hidden: 4096, layers: 32, heads: 32, inter: 11008, vocab: 290943, maxPos: 2048}

// readHunYuanDense reads Hunyuan dense models (model_type
// "hunyuan_v1_dense"): Llama layers with per-head RMSNorms on queries and
// keys named query_layernorm and key_layernorm, applied after RoPE
// (HunYuanDenseV1Attention), biases on q/k/v/o when attention_bias.
func readHunYuanDense(c *config, m *Model, b *builder) {
	m.Text = readStack(c, hunyuanDefaults)
	readHunYuanAttention(c, &m.Text, true)
	buildHunYuan(b, &m.Text)
}

// readHunYuanMoE reads Hunyuan MoE models (model_type "hunyuan_v1_moe"):
// the dense model's attention and, in every layer, an fp32 router
// gate.wg Linear(h, E), num_experts SwiGLU experts and one shared_mlp, all
// of intermediate_size (HunYuanMoEV1Gate, HunYuanMoEV1Moe, whose MLP is
// LlamaMLP of intermediate_size for experts and shared MLP alike;
// huggingface/transformers@3404f51e382117e3181e9ad481f2de723889643e:
// src/transformers/models/hunyuan_v1_moe/modular_hunyuan_v1_moe.py).
// num_experts and moe_topk may be per-layer lists; gpumem reads them when
// every layer has the same value and refuses them otherwise.
func readHunYuanMoE(c *config, m *Model, b *builder) {
	s := readStack(c, hunyuanDefaults)
	readHunYuanAttention(c, &s, true)
	readHunYuanExperts(c, &s)
	m.Text = s
	buildHunYuan(b, &m.Text)
}

// readHunYuanRemote reads the remote-code schema Tencent's repositories
// ship (model_type "hunyuan", HunYuanConfig with auto_map to
// modeling_hunyuan.py): architectures[0] says dense
// (HunYuanDenseV1ForCausalLM) or MoE (HunYuanMoEV1ForCausalLM);
// attention_head_dim spells head_dim; q/k norms follow use_qk_norm; the
// shared MLP is intermediate_size × num_shared_expert (HunYuanMLP in
// Tencent-Hunyuan/Hunyuan-A13B@2798f3c8b6a69e0ce93950b0d2417203cf950fa0:
// models/modeling_hunyuan.py). Cross-layer attention (use_cla) and MLA
// (use_mla) change the layout and are refused by name.
func readHunYuanRemote(c *config, m *Model, b *builder) {
	for _, k := range []string{"use_cla", "use_mla"} {
		if c.boolean(k, false) {
			c.fail(k, "false (gpumem does not read Hunyuan's "+k[4:]+" layout)", true)
		}
	}
	s := readStack(c, hunyuanDefaults)
	if !c.has("head_dim") {
		s.HeadDim = c.dim("attention_head_dim", s.HeadDim)
	}
	readHunYuanAttention(c, &s, c.boolean("use_qk_norm", false))
	if m.Architecture == "HunYuanMoEV1ForCausalLM" || c.has("num_experts") {
		readHunYuanExperts(c, &s)
		if w := perLayer(c, "moe_intermediate_size", s.Layers, s.Intermediate, 1, maxDim); w != s.Intermediate {
			c.fail("moe_intermediate_size", fmt.Sprintf("intermediate_size (%d), the width modeling_hunyuan.py gives the experts", s.Intermediate), w)
		}
		shared := perLayer(c, "num_shared_expert", s.Layers, 1, 0, maxExperts)
		s.MoE.SharedExperts = shared
		s.MoE.SharedFFN = shared * s.Intermediate
	}
	m.Text = s
	buildHunYuan(b, &m.Text)
}

// readHunYuanAttention sets the attention options of a Hunyuan stack.
func readHunYuanAttention(c *config, s *Stack, qkNorm bool) {
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias = s.AttnBias
	s.MLPBias = c.boolean("mlp_bias", false)
	s.QKNorm = qkNorm
}

// readHunYuanExperts reads num_experts and moe_topk (integers or uniform
// per-layer lists) into an every-layer MoE with one shared MLP.
func readHunYuanExperts(c *config, s *Stack) {
	e := perLayer(c, "num_experts", s.Layers, 1, 1, maxExperts)
	k := perLayer(c, "moe_topk", s.Layers, 1, 1, maxExperts)
	if k > e {
		c.fail("moe_topk", fmt.Sprintf("at most num_experts (%d)", e), k)
	}
	s.MoE = &MoE{Experts: e, ExpertsPerToken: k, ExpertFFN: s.Intermediate, SharedExperts: 1, SharedFFN: s.Intermediate}
	markMoELayers(s, func(int) bool { return true })
}

// perLayer reads key as an integer or as a list of one integer per layer
// that must all be equal (gpumem describes one kind of MoE layer per
// stack); def when absent.
func perLayer(c *config, key string, layers, def, lo, hi int) int {
	v, _, ok := c.lookup(key)
	if !ok {
		return def
	}
	if _, isList := v.([]any); !isList {
		return c.intIn(key, def, lo, hi)
	}
	vals := c.ints(key, lo, hi)
	switch {
	case vals == nil:
		return def
	case len(vals) != layers:
		c.fail(key, fmt.Sprintf("%d entries (num_hidden_layers)", layers), len(vals))
		return def
	case slices.Min(vals) != slices.Max(vals):
		c.fail(key, "the same value for every layer (gpumem reads one kind of MoE layer per model)", v)
		return def
	}
	return vals[0]
}

// buildHunYuan adds a Hunyuan decoder, dense or MoE.
func buildHunYuan(b *builder, s *Stack) {
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embed_tokens", s.Vocab, s.Hidden)
	g := b.layers(StackText, "model.layers", 0, s.Layers)
	g.norm(CompNorm, "input_layernorm", s.Hidden, false)
	a := g.sub("self_attn.")
	q, kv := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	a.linear(CompAttention, "q_proj", "q_proj", s.Hidden, q, s.AttnBias)
	a.linear(CompAttention, "k_proj", "k_proj", s.Hidden, kv, s.AttnBias)
	a.linear(CompAttention, "v_proj", "v_proj", s.Hidden, kv, s.AttnBias)
	a.linear(CompAttention, "o_proj", "o_proj", q, s.Hidden, s.AttnBias)
	if s.QKNorm {
		a.norm(CompNorm, "query_layernorm", s.HeadDim, false)
		a.norm(CompNorm, "key_layernorm", s.HeadDim, false)
	}
	g.norm(CompNorm, "post_attention_layernorm", s.Hidden, false)
	mlp := g.sub("mlp.")
	if s.MoE == nil {
		gatedMLP(mlp, CompMLP, s.Hidden, s.Intermediate, s.MLPBias)
	} else {
		mlp.linear(CompRouter, "gate.wg", "wg", s.Hidden, s.MoE.Experts, false)
		gatedExperts(mlp, s.MoE.Experts, s.Hidden, s.MoE.ExpertFFN)
		if s.MoE.SharedFFN > 0 {
			gatedMLP(mlp.sub("shared_mlp."), CompSharedExperts, s.Hidden, s.MoE.SharedFFN, false)
		}
	}
	top.norm(CompFinalNorm, "model.norm", s.Hidden, false)
	lmHead(b, s, "lm_head", false)
}
