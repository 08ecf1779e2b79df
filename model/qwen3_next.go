package model

// Qwen3-Next and Qwen3.5 interleave gated DeltaNet linear-attention layers
// with gated full-attention layers. The module layout follows
// huggingface/transformers at 043bb8dde14aae1a56b84cd230737cf5d0877912
// (src/transformers/models/qwen3_next/modular_qwen3_next.py) and
// 009e78d6e89fd6f3e68cf81ba95ccc682c8cdda9
// (src/transformers/models/qwen3_5/modular_qwen3_5.py), and
// src/transformers/models/qwen3_5_moe/modular_qwen3_5_moe.py at
// 0960594cbcb31be634ec36a76818155c591aafb4.

// qwenHybridKinds are the layer_types names of Qwen3-Next and Qwen3.5.
var qwenHybridKinds = kindNames{
	"linear_attention": {State: GatedDeltaNet},
	"full_attention":   {Attention: FullAttention},
}

// qwenNextDefaults are Qwen3NextConfig's defaults
// (configuration_qwen3_next.py at 008e574391258935f3ecc3035c882e73bbcac419).
var qwenNextDefaults = dims{hidden: 2048, layers: 48, heads: 16, kvHeads: 2, headDim: 256, inter: 5632, vocab: 151936, maxPos: 32768}

// readQwen3Next reads Qwen3-Next: the Qwen3NextForCausalLM text model
// whose layers are gated DeltaNet or gated attention, each followed by a
// Qwen2-MoE style sparse block (routed experts, one shared expert and its
// sigmoid gate) or, in mlp_only_layers, a dense MLP.
func readQwen3Next(c *config, m *Model, b *builder) {
	s := readStack(c, qwenNextDefaults)
	readQwenHybrid(c, &s)
	if c.intIn("num_local_experts", 512, 0, maxExperts) > 0 {
		readQwenNextMoE(c, &s, moeDefaults{experts: 512, perToken: 10, expertFFN: 512}, 512)
		sparseStep(c, &s)
	}
	m.Text = s
	buildQwenHybrid(c, &m.Text, b, "model", false)
}

// readQwen35Text reads the language model of Qwen3.5 (Qwen3_5TextConfig:
// every layer has a dense gated MLP; DeltaNet projections split as
// in_proj_qkv, in_proj_z, in_proj_b and in_proj_a).
func readQwen35Text(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 4096, layers: 32, heads: 16, kvHeads: 4, headDim: 256, inter: 12288, vocab: 248320, maxPos: 32768})
	readQwenHybrid(c, &s)
	m.Text = s
	buildQwenHybrid(c, &m.Text, b, "model", true)
}

// readQwen35MoEText reads the language model of Qwen3.5-MoE
// (Qwen3_5MoeTextConfig: every layer is a sparse block; the config class
// has no dense intermediate_size).
func readQwen35MoEText(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 2048, layers: 40, heads: 16, kvHeads: 2, headDim: 256, inter: 1, vocab: 248320, maxPos: 32768})
	s.Intermediate = 0
	readQwenHybrid(c, &s)
	readQwenNextMoE(c, &s, moeDefaults{experts: 256, perToken: 8, expertFFN: 512}, 512)
	markMoELayers(&s, func(int) bool { return true })
	m.Text = s
	buildQwenHybrid(c, &m.Text, b, "model", true)
}

// readQwenNextMoE reads the sparse block's keys into s.MoE.
func readQwenNextMoE(c *config, s *Stack, d moeDefaults, sharedDef int) {
	s.MoE = readMoE(c, d)
	s.MoE.SharedFFN = c.count("shared_expert_intermediate_size", sharedDef)
	if s.MoE.SharedFFN > 0 {
		s.MoE.SharedExperts = 1
	}
}

