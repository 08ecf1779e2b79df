package model

// qwenVLReferenceImage is the side in pixels of the square image
// Vision.TokensPerImage is given for. Qwen-VL models take images at their
// native resolution (rounded to multiples of 28 between min_pixels and
// max_pixels), so there is no single image size; 448 px gives 16×16 = 256
// LLM tokens after the 2×2 merge (MODEL.md §9).
const qwenVLReferenceImage = 448

// readQwenVLVision reads the fields all Qwen-VL vision configs share.
func readQwenVLVision(vc *config, v *Vision) {
	v.PatchSize = vc.dim("patch_size", 14)
	v.SpatialMerge = vc.dim("spatial_merge_size", 2)
	v.TemporalPatch = vc.dim("temporal_patch_size", 2)
	v.ImageSize = qwenVLReferenceImage
	v.Resize = ResizeNative
	v.TokensPerImage = tokensPerImage(v)
}

// readQwen2VL reads Qwen2-VL: a ViT of depth blocks, width embed_dim,
// with a Conv3d patch embed (no bias), LayerNorm norm1/norm2, a fused qkv
// and proj with bias, fc1/fc2 of width embed_dim·mlp_ratio, and a
// PatchMerger (LayerNorm ln_q, then Linear(4·embed_dim, 4·embed_dim) and
// Linear(4·embed_dim, hidden_size)), followed by a Qwen2 language model
// (modeling_qwen2_vl.py; Qwen2VLVisionConfig defaults: depth 32, embed_dim
// 1280, mlp_ratio 4, 16 heads, patch 14).
func readQwen2VL(c *config, m *Model, b *builder) {
	vc := fixedTower(c, "vision_config", "qwen2_vl")
	v := Vision{SpatialMerge: 2, Tower: "qwen2_vl"}
	v.Layers = vc.layers("depth", 32)
	v.Hidden = vc.dim("embed_dim", 1280)
	v.Heads = vc.dim("num_heads", 16)
	v.Intermediate = v.Hidden * vc.intIn("mlp_ratio", 4, 1, 64)
	out := vc.dim("hidden_size", 3584)
	finishQwenVision(vc, &v, LayerNorm, PlainMLP)
	readQwenVLVision(vc, &v)
	readLanguageModel(textSub(c), "qwen2", m, b, "model.language_model")
	buildQwenVision(vc, b, &v, out, false)
	m.Vision = &v
}

// readQwen25VL reads Qwen2.5-VL: as Qwen2-VL but with RMSNorm norm1/norm2,
// a gated MLP (gate/up/down with bias) of intermediate_size, an RMSNorm
// ln_q in the merger, whose output width is out_hidden_size, and windowed
// attention except in fullatt_block_indexes (modeling_qwen2_5_vl.py;
// Qwen2_5_VLVisionConfig defaults: depth 32, hidden 1280, MLP 3420).
func readQwen25VL(c *config, m *Model, b *builder) {
	vc := fixedTower(c, "vision_config", "qwen2_5_vl")
	v := Vision{SpatialMerge: 2, Tower: "qwen2_5_vl"}
	v.Layers = vc.layers("depth", 32)
	v.Hidden = vc.dim("hidden_size", 1280)
	v.Heads = vc.dim("num_heads", 16)
	v.Intermediate = vc.dim("intermediate_size", 3420)
	out := vc.dim("out_hidden_size", 3584)
	finishQwenVision(vc, &v, RMSNorm, GatedMLP)
	readQwenVLVision(vc, &v)
	readLanguageModel(textSub(c), "qwen2", m, b, "model.language_model")
	buildQwenVision(vc, b, &v, out, false)
	m.Vision = &v
}

// readQwen3VL reads Qwen3-VL: a ViT with a Conv3d patch embed with bias,
// learned position embeddings (num_position_embeddings), LayerNorms,
// linear_fc1/linear_fc2 MLP, a merger, and one extra "deepstack" merger
// (with its LayerNorm over the merged width) per deepstack_visual_indexes
// entry, followed by a Qwen3 language model (modeling_qwen3_vl.py;
// Qwen3VLVisionConfig defaults: depth 27, hidden 1152, MLP 4304, patch 16).
func readQwen3VL(c *config, m *Model, b *builder) {
	readQwen3VLFamily(c, m, b, "qwen3_vl", "qwen3")
}

