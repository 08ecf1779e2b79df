package model

import (
	"fmt"
	"strings"
)

// textSub returns the text_config of a VLM config, or c itself for the
// flat layout older Qwen2-VL configs use. A top-level tie_word_embeddings
// (the VLM's own setting) overrides the text config's default.
func textSub(c *config) *config {
	t := c.sub("text_config")
	if t == nil {
		return c
	}
	if v, ok := c.m["tie_word_embeddings"]; ok && v != nil && t.has("tie_word_embeddings") {
		// Both levels state it: transformers versions differ on which one
		// ties lm_head, so a disagreement leaves the count unknown.
		if top, inner := c.boolean("tie_word_embeddings", false), t.boolean("tie_word_embeddings", false); top != inner {
			c.fail("tie_word_embeddings", fmt.Sprintf("the value text_config.tie_word_embeddings states (%v)", inner), top)
		}
	}
	if v, ok := c.m["tie_word_embeddings"]; ok && v != nil && !t.has("tie_word_embeddings") {
		m := make(map[string]any, len(t.m)+1)
		for k, x := range t.m {
			m[k] = x
		}
		m["tie_word_embeddings"] = v
		t = &config{st: t.st, prefix: t.prefix, m: m}
	}
	return t
}

// readLanguageModel reads the language model of a VLM from t with the
// reader for t's model_type (defType when unset) and adds its modules with
// the decoder renamed from "model." to base+"." (transformers ≥ 4.52 keeps
// the decoder at model.language_model and lm_head at the top).
func readLanguageModel(t *config, defType string, m *Model, b *builder, base string) {
	mt := t.str("model_type", defType)
	if t.prefix == "" { // flat layout: the top-level model_type names the VLM
		mt = defType
	}
	r, ok := readers[mt]
	if !ok || isVLMType(mt) {
		t.fail("model_type", "a supported text model type", mt)
		return
	}
	inner := &builder{}
	r(t, m, inner)
	if inner.err != nil && b.err == nil {
		b.err = inner.err
	}
	for _, mod := range inner.mods {
		if rest, ok := strings.CutPrefix(mod.Name, "model."); ok {
			mod.Name = base + "." + rest
		}
		b.mods = append(b.mods, mod)
	}
}

// isVLMType reports whether model_type names a multimodal wrapper, which
// cannot itself be a text_config.
func isVLMType(mt string) bool { return vlmTypes[mt] }

// vlmTypes are the model_types read as multimodal wrappers.
var vlmTypes = map[string]bool{
	"llava": true, "qwen2_vl": true, "qwen2_5_vl": true, "qwen3_vl": true, "qwen3_vl_moe": true,
	"mllama": true, "llama4": true, "gemma3": true, "phi3_v": true, "mistral3": true,
	"internvl_chat": true, "gemma4": true, "qwen3_5": true, "qwen3_5_moe": true,
}

// readLlava reads LLaVA-style models (modeling_llava.py): a vision tower
// built from vision_config with AutoModel (CLIP for LLaVA-1.5, SigLIP,
// Pixtral for Pixtral-12B), a projector linear_1 (vision width × number of
// feature layers → text width) and linear_2 (text → text), both with bias
// (multimodal_projector_bias), and the language model of text_config. A
// sparse text_config takes LlamaConfig defaults (with a warning per key);
// a missing text_config or vision_config is refused (needSub).
func readLlava(c *config, m *Model, b *builder) {
	v := readTower(c, "vision_config", "clip_vision_model", "model.vision_tower", b)
	readLanguageModel(needText(c), "llama", m, b, "model.language_model")
	nFeat := featureLayers(c, -2)
	// LlavaModel.get_image_features drops the first token for "default"
	// (CLIP's CLS) and keeps every token for "full".
	cls := v.Tower == "clip_vision_model"
	switch c.str("vision_feature_select_strategy", "default") {
	case "full":
		if cls {
			v.TokensPerImage++
		}
	default:
		if !cls && v.TokensPerImage > 1 {
			v.TokensPerImage--
		}
	}
	checkFeatureLayers(c, v.Layers)
	bias := c.boolean("multimodal_projector_bias", true)
	p := b.top(StackProjector)
	p.linear(CompProjector, "model.multi_modal_projector.linear_1", "linear_1", v.Hidden*nFeat, m.Text.Hidden, bias)
	p.linear(CompProjector, "model.multi_modal_projector.linear_2", "linear_2", m.Text.Hidden, m.Text.Hidden, bias)
	m.Vision = v
}