// readQwenHybrid reads the layer kinds (layer_types, else every
// full_attention_interval-th layer is full attention, as
// Qwen3NextConfig.__post_init__ builds them) and the DeltaNet state.
func readQwenHybrid(c *config, s *Stack) {
	lts := layerKindList(c, "layer_types", qwenHybridKinds)
	if lts == nil && c.err() == nil {
		every := c.intIn("full_attention_interval", 4, 1, maxLayers)
		lts = make([]LayerType, s.Layers)
		for i := range lts {
			lts[i] = fillAttn(qwenHybridKinds["linear_attention"])
			if (i+1)%every == 0 {
				lts[i] = qwenHybridKinds["full_attention"]
			}
		}
	}
	if lts != nil {
		s.LayerTypes = lts
	}
	r := &RecurrentState{Kind: GatedDeltaNet,
		Heads:      c.dim("linear_num_value_heads", 32),
		HeadDim:    c.dim("linear_value_head_dim", 128),
		StateDim:   c.dim("linear_key_head_dim", 128),
		Groups:     c.dim("linear_num_key_heads", 16),
		ConvKernel: c.dim("linear_conv_kernel_dim", 4),
	}
	checkRecurrent(c, r, "linear_num_value_heads", "linear_num_key_heads")
	r.SSMCacheDtype = c.str("mamba_ssm_dtype", "")
	if recurrentLayers(s) > 0 {
		s.State = r
	}
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias = s.AttnBias
	s.QKNorm = true
}

// buildQwenHybrid adds the decoder's modules under base: embed_tokens,
// per layer input_layernorm, linear_attn (GatedDeltaNet) or self_attn
// (gated attention), post_attention_layernorm and mlp, then norm and
// lm_head. split selects Qwen3.5's four input projections of DeltaNet
// instead of Qwen3-Next's two fused ones (same parameter count).
func buildQwenHybrid(c *config, s *Stack, b *builder, base string, split bool) {
	top := b.top(StackText)
	top.embedding(CompEmbedding, base+".embed_tokens", s.Vocab, s.Hidden)
	for _, r := range kindRuns(s) {
		g := b.layers(StackText, base+".layers", r.first, r.n)
		g.norm(CompNorm, "input_layernorm", s.Hidden, false)
		if r.lt.State != "" {
			gatedDeltaNet(g.sub("linear_attn."), s.Hidden, s.State, split)
		} else {
			gatedAttention(g.sub("self_attn."), s)
		}
		g.norm(CompNorm, "post_attention_layernorm", s.Hidden, false)
		mlp := g.sub("mlp.")
		if !r.lt.MoE || s.MoE == nil {
			gatedMLP(mlp, CompMLP, s.Hidden, s.Intermediate, false)
			continue
		}
		moe := s.MoE
		mlp.linear(CompRouter, "gate", "gate", s.Hidden, moe.Experts, false)
		gatedExperts(mlp, moe.Experts, s.Hidden, moe.ExpertFFN)
		if moe.SharedFFN > 0 {
			gatedMLP(mlp.sub("shared_expert."), CompSharedExperts, s.Hidden, moe.SharedFFN, false)
			mlp.linear(CompRouter, "shared_expert_gate", "shared_expert_gate", s.Hidden, 1, false)
		}
	}
	top.norm(CompFinalNorm, base+".norm", s.Hidden, false)
	lmHead(b, s, "lm_head", false)
}

// gatedAttention adds Qwen3NextAttention: q_proj doubled to carry the
// output gate (heads·head_dim·2), k_proj, v_proj, o_proj and per-head
// RMSNorms q_norm and k_norm.
func gatedAttention(a group, s *Stack) {
	q, kv := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	a.linear(CompAttention, "q_proj", "q_proj", s.Hidden, 2*q, s.AttnBias)
	a.linear(CompAttention, "k_proj", "k_proj", s.Hidden, kv, s.AttnBias)
	a.linear(CompAttention, "v_proj", "v_proj", s.Hidden, kv, s.AttnBias)
	a.linear(CompAttention, "o_proj", "o_proj", q, s.Hidden, s.AttnBias)
	a.norm(CompNorm, "q_norm", s.HeadDim, false)
	a.norm(CompNorm, "k_norm", s.HeadDim, false)
}

