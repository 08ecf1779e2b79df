package model

import "fmt"

// Gemma 4 follows transformers
// src/transformers/models/gemma4/modeling_gemma4.py@0246b4f33354 and the
// defaults of configuration_gemma4.py@008e57439125.

// gemma4TextDefaults are Gemma4TextConfig's defaults.
var gemma4TextDefaults = dims{hidden: 2304, layers: 30, heads: 8, kvHeads: 4, headDim: 256, inter: 9216,
	vocab: 262144, maxPos: 131072, tied: true, act: "gelu_pytorch_tanh"}

// gemma4Layer is what sets one Gemma 4 decoder layer's parameter shapes.
type gemma4Layer struct {
	full, shared, wide bool
}

// readGemma4Text reads a Gemma4TextConfig language model (Gemma4TextModel
// under Gemma4ForCausalLM). Each decoder layer has Gemma 2/3's four
// RMSNorms, an attention block whose full-attention layers use
// global_head_dim and, with attention_k_eq_v, num_global_key_value_heads
// and no v_proj (values are the keys before their norms), per-head
// q_norm/k_norm (v_norm has no weight), and a gated MLP, twice as wide on
// KV-shared layers when use_double_wide_mlp. The last num_kv_shared_layers
// layers reuse an earlier layer's keys and values: no k_proj, v_proj or
// k_norm, and no cache. With hidden_size_per_layer_input (Per-Layer
// Embeddings) each layer adds per_layer_input_gate,
// per_layer_projection and post_per_layer_input_norm, and the model
// embed_tokens_per_layer (vocab_size_per_layer_input × layers · width),
// per_layer_model_projection and per_layer_projection_norm. With
// enable_moe_block every layer runs a router (proj, scale,
// per_expert_scale) and fused experts (gate_up_proj, down_proj) beside
// its dense MLP, with three more norms. layer_scalar is a buffer, not a
// parameter.
func readGemma4Text(c *config, m *Model, b *builder) {
	s := readStack(c, gemma4TextDefaults)
	s.SlidingWindow = c.count("sliding_window", 512)
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias, s.QKNorm = s.AttnBias, true
	globalDim := c.dim("global_head_dim", 512)
	kEqV := c.boolean("attention_k_eq_v", false)
	globalKV := c.dim("num_global_key_value_heads", s.KVHeads)
	if kEqV && (globalKV > s.Heads || s.Heads%globalKV != 0) {
		c.fail("num_global_key_value_heads", fmt.Sprintf("a divisor of num_attention_heads (%d)", s.Heads), globalKV)
	}
	shared := c.intIn("num_kv_shared_layers", 0, 0, maxLayers)
	if shared >= s.Layers && shared > 0 {
		c.fail("num_kv_shared_layers", fmt.Sprintf("fewer than num_hidden_layers (%d)", s.Layers), shared)
	}
	wide := c.boolean("use_double_wide_mlp", false)
	ple := c.count("hidden_size_per_layer_input", 256)
	plVocab := c.dim("vocab_size_per_layer_input", 262144)
	if bi := c.str("use_bidirectional_attention", ""); bi == "all" {
		s.Causal = false
	}
	// Gemma4TextConfig: five sliding layers to one full one unless
	// layer_types says otherwise, and the last layer is always full.
	for i := range s.LayerTypes {
		if (i+1)%6 != 0 {
			s.LayerTypes[i].Attention = SlidingAttention
		}
	}
	readLayerTypes(c, &s)
	if n := len(s.LayerTypes); n > 0 {
		s.LayerTypes[n-1].Attention = FullAttention
	}
	firstShared := s.Layers - shared
	kinds := make([]gemma4Layer, s.Layers)
	for i := range s.LayerTypes {
		lt := &s.LayerTypes[i]
		k := gemma4Layer{full: lt.Attention == FullAttention, shared: shared > 0 && i >= firstShared}
		k.wide = wide && k.shared
		if k.full {
			lt.HeadDim = globalDim
			if kEqV {
				lt.KVHeads = globalKV
			}
		}
		lt.SharedKV = k.shared
		kinds[i] = k
	}
	if c.boolean("enable_moe_block", false) {
		s.MoE = readMoE(c, moeDefaults{})
		if s.MoE.Experts == 0 {
			c.fail("num_experts", "a positive integer when enable_moe_block", nil)
		}
		s.MoE.ExpertsPerToken = c.intIn("top_k_experts", 0, 1, maxExperts)
		if s.MoE.ExpertsPerToken == 0 {
			c.fail("top_k_experts", "a positive integer when enable_moe_block", nil)
		} else if s.MoE.ExpertsPerToken > s.MoE.Experts {
			c.fail("top_k_experts", fmt.Sprintf("at most num_experts (%d)", s.MoE.Experts), s.MoE.ExpertsPerToken)
		}
		// The dense MLP runs beside the experts on every token.
		s.MoE.SharedExperts, s.MoE.SharedFFN = 1, s.Intermediate
		markMoELayers(&s, func(int) bool { return true })
	}
	m.Text = s
	buildGemma4Text(b, &m.Text, kinds, gemma4Attn{globalDim: globalDim, globalKV: globalKV, kEqV: kEqV}, ple, plVocab)
}

