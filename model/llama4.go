package model

// readLlama4Text reads a Llama 4 text model (Llama4ForCausalLM,
// modeling_llama4.py): Llama attention (the QK L2 norm has no weights),
// MoE layers listed in moe_layers (default: every
// interleave_moe_layer_step-th) with a router Linear(h, E), fused expert
// tensors gate_up_proj (E, h, 2f) and down_proj (E, f, h) without bias and
// a shared_expert MLP of intermediate_size; dense layers use
// intermediate_size_mlp. Layers without RoPE attend globally, the others
// in chunks of attention_chunk_size (Llama4TextConfig defaults: 48
// layers, 5120 wide, 40 heads, 8 KV heads, 16 experts, top-1, vocab
// 202048, chunk 8192, NoPE every 4th layer).
func readLlama4Text(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 5120, layers: 48, heads: 40, kvHeads: 8, headDim: 128, inter: 8192, vocab: 202048, maxPos: 4096 * 32})
	s.MoE = readMoE(c, moeDefaults{experts: 16, perToken: 1, expertFFN: s.Intermediate})
	s.MoE.ExpertFFN = s.Intermediate
	s.MoE.SharedExperts, s.MoE.SharedFFN = 1, s.Intermediate
	dense := c.dim("intermediate_size_mlp", 16384)
	llama4MoELayers(c, &s)
	llama4Attention(c, &s)
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias = s.AttnBias
	m.Text = s
	e, f := s.MoE.Experts, s.Intermediate
	buildDecoder(b, &m.Text, decoderSpec{base: "model", head: "lm_head",
		attn: attnOpts{qkvBias: s.AttnBias, oBias: s.AttnBias},
		mlp: func(g group, isMoE bool) {
			g = g.sub("feed_forward.")
			if !isMoE {
				gatedMLP(g, CompMLP, s.Hidden, dense, false)
				return
			}
			g.linear(CompRouter, "router", "router", s.Hidden, e, false)
			x := g.sub("experts.")
			x.experts(CompExperts, "gate_up_proj", "gate_up_proj", e, s.Hidden, 2*f, false)
			x.experts(CompExperts, "down_proj", "down_proj", e, f, s.Hidden, false)
			gatedMLP(g.sub("shared_expert."), CompSharedExperts, s.Hidden, f, false)
		}})
}

// llama4MoELayers marks the layers in moe_layers, by default every
// interleave_moe_layer_step-th layer (Llama4TextConfig).
func llama4MoELayers(c *config, s *Stack) {
	step := c.intIn("interleave_moe_layer_step", 1, 1, maxLayers)
	moeLayers := map[int]bool{}
	if list := c.ints("moe_layers", 0, maxLayers); list != nil {
		for _, i := range list {
			moeLayers[i] = true
		}
	} else {
		for i := step - 1; i < s.Layers; i += step {
			moeLayers[i] = true
		}
	}
	markMoELayers(s, func(i int) bool { return moeLayers[i] })
}

// llama4Attention sets the layer kinds: layers that use RoPE
// (no_rope_layers[i] == 1, by default all but every
// no_rope_layer_interval-th) attend in chunks of attention_chunk_size, the
// NoPE layers globally (Llama4TextConfig.layer_types).
func llama4Attention(c *config, s *Stack) {
	s.AttentionChunk = c.count("attention_chunk_size", 8192)
	nope := c.ints("no_rope_layers", 0, 1)
	interval := c.intIn("no_rope_layer_interval", 4, 1, maxLayers)
	for i := range s.LayerTypes {
		rope := (i+1)%interval != 0
		if nope != nil && i < len(nope) {
			rope = nope[i] == 1
		}
		if rope && s.AttentionChunk > 0 {
			s.LayerTypes[i].Attention = ChunkedAttention
		}
	}
	readLayerTypes(c, s)
}