// readQwen3VLFamily reads a Qwen3-VL wrapper whose tower config is named
// tower and whose language model defaults to textType.
func readQwen3VLFamily(c *config, m *Model, b *builder, tower, textType string) {
	vc := fixedTower(c, "vision_config", tower)
	v := Vision{SpatialMerge: 2, Tower: tower}
	v.Layers = vc.layers("depth", 27)
	v.Hidden = vc.dim("hidden_size", 1152)
	v.Heads = vc.dim("num_heads", 16)
	v.Intermediate = vc.dim("intermediate_size", 4304)
	out := vc.dim("out_hidden_size", 3584)
	finishQwenVision(vc, &v, LayerNorm, PlainMLP)
	readQwenVLVision(vc, &v)
	if !vc.has("patch_size") {
		v.PatchSize = 16
		v.TokensPerImage = tokensPerImage(&v)
	}
	readLanguageModel(needText(c), textType, m, b, "model.language_model")
	buildQwenVision(vc, b, &v, out, true)
	m.Vision = &v
}

// finishQwenVision fills the Stack fields of a Qwen-VL tower.
func finishQwenVision(vc *config, v *Vision, norm NormKind, mlp MLPKind) {
	v.KVHeads = v.Heads
	if v.Heads > 0 {
		v.HeadDim = v.Hidden / v.Heads
		if v.Hidden%v.Heads != 0 {
			vc.fail("num_heads", "a divisor of the vision width", v.Heads)
		}
	}
	v.Norm, v.MLP = norm, mlp
	v.AttnBias, v.OutBias, v.MLPBias = true, true, true
	v.Activation = vc.str("hidden_act", "quick_gelu")
	v.LayerTypes = uniformLayers(v.Layers, FullAttention)
}

// buildQwenVision adds a Qwen-VL vision tower and its merger(s) under
// model.visual; out is the text width the merger projects to.
func buildQwenVision(vc *config, b *builder, v *Vision, out int, qwen3 bool) {
	h, p, t := v.Hidden, v.PatchSize, v.TemporalPatch
	top := b.top(StackVision)
	in := vc.dim("in_channels", vc.dim("in_chans", 3))
	conv(top, "model.visual.patch_embed.proj", in*t*p*p, h, qwen3)
	if qwen3 {
		top.embedding(CompVision, "model.visual.pos_embed", vc.dim("num_position_embeddings", 2304), h)
	}
	g := b.layers(StackVision, "model.visual.blocks", 0, v.Layers)
	ln := v.Norm == LayerNorm
	g.norm(CompVision, "norm1", h, ln)
	g.norm(CompVision, "norm2", h, ln)
	g.linear(CompVision, "attn.qkv", "qkv", h, 3*h, true)
	g.linear(CompVision, "attn.proj", "proj", h, h, true)
	switch {
	case v.MLP == GatedMLP:
		g.linear(CompVision, "mlp.gate_proj", "gate_proj", h, v.Intermediate, true)
		g.linear(CompVision, "mlp.up_proj", "up_proj", h, v.Intermediate, true)
		g.linear(CompVision, "mlp.down_proj", "down_proj", v.Intermediate, h, true)
	case qwen3:
		g.linear(CompVision, "mlp.linear_fc1", "linear_fc1", h, v.Intermediate, true)
		g.linear(CompVision, "mlp.linear_fc2", "linear_fc2", v.Intermediate, h, true)
	default:
		g.linear(CompVision, "mlp.fc1", "fc1", h, v.Intermediate, true)
		g.linear(CompVision, "mlp.fc2", "fc2", v.Intermediate, h, true)
	}
	qwenMergers(vc, b, v, out, qwen3)
}

// qwenMergers adds the patch merger that turns spatial-merge² patches into
// one LLM token (and Qwen3-VL's deepstack mergers).
func qwenMergers(vc *config, b *builder, v *Vision, out int, qwen3 bool) {
	h, ln := v.Hidden, v.Norm == LayerNorm
	merged := h * v.SpatialMerge * v.SpatialMerge
	pj := b.top(StackProjector)
	if !qwen3 {
		pj.norm(CompProjector, "model.visual.merger.ln_q", h, ln)
		pj.linear(CompProjector, "model.visual.merger.mlp.0", "mlp.0", merged, merged, true)
		pj.linear(CompProjector, "model.visual.merger.mlp.2", "mlp.2", merged, out, true)
		return
	}
	pj.norm(CompProjector, "model.visual.merger.norm", h, true)
	pj.linear(CompProjector, "model.visual.merger.linear_fc1", "linear_fc1", merged, merged, true)
	pj.linear(CompProjector, "model.visual.merger.linear_fc2", "linear_fc2", merged, out, true)
	deep := vc.ints("deepstack_visual_indexes", 0, maxLayers)
	if deep == nil && !vc.has("deepstack_visual_indexes") {
		deep = []int{8, 16, 24}
	}
	if n := len(deep); n > 0 {
		ds := b.repeat(StackProjector, "model.visual.deepstack_merger_list", n)
		ds.norm(CompProjector, "norm", merged, true)
		ds.linear(CompProjector, "linear_fc1", "linear_fc1", merged, merged, true)
		ds.linear(CompProjector, "linear_fc2", "linear_fc2", merged, out, true)
	}
}
