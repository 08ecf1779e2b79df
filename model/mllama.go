package model

// mllamaExtraTokens is the number of rows MllamaTextModel's embed_tokens
// has beyond vocab_size (nn.Embedding(vocab_size + 8, hidden)).
const mllamaExtraTokens = 8

// readMllama reads Llama 3.2 Vision (modeling_mllama.py). The language
// model is a Llama decoder in which the layers listed in
// cross_attention_layers are cross-attention-only layers
// (MllamaCrossAttentionDecoderLayer: q/k/v/o projections, per-head q_norm
// and k_norm, tanh gates cross_attn_attn_gate and cross_attn_mlp_gate, and
// an MLP). The vision model is a local encoder of num_hidden_layers and a
// gated global encoder of num_global_layers (bias-free attention, MLP with
// bias, LayerNorms), tiled position embeddings, and a projector
// Linear(vision_output_dim, text hidden) with bias.
func readMllama(c *config, m *Model, b *builder) {
	t := needSub(c, "text_config", "the language model's config (an object): its size cannot be inferred without it").orEmpty(c, "text_config")
	s := readStack(t, dims{hidden: 4096, layers: 40, heads: 32, kvHeads: 8, inter: 14336, vocab: 128256, maxPos: 131072})
	cross := t.ints("cross_attention_layers", 0, s.Layers-1)
	if cross == nil && !t.has("cross_attention_layers") {
		cross = []int{3, 8, 13, 18, 23, 28, 33, 38} // MllamaTextConfig default
	}
	isCross := make([]bool, s.Layers)
	for _, i := range cross {
		if i < s.Layers {
			isCross[i] = true
			s.LayerTypes[i] = LayerType{Attention: NoSelfAttention, CrossAttention: true}
		}
	}
	m.Text = s
	vc := fixedTower(c, "vision_config", "mllama_vision_model")
	v := readMllamaVision(vc)
	v.Tower = "mllama_vision_model"
	buildMllamaText(b, &m.Text, isCross)
	buildMllamaVision(vc, b, &v)
	b.top(StackProjector).linear(CompProjector, "model.multi_modal_projector", "multi_modal_projector",
		vc.dim("vision_output_dim", 7680), s.Hidden, true)
	m.Vision = &v
}

// buildMllamaText adds the Mllama language model.
func buildMllamaText(b *builder, s *Stack, isCross []bool) {
	h, hd := s.Hidden, s.HeadDim
	base := "model.language_model"
	top := b.top(StackText)
	top.embedding(CompEmbedding, base+".embed_tokens", s.Vocab+mllamaExtraTokens, h)
	for _, r := range runsBy(s.Layers, func(i int) bool { return isCross[i] }) {
		g := b.layers(StackText, base+".layers", r.first, r.n)
		g.norm(CompNorm, "input_layernorm", h, false)
		if !r.moe { // r.moe carries "is a cross-attention layer" here
			selfAttention(g, s, attnOpts{})
		} else {
			a := g.sub("cross_attn.")
			a.linear(CompAttention, "q_proj", "q_proj", h, s.Heads*hd, false)
			a.linear(CompAttention, "k_proj", "k_proj", h, s.KVHeads*hd, false)
			a.linear(CompAttention, "v_proj", "v_proj", h, s.KVHeads*hd, false)
			a.linear(CompAttention, "o_proj", "o_proj", s.Heads*hd, h, false)
			a.norm(CompNorm, "q_norm", hd, false)
			a.norm(CompNorm, "k_norm", hd, false)
			g.param(CompAttention, KindParam, "cross_attn_attn_gate", 1)
			g.param(CompMLP, KindParam, "cross_attn_mlp_gate", 1)
		}
		g.norm(CompNorm, "post_attention_layernorm", h, false)
		gatedMLP(g.sub("mlp."), CompMLP, h, s.Intermediate, false)
	}
	top.norm(CompFinalNorm, base+".norm", h, false)
	lmHead(b, s, "lm_head", false)
}

