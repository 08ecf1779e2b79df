package model

import "fmt"

// readVisionStack reads a vision tower's transformer dimensions. Vision
// towers have no vocabulary, attend bidirectionally and use LayerNorm
// with a plain MLP unless the family says otherwise.
func readVisionStack(c *config, d dims) Vision {
	d.vocab = 1
	s := readStack(c, d)
	s.Vocab = 0
	s.Causal, s.Norm, s.MLP = false, LayerNorm, PlainMLP
	s.AttnBias, s.OutBias, s.MLPBias = true, true, true
	s.Activation = c.str("hidden_act", "gelu")
	s.TiedEmbeddings = false
	return Vision{Stack: s, SpatialMerge: 1}
}

// checkPatches records an error when the image is smaller than one patch.
func checkPatches(c *config, v *Vision) {
	if v.PatchSize > 0 && v.ImageSize > 0 && v.ImageSize < v.PatchSize {
		c.fail("image_size", fmt.Sprintf("at least patch_size (%d)", v.PatchSize), v.ImageSize)
	}
}

// tokensPerImage is the number of LLM tokens one square image of
// v.ImageSize becomes when every patch (after spatial merging) is a token.
func tokensPerImage(v *Vision) int {
	if v.PatchSize <= 0 || v.SpatialMerge <= 0 {
		return 0
	}
	side := v.ImageSize / v.PatchSize / v.SpatialMerge
	return side * side
}

// conv adds a patch-embedding convolution of out channels over a kernel of
// kernel input elements (channels × frames × patch²), with optional bias.
func conv(g group, name string, kernel, out int, bias bool) {
	each := int64(kernel) * int64(out)
	if bias {
		each += int64(out)
	}
	g.param(CompVision, KindConv, name, each)
}

// vitLayers adds pre-LN ViT encoder layers (CLIP, SigLIP style): two
// LayerNorms with bias, q/k/v/out projections and fc1/fc2, all with bias,
// under the given module names.
func vitLayers(g group, v *Vision, n vitNames) {
	h, f := v.Hidden, v.Intermediate
	g.norm(CompVision, n.norm1, h, true)
	a := g.sub(n.attn)
	for _, p := range n.qkv {
		a.linear(CompVision, p, p, h, h, true)
	}
	a.linear(CompVision, n.out, n.out, h, h, true)
	g.norm(CompVision, n.norm2, h, true)
	g.linear(CompVision, n.fc1, "fc1", h, f, true)
	g.linear(CompVision, n.fc2, "fc2", f, h, true)
}

// vitNames are the module names of one ViT family's encoder layer.
type vitNames struct {
	norm1, norm2, attn, out, fc1, fc2 string
	qkv                               []string
}

// clipNames are CLIPEncoderLayer's (and SiglipEncoderLayer's) names.
var clipNames = vitNames{norm1: "layer_norm1", norm2: "layer_norm2", attn: "self_attn.",
	qkv: []string{"k_proj", "v_proj", "q_proj"}, out: "out_proj", fc1: "mlp.fc1", fc2: "mlp.fc2"}

// readCLIPVision reads a CLIPVisionConfig (defaults in
// configuration_clip.py: 768 wide, 12 layers, 12 heads, MLP 3072, 224 px,
// patch 32).
func readCLIPVision(c *config) Vision {
	v := readVisionStack(c, dims{hidden: 768, layers: 12, heads: 12, inter: 3072, act: "quick_gelu"})
	v.ImageSize = c.dim("image_size", 224)
	v.PatchSize = c.dim("patch_size", 32)
	checkPatches(c, &v)
	v.TokensPerImage = tokensPerImage(&v)
	return v
}

// buildCLIPVision adds a CLIPVisionModel under prefix: class embedding,
// patch conv (no bias), positions for patches + CLS, pre_layrnorm (sic),
// the encoder and post_layernorm (modeling_clip.py CLIPVisionTransformer).
func buildCLIPVision(b *builder, v *Vision, prefix string) {
	h := v.Hidden
	top := b.top(StackVision)
	top.param(CompVision, KindParam, prefix+"embeddings.class_embedding", int64(h))
	conv(top, prefix+"embeddings.patch_embedding", 3*v.PatchSize*v.PatchSize, h, false)
	patches := (v.ImageSize / v.PatchSize) * (v.ImageSize / v.PatchSize)
	top.embedding(CompVision, prefix+"embeddings.position_embedding", patches+1, h)
	top.norm(CompVision, prefix+"pre_layrnorm", h, true)
	vitLayers(b.layers(StackVision, prefix+"encoder.layers", 0, v.Layers), v, clipNames)
	top.norm(CompVision, prefix+"post_layernorm", h, true)
}

// readCLIPTower reads a CLIPVisionModel tower (the wrapper's attribute
// holds the model, whose transformer is at .vision_model).
func readCLIPTower(vc *config, b *builder, attr string) Vision {
	v := readCLIPVision(vc)
	buildCLIPVision(b, &v, attr+".vision_model.")
	return v
}

// readSiglipTower reads a SiglipVisionModel tower (transformer at
// .vision_model).
func readSiglipTower(vc *config, b *builder, attr string) Vision {
	v := readSiglipVision(vc)
	buildSiglipVision(vc, b, &v, attr+".vision_model.")
	return v
}

// readSiglipVision reads a SiglipVisionConfig (defaults in
// configuration_siglip.py: 768 wide, 12 layers, 12 heads, MLP 3072, 224
// px, patch 16).
func readSiglipVision(c *config) Vision {
	v := readVisionStack(c, dims{hidden: 768, layers: 12, heads: 12, inter: 3072, act: "gelu_pytorch_tanh"})
	v.ImageSize = c.dim("image_size", 224)
	v.PatchSize = c.dim("patch_size", 16)
	checkPatches(c, &v)
	v.TokensPerImage = tokensPerImage(&v)
	return v
}

// buildSiglipVision adds a SiglipVisionModel under prefix: patch conv with
// bias, one position per patch (no CLS), the encoder, post_layernorm, and
// the attention-pooling head when vision_use_head (modeling_siglip.py).
func buildSiglipVision(c *config, b *builder, v *Vision, prefix string) {
	h := v.Hidden
	top := b.top(StackVision)
	conv(top, prefix+"embeddings.patch_embedding", 3*v.PatchSize*v.PatchSize, h, true)
	patches := (v.ImageSize / v.PatchSize) * (v.ImageSize / v.PatchSize)
	top.embedding(CompVision, prefix+"embeddings.position_embedding", patches, h)
	vitLayers(b.layers(StackVision, prefix+"encoder.layers", 0, v.Layers), v, clipNames)
	top.norm(CompVision, prefix+"post_layernorm", h, true)
	if c.boolean("vision_use_head", true) {
		// SiglipMultiheadAttentionPoolingHead: probe, nn.MultiheadAttention
		// (in_proj 3h×h + bias, out_proj), LayerNorm, MLP.
		top.param(CompVision, KindParam, prefix+"head.probe", int64(h))
		top.linear(CompVision, prefix+"head.attention.in_proj", "in_proj", h, 3*h, true)
		top.linear(CompVision, prefix+"head.attention.out_proj", "out_proj", h, h, true)
		top.norm(CompVision, prefix+"head.layernorm", h, true)
		top.linear(CompVision, prefix+"head.mlp.fc1", "fc1", h, v.Intermediate, true)
		top.linear(CompVision, prefix+"head.mlp.fc2", "fc2", v.Intermediate, h, true)
	}
}