// clipL336 is CLIP ViT-L/14 at 336 px, the tower Phi-3-vision's remote
// code builds (CLIP_VIT_LARGE_PATCH14_336_CONFIG).
func clipL336() map[string]any {
	return map[string]any{
		"hidden_size": numberOf(1024), "intermediate_size": numberOf(4096), "num_hidden_layers": numberOf(24),
		"num_attention_heads": numberOf(16), "image_size": numberOf(336), "patch_size": numberOf(14),
	}
}

// readGemma3 reads Gemma 3 VLMs (Gemma3ForConditionalGeneration): a
// SigLIP tower without pooling head, a projector made of
// mm_input_projection_weight (vision × text width) and mm_soft_emb_norm
// (RMSNorm of the vision width), and a Gemma 3 language model whose
// text_config falls back to Gemma3TextConfig defaults. Each image becomes
// mm_tokens_per_image tokens after 4×4 average pooling (modeling_gemma3.py;
// MODEL.md §9).
func readGemma3(c *config, m *Model, b *builder) {
	v := readTower(c, "vision_config", "siglip_vision_model", "model.vision_tower", b, "siglip_vision_model")
	v.TokensPerImage = c.dim("mm_tokens_per_image", 256)
	readLanguageModel(needText(c), "gemma3_text", m, b, "model.language_model")
	p := b.top(StackProjector)
	p.param(CompProjector, KindParam, "model.multi_modal_projector.mm_input_projection_weight", int64(v.Hidden)*int64(m.Text.Hidden))
	p.norm(CompProjector, "model.multi_modal_projector.mm_soft_emb_norm", v.Hidden, false)
	m.Vision = v
}

// readPhi3V reads Phi-3/3.5-vision (remote code modeling_phi3_v.py): a
// Phi-3 decoder and an image embedding made of a CLIP ViT-L/14-336 tower
// (the remote code builds CLIPVisionModel from a constant config, so
// img_processor only names it), learnable separators glb_GN and sub_GN
// (4 × image_dim_out each) and an img_projection MLP from 4 ×
// image_dim_out (2×2 merged patches) to the text width. Phi3VModel builds
// the image embedding only when embd_layer is an object, and
// Phi3ImageEmbedding needs img_processor naming clip_vision_model: both
// are required here.
func readPhi3V(c *config, m *Model, b *builder) {
	ip := needSub(c, "img_processor", "the image processor's config (an object naming its CLIP tower)").orEmpty(c, "img_processor")
	el := needSub(c, "embd_layer", "the image embedding's config (an object)").orEmpty(c, "embd_layer")
	if name := ip.str("name", "clip_vision_model"); name != "clip_vision_model" {
		ip.fail("name", "a vision tower this model builds (clip_vision_model)", name)
	}
	vc := &config{st: c.st, prefix: "img_processor.", m: clipL336()}
	v := readCLIPVision(vc)
	v.Tower = "clip_vision_model"
	dim := ip.dim("image_dim_out", v.Hidden)
	v.TokensPerImage = ip.dim("num_img_tokens", 144)
	m.Text = readStack(c, phi3Defaults)
	buildPhi3(c, &m.Text, b, "model")
	buildCLIPVision(b, &v, "model.vision_embed_tokens.img_processor.vision_model.")
	p := b.top(StackProjector)
	pre := "model.vision_embed_tokens."
	if el.boolean("with_learnable_separator", true) {
		p.param(CompProjector, KindParam, pre+"glb_GN", int64(4*dim))
		p.param(CompProjector, KindParam, pre+"sub_GN", int64(4*dim))
	}
	p.linear(CompProjector, pre+"img_projection.0", "img_projection.0", 4*dim, m.Text.Hidden, true)
	p.linear(CompProjector, pre+"img_projection.2", "img_projection.2", m.Text.Hidden, m.Text.Hidden, true)
	m.Vision = &v
}

// numberOf builds the JSON number a decoded config would hold.
func numberOf(n int) any { return jsonNumber(fmt.Sprint(n)) }
