package model

import "fmt"

// readPixtralTower reads a PixtralVisionModel (transformers
// src/transformers/models/pixtral/modeling_pixtral.py@0233e509531a): a
// patch_conv Conv2d without bias, an RMSNorm ln_pre, and
// transformer.layers of attention_norm (RMSNorm), bias-free q/k/v/o
// projections of the full width, ffn_norm (RMSNorm) and a gated
// feed_forward (gate/up/down, no bias). Positions are 2-D RoPE, so there
// is no position table. PixtralVisionConfig defaults
// (configuration_pixtral.py): 1024 wide, 24 layers, 16 heads, MLP 4096,
// image_size 1024, patch 16; head_dim is always hidden/heads.
//
// Images keep their size up to image_size on the longest edge (the
// image processor's longest_edge in the released checkpoints), in whole
// patches, and the processor writes one [IMG_BREAK] after each row of
// patches, the last one an [IMG_END] (processing_pixtral.py@9243e99d559d).
func readPixtralTower(vc *config, b *builder, attr string) Vision {
	v := readVisionStack(vc, dims{hidden: 1024, layers: 24, heads: 16, inter: 4096, act: "gelu"})
	if v.Heads > 0 {
		v.HeadDim = v.Hidden / v.Heads // PixtralVisionConfig ignores a head_dim key
		if v.Hidden%v.Heads != 0 {
			vc.fail("num_attention_heads", "a divisor of hidden_size", v.Heads)
		}
	}
	v.KVHeads = v.Heads
	v.Norm, v.MLP = RMSNorm, GatedMLP
	v.AttnBias, v.OutBias, v.MLPBias = false, false, false
	v.ImageSize = vc.dim("image_size", 1024)
	v.PatchSize = vc.dim("patch_size", 16)
	checkPatches(vc, &v)
	v.Resize, v.MaxImageSize, v.RowTokens = ResizeNative, v.ImageSize, 1
	v.TokensPerImage = v.Image(0).Tokens

	h := v.Hidden
	top := b.top(StackVision)
	conv(top, attr+".patch_conv", vc.dim("num_channels", 3)*v.PatchSize*v.PatchSize, h, false)
	top.norm(CompVision, attr+".ln_pre", h, false)
	g := b.layers(StackVision, attr+".transformer.layers", 0, v.Layers)
	g.norm(CompVision, "attention_norm", h, false)
	a := g.sub("attention.")
	for _, p := range []string{"k_proj", "v_proj", "q_proj", "o_proj"} {
		a.linear(CompVision, p, p, h, h, false)
	}
	g.norm(CompVision, "ffn_norm", h, false)
	gatedMLP(g.sub("feed_forward."), CompVision, h, v.Intermediate, false)
	return v
}

// readMistral3 reads Mistral3ForConditionalGeneration (Mistral Small 3.1
// and 3.2, Magistral Small, Devstral Small with vision; transformers
// src/transformers/models/mistral3/modeling_mistral3.py@00dcc6dda6f6): a
// vision tower built from vision_config (Pixtral by default), a
// projector of an RMSNorm over the vision width, a patch merger
// merging_layer Linear(width·merge², width, no bias) that folds each
// spatial_merge_size² block of patches into one token, and linear_1
// (width × feature layers → text width) and linear_2, with bias when
// multimodal_projector_bias (default false), then the language model of
// text_config (Mistral by default). Mistral3Config defaults
// (configuration_mistral3.py@0db25542f219): spatial_merge_size 2,
// vision_feature_layer -1.
func readMistral3(c *config, m *Model, b *builder) {
	readLanguageModel(needText(c), "mistral", m, b, "model.language_model")
	v := readTower(c, "vision_config", "pixtral", "model.vision_tower", b)
	merge := c.dim("spatial_merge_size", 2)
	if v.Tower == "pixtral" {
		// The processor counts tokens in blocks of patch·merge pixels
		// (processing_mistral3.py: patch_size * spatial_merge_size).
		v.SpatialMerge = merge
		v.TokensPerImage = v.Image(0).Tokens
	}
	nFeat := featureLayers(c, -1)
	checkFeatureLayers(c, v.Layers)
	bias := c.boolean("multimodal_projector_bias", false)
	h, t := v.Hidden, m.Text.Hidden
	p := b.top(StackProjector)
	pre := "model.multi_modal_projector."
	p.norm(CompProjector, pre+"norm", h, false)
	p.linear(CompProjector, pre+"patch_merger.merging_layer", "merging_layer", h*merge*merge, h, false)
	p.linear(CompProjector, pre+"linear_1", "linear_1", h*nFeat, t, bias)
	p.linear(CompProjector, pre+"linear_2", "linear_2", t, t, bias)
	m.Vision = v
}

// featureLayers is the number of vision layers whose features the
// projector concatenates: vision_feature_layer is one index (def when
// absent) or a list of them.
func featureLayers(c *config, def int) int {
	if _, isList := c.m["vision_feature_layer"].([]any); isList {
		return max(len(c.ints("vision_feature_layer", -maxLayers, maxLayers)), 1)
	}
	c.intIn("vision_feature_layer", def, -maxLayers, maxLayers)
	return 1
}

// checkFeatureLayers refuses a vision_feature_layer that indexes past the
// tower's hidden states (layers + 1 of them, the embeddings first), which
// LLaVA-style get_image_features would fail on.
func checkFeatureLayers(c *config, layers int) {
	if layers <= 0 || c.err() != nil {
		return
	}
	var idx []int
	if _, isList := c.m["vision_feature_layer"].([]any); isList {
		idx = c.ints("vision_feature_layer", -maxLayers, maxLayers)
	} else if i, ok := integer(c.m["vision_feature_layer"]); ok {
		idx = []int{int(i)}
	}
	for _, i := range idx {
		if i < -(layers+1) || i > layers {
			c.fail("vision_feature_layer", fmt.Sprintf("a hidden-state index of the %d-layer tower, in [%d, %d]", layers, -(layers+1), layers), i)
			return
		}
	}
}