// gatedDeltaNet adds Qwen3NextGatedDeltaNet: the q, k, v and output-gate
// z projections and the per-head b and a, a depthwise conv1d over q, k and
// v without bias, dt_bias and A_log per value head, a gated RMSNorm over
// head_v_dim and out_proj.
func gatedDeltaNet(g group, h int, r *RecurrentState, split bool) {
	key, value := r.Groups*r.StateDim, r.Heads*r.HeadDim
	if split {
		g.linear(CompRecurrent, "in_proj_qkv", "in_proj_qkv", h, 2*key+value, false)
		g.linear(CompRecurrent, "in_proj_z", "in_proj_z", h, value, false)
		g.linear(CompRecurrent, "in_proj_b", "in_proj_b", h, r.Heads, false)
		g.linear(CompRecurrent, "in_proj_a", "in_proj_a", h, r.Heads, false)
	} else {
		g.linear(CompRecurrent, "in_proj_qkvz", "in_proj_qkvz", h, 2*key+2*value, false)
		g.linear(CompRecurrent, "in_proj_ba", "in_proj_ba", h, 2*r.Heads, false)
	}
	conv1d(g, r.ConvDim(), r.ConvKernel, false)
	g.param(CompRecurrent, KindParam, "dt_bias", int64(r.Heads))
	g.param(CompRecurrent, KindParam, "A_log", int64(r.Heads))
	g.norm(CompRecurrent, "norm", r.HeadDim, false)
	g.linear(CompRecurrent, "out_proj", "out_proj", value, h, false)
}

// readQwen35 reads Qwen3.5 (Qwen3_5ForConditionalGeneration): the
// Qwen3-VL vision tower without deepstack mergers and a Qwen3.5 language
// model at model.language_model.
func readQwen35(c *config, m *Model, b *builder) {
	readQwen35VLM(c, m, b, "qwen3_5_text")
}

// readQwen35MoE reads Qwen3.5-MoE (Qwen3_5MoeForConditionalGeneration).
func readQwen35MoE(c *config, m *Model, b *builder) {
	readQwen35VLM(c, m, b, "qwen3_5_moe_text")
}

// readQwen35VLM reads a Qwen3.5 wrapper whose language model defaults to
// textType. Its vision tower is Qwen3VLVisionModel minus the deepstack
// mergers (Qwen3_5VisionModel deletes deepstack_merger_list), with
// Qwen3VLVisionConfig's defaults for the keys a vision_config leaves out.
// A config without vision_config or text_config is refused (needSub), as
// for every multimodal wrapper: transformers would build the tower from a
// config class's defaults, which need not be the release's.
func readQwen35VLM(c *config, m *Model, b *builder, textType string) {
	vc := needSub(c, "vision_config", "the vision tower's config (an object): the tower's size cannot be inferred without it")
	if vc == nil {
		return
	}
	// No deepstack mergers whatever the config says (the module list is
	// deleted); an empty list makes buildQwenVision add none.
	vc = withKey(vc, "deepstack_visual_indexes", []any{})
	v := Vision{SpatialMerge: 2}
	v.Layers = vc.layers("depth", 27)
	v.Hidden = vc.dim("hidden_size", 1152)
	v.Heads = vc.dim("num_heads", 16)
	v.Intermediate = vc.dim("intermediate_size", 4304)
	out := vc.dim("out_hidden_size", 3584)
	finishQwenVision(vc, &v, LayerNorm, PlainMLP)
	v.Activation = vc.str("hidden_act", "gelu_pytorch_tanh")
	readQwenVLVision(vc, &v)
	if !vc.has("patch_size") {
		v.PatchSize = 16
		v.TokensPerImage = tokensPerImage(&v)
	}
	if needSub(c, "text_config", "the language model's config (an object): its size cannot be inferred without it") == nil {
		return
	}
	readLanguageModel(textSub(c), textType, m, b, "model.language_model")
	buildQwenVision(vc, b, &v, out, true)
	m.Vision = &v
}

// withKey returns c with key set to v (c's other keys and state kept).
func withKey(c *config, key string, v any) *config {
	m := make(map[string]any, len(c.m)+1)
	for k, x := range c.m {
		m[k] = x
	}
	m[key] = v
	return &config{st: c.st, prefix: c.prefix, m: m}
}