// gemma4Attn are the attention settings of full-attention layers.
type gemma4Attn struct {
	globalDim, globalKV int
	kEqV                bool
}

// buildGemma4Text adds Gemma4TextModel's modules, one group per run of
// layers with the same shapes.
func buildGemma4Text(b *builder, s *Stack, kinds []gemma4Layer, ga gemma4Attn, ple, plVocab int) {
	h := s.Hidden
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embed_tokens", s.Vocab, h)
	if ple > 0 {
		top.embedding(CompEmbedding, "model.embed_tokens_per_layer", plVocab, s.Layers*ple)
		top.linear(CompOther, "model.per_layer_model_projection", "per_layer_model_projection", h, s.Layers*ple, false)
		top.norm(CompNorm, "model.per_layer_projection_norm", ple, false)
	}
	for i := 0; i < len(kinds); {
		j := i
		for j < len(kinds) && kinds[j] == kinds[i] {
			j++
		}
		k := kinds[i]
		g := b.layers(StackText, "model.layers", i, j-i)
		for _, n := range []string{"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"} {
			g.norm(CompNorm, n, h, false)
		}
		hd, kv := s.HeadDim, s.KVHeads
		if k.full {
			hd = ga.globalDim
			if ga.kEqV {
				kv = ga.globalKV
			}
		}
		a := g.sub("self_attn.")
		a.linear(CompAttention, "q_proj", "q_proj", h, s.Heads*hd, s.AttnBias)
		a.norm(CompNorm, "q_norm", hd, false)
		if !k.shared {
			a.linear(CompAttention, "k_proj", "k_proj", h, kv*hd, s.AttnBias)
			if !(k.full && ga.kEqV) {
				a.linear(CompAttention, "v_proj", "v_proj", h, kv*hd, s.AttnBias)
			}
			a.norm(CompNorm, "k_norm", hd, false)
		}
		a.linear(CompAttention, "o_proj", "o_proj", s.Heads*hd, h, s.AttnBias)
		f := s.Intermediate
		if k.wide {
			f *= 2
		}
		gatedMLP(g.sub("mlp."), CompMLP, h, f, false)
		if ple > 0 {
			g.linear(CompOther, "per_layer_input_gate", "per_layer_input_gate", h, ple, false)
			g.linear(CompOther, "per_layer_projection", "per_layer_projection", ple, h, false)
			g.norm(CompNorm, "post_per_layer_input_norm", h, false)
		}
		if s.MoE != nil {
			e := s.MoE.Experts
			g.linear(CompRouter, "router.proj", "proj", h, e, false)
			g.param(CompRouter, KindParam, "router.scale", int64(h))
			g.param(CompRouter, KindParam, "router.per_expert_scale", int64(e))
			x := g.sub("experts.")
			x.experts(CompExperts, "gate_up_proj", "gate_up_proj", e, h, 2*s.MoE.ExpertFFN, false)
			x.experts(CompExperts, "down_proj", "down_proj", e, s.MoE.ExpertFFN, h, false)
			for _, n := range []string{"post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2"} {
				g.norm(CompNorm, n, h, false)
			}
		}
		i = j
	}
	top.norm(CompFinalNorm, "model.norm", h, false)
	lmHead(b, s, "lm_head", false)
}

// gemma4VisionSoftTokens is Gemma4Processor's image_seq_length and the
// image processor's max_soft_tokens default: the tower's output is pooled
// to at most this many tokens per image (processing_gemma4.py@03b33cc845c6).
const gemma4VisionSoftTokens = 280