// readLlama4 reads Llama4ForConditionalGeneration: a Llama 4 text model,
// a vision model (unfold-convolution patch Linear without bias, class and
// positional embeddings, pre/post LayerNorms, encoder layers with biased
// q/k/v/o and fc1/fc2, and a pixel-shuffle adapter MLP fc1/fc2 without
// bias) and a projector linear_1 (vision_output_dim → text width, no bias)
// (see readLlama4Vision for the vision defaults).
func readLlama4(c *config, m *Model, b *builder) {
	readLanguageModel(needText(c), "llama4_text", m, b, "model.language_model")
	vc := fixedTower(c, "vision_config", "llama4_vision_model")
	v := readLlama4Vision(vc)
	v.Tower = "llama4_vision_model"
	buildLlama4Vision(vc, b, &v)
	b.top(StackProjector).linear(CompProjector, "model.multi_modal_projector.linear_1", "linear_1",
		vc.dim("vision_output_dim", 4096), m.Text.Hidden, false)
	m.Vision = &v
}

// readLlama4Vision reads a Llama4VisionConfig (configuration_llama4.py
// defaults: 768 wide, 34 layers, 16 heads, MLP 5632, 448 px, patch 14,
// pixel_shuffle_ratio 0.5, projector 4096 → 4096).
func readLlama4Vision(vc *config) Vision {
	v := readVisionStack(vc, dims{hidden: 768, layers: 34, heads: 16, inter: 5632})
	v.ImageSize = vc.dim("image_size", 448)
	v.PatchSize = vc.dim("patch_size", 14)
	checkPatches(vc, &v)
	ratio := vc.number("pixel_shuffle_ratio", 0.5)
	merge := 0
	if ratio > 0 && ratio <= 1 {
		merge = int(1/ratio + 0.5)
	}
	if merge < 1 || float64(merge)*ratio != 1 {
		vc.fail("pixel_shuffle_ratio", "the inverse of a whole number (0.5, 0.25)", ratio)
		merge = 2
	}
	v.SpatialMerge = merge
	// Llama4ImageProcessor fits an image to the canvas of image_size tiles
	// (at most max_patches = 16 of them) that upscales it least, so a
	// square image gets min(ceil(side / tile), 4)² tiles, plus a global
	// tile when there is more than one. The processor writes
	// <|image_start|>, the tiles' <|patch|> tokens each followed by a
	// <|tile_x_separator|> or <|tile_y_separator|>, <|image|>, the global
	// tile's patches and <|image_end|> (processing_llama4.py
	// _prompt_split_image); one tile alone has no separator.
	v.Tiling = &Tiling{Kind: TilesSplit, MaxTiles: llama4MaxTiles, Thumbnail: true, LongestEdge: 4 * v.ImageSize}
	v.TileTokens, v.ImageTokens = 1, 2
	v.TokensPerImage = v.Image(0).Tokens
	return v
}

// llama4MaxTiles is Llama4ImageProcessor's default max_patches: the tiles
// an image may be cut into (a 4 × 4 grid for a square image).
const llama4MaxTiles = 16

// buildLlama4Vision adds Llama4VisionModel.
func buildLlama4Vision(vc *config, b *builder, v *Vision) {
	h, p := v.Hidden, v.PatchSize
	pre := "model.vision_model."
	top := b.top(StackVision)
	top.linear(CompVision, pre+"patch_embedding.linear", "linear", vc.dim("num_channels", 3)*p*p, h, false)
	top.param(CompVision, KindParam, pre+"class_embedding", int64(h))
	side := v.ImageSize / p
	top.param(CompVision, KindParam, pre+"positional_embedding_vlm", int64(side*side+1)*int64(h))
	top.norm(CompVision, pre+"layernorm_pre", h, true)
	top.norm(CompVision, pre+"layernorm_post", h, true)
	g := b.layers(StackVision, pre+"model.layers", 0, v.Layers)
	a := g.sub("self_attn.")
	for _, n := range []string{"q_proj", "k_proj", "v_proj", "o_proj"} {
		a.linear(CompVision, n, n, h, h, true)
	}
	g.linear(CompVision, "mlp.fc1", "fc1", h, v.Intermediate, true)
	g.linear(CompVision, "mlp.fc2", "fc2", v.Intermediate, h, true)
	g.norm(CompVision, "input_layernorm", h, true)
	g.norm(CompVision, "post_attention_layernorm", h, true)
	pin, pout := vc.dim("projector_input_dim", 4096), vc.dim("projector_output_dim", 4096)
	ad := b.top(StackProjector)
	ad.linear(CompProjector, pre+"vision_adapter.mlp.fc1", "fc1", v.Intermediate, pin, false)
	ad.linear(CompProjector, pre+"vision_adapter.mlp.fc2", "fc2", pout, pout, false)
}
