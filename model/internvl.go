package model

import "fmt"

// readInternViTTower reads an InternVisionModel (remote code,
// OpenGVLab/InternVL:internvl_chat/internvl/model/internvl_chat/modeling_intern_vit.py@1fbcd6a1158e
// and the same file in every InternVL 2/2.5/3/3.5 release):
// embeddings.class_embedding (h), a patch_embedding Conv2d with bias,
// a position_embedding of (image/patch)² + 1 rows; layers of attn.qkv
// (bias when qkv_bias) and attn.proj (bias), per-layer RMSNorms
// attn.q_norm/attn.k_norm over the full width when qk_normalization,
// mlp.fc1/fc2 with bias, norm1/norm2 (LayerNorm with bias for norm_type
// "layer_norm", RMSNorm for "rms_norm"), and the layer scales ls1/ls2.
// InternVisionConfig defaults (configuration_intern_vit.py): InternViT-6B,
// 3200 wide, 48 layers, 25 heads, MLP 12800, 224 px, patch 14, RMSNorm,
// qk_normalization, no qkv bias.
func readInternViTTower(vc *config, b *builder, attr string) Vision {
	v := readVisionStack(vc, dims{hidden: 3200, layers: 48, heads: 25, inter: 12800, act: "gelu"})
	v.ImageSize = vc.dim("image_size", 224)
	v.PatchSize = vc.dim("patch_size", 14)
	checkPatches(vc, &v)
	qkvBias := vc.boolean("qkv_bias", false)
	qkNorm := vc.boolean("qk_normalization", true)
	ln := true
	switch nt := vc.str("norm_type", "rms_norm"); nt {
	case "layer_norm":
	case "rms_norm":
		ln = false
		v.Norm = RMSNorm
	default:
		vc.fail("norm_type", `"layer_norm" or "rms_norm"`, nt)
	}
	v.AttnBias, v.QKNorm = qkvBias, qkNorm

	h := v.Hidden
	pre := attr + "."
	top := b.top(StackVision)
	top.param(CompVision, KindParam, pre+"embeddings.class_embedding", int64(h))
	conv(top, pre+"embeddings.patch_embedding", 3*v.PatchSize*v.PatchSize, h, true)
	side := v.ImageSize / v.PatchSize
	top.param(CompVision, KindEmbedding, pre+"embeddings.position_embedding", int64(side*side+1)*int64(h))
	g := b.layers(StackVision, pre+"encoder.layers", 0, v.Layers)
	g.linear(CompVision, "attn.qkv", "qkv", h, 3*h, qkvBias)
	if qkNorm {
		g.norm(CompVision, "attn.q_norm", h, false)
		g.norm(CompVision, "attn.k_norm", h, false)
	}
	g.linear(CompVision, "attn.proj", "proj", h, h, true)
	g.linear(CompVision, "mlp.fc1", "fc1", h, v.Intermediate, true)
	g.linear(CompVision, "mlp.fc2", "fc2", v.Intermediate, h, true)
	g.norm(CompVision, "norm1", h, ln)
	g.norm(CompVision, "norm2", h, ln)
	g.param(CompVision, KindParam, "ls1", int64(h))
	g.param(CompVision, KindParam, "ls2", int64(h))
	return v
}

// readInternVLChat reads InternVLChatModel, the remote-code InternVL
// 1.5–3.5 releases (OpenGVLab/InternVL:
// internvl_chat/internvl/model/internvl_chat/modeling_internvl_chat.py@03285798fa1e):
// an InternViT tower at vision_model, the language model llm_config
// describes at language_model (its architectures[0] picks the class), and
// mlp1, a LayerNorm and Linear over the pixel-shuffled features
// (width / downsample_ratio²) to the text width, GELU and a second
// Linear. Each 448-px tile becomes (image/patch)² · downsample_ratio²
// tokens (num_image_token); with dynamic_image_size an image is cut into
// min_dynamic_patch to max_dynamic_patch tiles on the grid closest to its
// aspect ratio, plus a thumbnail tile (use_thumbnail), and the prompt wraps
// them in <img> … </img> (chat and dynamic_preprocess in
// internvl_chat/internvl/train/dataset.py@1831ceb9a2b6).
func readInternVLChat(c *config, m *Model, b *builder) {
	vc := fixedTower(c, "vision_config", "intern_vit_6b")
	v := readInternViTTower(vc, b, "vision_model")
	v.Tower = "intern_vit_6b"
	lc := needSub(c, "llm_config", "the language model's config (an object): its size cannot be inferred without it").orEmpty(c, "llm_config")
	readLanguageModel(lc, llmType(lc), m, b, "language_model.model")
	ratio := c.number("downsample_ratio", 0.5)
	merge := 0
	if ratio > 0 && ratio <= 1 {
		merge = int(1/ratio + 0.5)
	}
	if merge < 1 || float64(merge)*ratio != 1 {
		c.fail("downsample_ratio", "the inverse of a whole number (0.5, 0.25)", ratio)
		merge = 1
	}
	v.SpatialMerge = merge
	if size := c.intIn("force_image_size", 0, 0, maxDim); size > 0 {
		if size < v.PatchSize {
			c.fail("force_image_size", fmt.Sprintf("at least patch_size (%d)", v.PatchSize), size)
		}
		v.ImageSize = size
	}
	if c.boolean("dynamic_image_size", false) {
		lo := c.intIn("min_dynamic_patch", 1, 1, maxLayers)
		hi := c.intIn("max_dynamic_patch", 6, 1, maxLayers)
		if lo > hi {
			c.fail("min_dynamic_patch", fmt.Sprintf("at most max_dynamic_patch (%d)", hi), lo)
		}
		v.Tiling = &Tiling{Kind: TilesGrid, MinTiles: lo, MaxTiles: hi, Thumbnail: c.boolean("use_thumbnail", false)}
	}
	v.ImageTokens = 2 // <img> and </img>
	v.TokensPerImage = v.Image(0).Tokens

	in := v.Hidden * merge * merge
	p := b.top(StackProjector)
	p.norm(CompProjector, "mlp1.0", in, true)
	p.linear(CompProjector, "mlp1.1", "mlp1.1", in, m.Text.Hidden, true)
	p.linear(CompProjector, "mlp1.3", "mlp1.3", m.Text.Hidden, m.Text.Hidden, true)
	m.Vision = &v
}

// llmType is the model_type of InternVL's llm_config: the remote code
// builds the class its architectures[0] names, so that decides; its
// model_type is the fallback.
func llmType(lc *config) string {
	if archs := lc.strs("architectures"); len(archs) > 0 {
		if t, ok := archTypes[archs[0]]; ok {
			return t
		}
	}
	return lc.str("model_type", "llama")
}