// readMllamaVision reads a MllamaVisionConfig (defaults: 1280 wide, 32
// local + 8 global layers, 16 heads, MLP 5120, 448 px tiles, patch 14, up
// to 4 tiles, 8 supported aspect ratios). The base Llama 3.2 Vision 11B
// keeps 448 px tiles (1025 positions per tile); the Instruct releases and
// the 90B set image_size 560 (1601 positions per tile), and the position
// and tile embeddings grow with it (meta-llama/llama-models:
// models/sku_list.py@2386bf56e67c, vision_chunk_size).
func readMllamaVision(vc *config) Vision {
	v := Vision{SpatialMerge: 1}
	v.Hidden = vc.dim("hidden_size", 1280)
	v.Layers = vc.layers("num_hidden_layers", 32) + vc.intIn("num_global_layers", 8, 0, maxLayers)
	v.Heads = vc.dim("attention_heads", vc.dim("num_attention_heads", 16))
	v.KVHeads, v.HeadDim = v.Heads, v.Hidden/max(v.Heads, 1)
	v.Intermediate = vc.dim("intermediate_size", 5120)
	v.Norm, v.MLP, v.MLPBias = LayerNorm, PlainMLP, true
	v.Activation = vc.str("hidden_act", "gelu")
	v.ImageSize = vc.dim("image_size", 448)
	v.PatchSize = vc.dim("patch_size", 14)
	checkPatches(vc, &v)
	v.LayerTypes = uniformLayers(v.Layers, FullAttention)
	// Each tile becomes (patches + CLS) cross-attention states, not LLM
	// tokens; MllamaImageProcessor pads every image to max_image_tiles
	// tiles, which the tower encodes one by one.
	v.Tiling = &Tiling{Kind: TilesFixed, MaxTiles: vc.dim("max_num_tiles", 4)}
	v.TileTokens = 1
	v.TokensPerImage = v.Image(0).Tokens
	return v
}

// buildMllamaVision adds MllamaVisionModel.
func buildMllamaVision(vc *config, b *builder, v *Vision) {
	h := v.Hidden
	pre := "model.vision_model."
	side := v.ImageSize / v.PatchSize
	patches := int64(side*side + 1)
	tiles := int64(vc.dim("max_num_tiles", 4))
	// max_aspect_ratio_id + 1 rows; 8 supported aspect ratios by default.
	ratios := int64(1 + vc.arrayLen("supported_aspect_ratios", 8))
	top := b.top(StackVision)
	conv(top, pre+"patch_embedding", 3*v.PatchSize*v.PatchSize, h, false)
	top.param(CompVision, KindParam, pre+"class_embedding", int64(h))
	top.param(CompVision, KindParam, pre+"gated_positional_embedding.embedding", patches*int64(h))
	top.param(CompVision, KindParam, pre+"gated_positional_embedding.gate", 1)
	top.param(CompVision, KindEmbedding, pre+"gated_positional_embedding.tile_embedding", ratios*tiles*patches*int64(h))
	for _, n := range []string{"pre_tile_positional_embedding", "post_tile_positional_embedding"} {
		top.param(CompVision, KindEmbedding, pre+n+".embedding", ratios*tiles*int64(h))
		top.param(CompVision, KindParam, pre+n+".gate", 1)
	}
	top.norm(CompVision, pre+"layernorm_pre", h, true)
	top.norm(CompVision, pre+"layernorm_post", h, true)
	global := vc.intIn("num_global_layers", 8, 0, maxLayers)
	local := v.Layers - global
	layer := func(g group, gated bool) {
		a := g.sub("self_attn.")
		for _, p := range []string{"q_proj", "k_proj", "v_proj", "o_proj"} {
			a.linear(CompVision, p, p, h, h, false)
		}
		g.linear(CompVision, "mlp.fc1", "fc1", h, v.Intermediate, true)
		g.linear(CompVision, "mlp.fc2", "fc2", v.Intermediate, h, true)
		g.norm(CompVision, "input_layernorm", h, true)
		g.norm(CompVision, "post_attention_layernorm", h, true)
		if gated {
			g.param(CompVision, KindParam, "gate_attn", 1)
			g.param(CompVision, KindParam, "gate_ffn", 1)
		}
	}
	layer(b.layers(StackVision, pre+"transformer.layers", 0, local), false)
	if global > 0 {
		layer(b.layers(StackVision, pre+"global_transformer.layers", local, global), true)
	}
}