// readGemma4Vision reads a Gemma4VisionModel: a patch_embedder (input_proj
// Linear(3·patch², width), no bias, and a position_embedding_table of 2 ×
// position_embedding_size × width), encoder layers of q/k/v/o projections
// (Gemma4ClippableLinear: the weight sits at .linear; use_clipped_linears
// adds only buffers), per-head q_norm/k_norm, a gated MLP and four
// RMSNorms, then a pooler without parameters (standardize adds buffers).
// Gemma4VisionConfig defaults: 768 wide, 16 layers, 12 heads and KV heads,
// head_dim 64, MLP 3072, patch 16, pooling 3.
//
// The image processor resizes every image, up or down, to the largest
// size within max_soft_tokens · pooling² patches whose sides are multiples
// of pooling · patch (get_aspect_ratio_preserving_size): a square image
// becomes 768 px, 48 × 48 patches pooled 3 × 3 to 256 soft tokens, which
// the processor wraps in its begin- and end-of-image tokens.
func readGemma4Vision(vc *config, b *builder, attr string) Vision {
	v := readVisionStack(vc, dims{hidden: 768, layers: 16, heads: 12, kvHeads: 12, headDim: 64, inter: 3072, act: "gelu_pytorch_tanh"})
	v.Norm, v.MLP = RMSNorm, GatedMLP
	v.AttnBias, v.OutBias, v.MLPBias = false, false, false
	v.Activation = vc.str("hidden_activation", v.Activation)
	v.PatchSize = vc.dim("patch_size", 16)
	pool := vc.dim("pooling_kernel_size", 3)
	posSize := vc.dim("position_embedding_size", 10240)
	maxPatches := gemma4VisionSoftTokens * pool * pool
	side := 0
	for (side+1)*(side+1)*pool*pool <= maxPatches {
		side++ // pooled tokens per side of a square image
	}
	v.ImageSize = side * pool * v.PatchSize
	v.SpatialMerge = pool
	v.ImageTokens = 2
	v.TokensPerImage = side*side + v.ImageTokens

	h, hd := v.Hidden, v.HeadDim
	pre := attr + "."
	top := b.top(StackVision)
	top.linear(CompVision, pre+"patch_embedder.input_proj", "input_proj", 3*v.PatchSize*v.PatchSize, h, false)
	top.param(CompVision, KindEmbedding, pre+"patch_embedder.position_embedding_table", 2*int64(posSize)*int64(h))
	g := b.layers(StackVision, pre+"encoder.layers", 0, v.Layers)
	a := g.sub("self_attn.")
	a.linear(CompVision, "q_proj.linear", "linear", h, v.Heads*hd, false)
	a.linear(CompVision, "k_proj.linear", "linear", h, v.KVHeads*hd, false)
	a.linear(CompVision, "v_proj.linear", "linear", h, v.KVHeads*hd, false)
	a.linear(CompVision, "o_proj.linear", "linear", v.Heads*hd, h, false)
	a.norm(CompVision, "q_norm", hd, false)
	a.norm(CompVision, "k_norm", hd, false)
	m := g.sub("mlp.")
	m.linear(CompVision, "gate_proj.linear", "linear", h, v.Intermediate, false)
	m.linear(CompVision, "up_proj.linear", "linear", h, v.Intermediate, false)
	m.linear(CompVision, "down_proj.linear", "linear", v.Intermediate, h, false)
	for _, n := range []string{"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"} {
		g.norm(CompVision, n, h, false)
	}
	return v
}

// readGemma4 reads Gemma4ForConditionalGeneration: the Gemma 4 language
// model of text_config at model.language_model, the vision tower of
// vision_config at model.vision_tower (Gemma4Model builds none when
// vision_config is null) and its embedder model.embed_vision
// (embedding_projection Linear(vision width, text width), no bias; its
// pre-projection RMSNorm has no weight). Gemma 4's audio tower
// (audio_config, the E2B and E4B releases) is not read: such a config is
// refused naming audio_config.
func readGemma4(c *config, m *Model, b *builder) {
	readLanguageModel(needText(c), "gemma4_text", m, b, "model.language_model")
	if ac := c.sub("audio_config"); ac != nil {
		ac.fail("model_type", "no audio tower (Gemma 4's gemma4_audio tower is not read yet)", ac.str("model_type", "gemma4_audio"))
	}
	if c.sub("vision_config") == nil {
		return
	}
	vc := fixedTower(c, "vision_config", "gemma4_vision")
	v := readGemma4Vision(vc, b, "model.vision_tower")
	v.Tower = "gemma4_vision"
	b.top(StackProjector).linear(CompProjector, "model.embed_vision.embedding_projection", "embedding_projection", v.Hidden, m.Text.Hidden, false)
	m.Vision = &v
}
