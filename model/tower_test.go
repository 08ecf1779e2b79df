package model

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
)

// TestVLMWithoutSubConfig checks that every multimodal wrapper refuses a
// config missing the sub-config that sizes its tower or its language
// model, naming the key, instead of filling it from a config class's
// defaults (a Llama 4 config without vision_config came out 435M
// parameters short).
func TestVLMWithoutSubConfig(t *testing.T) {
	towerKey := map[string]string{"phi3_v": "img_processor"}
	textKey := map[string]string{"internvl_chat": "llm_config"}
	optionalTower := map[string]bool{"gemma4": true}
	types := make([]string, 0, len(vlmTypes))
	for mt := range vlmTypes {
		types = append(types, mt)
	}
	sort.Strings(types)
	for _, mt := range types {
		key := towerKey[mt]
		if key == "" {
			key = "vision_config"
		}
		t.Run(mt+" without "+key, func(t *testing.T) {
			cfg := `{"model_type": "` + mt + `", "text_config": {}, "llm_config": {}, "embd_layer": {}}`
			if optionalTower[mt] {
				// Gemma4Model builds no vision tower for a null vision_config.
				m, err := Parse([]byte(cfg))
				if err != nil || m.Vision != nil || m.StackParams(StackVision) != 0 {
					t.Fatalf("got %v, vision %+v; want a text-only model", err, m)
				}
				return
			}
			wantConfigError(t, cfg, key, "missing, want")
		})
		if mt == "phi3_v" || mt == "qwen2_vl" || mt == "qwen2_5_vl" {
			continue // their language model's keys are top-level
		}
		text := textKey[mt]
		if text == "" {
			text = "text_config"
		}
		t.Run(mt+" without "+text, func(t *testing.T) {
			wantConfigError(t, `{"model_type": "`+mt+`", "vision_config": {}}`, text, "missing, want the language model's config")
		})
	}
}

// TestUnknownTower checks that a tower gpumem cannot read is refused with
// its model_type named, not read as another tower.
func TestUnknownTower(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"llava with an unknown tower", `{"model_type": "llava", "text_config": {}, "vision_config": {"model_type": "eva_vit"}}`,
			`want a supported vision tower (clip_vision_model, `},
		{"gemma3 with a CLIP tower", `{"model_type": "gemma3", "text_config": {}, "vision_config": {"model_type": "clip_vision_model"}}`,
			"want a vision tower this model builds (siglip_vision_model)"},
		{"mistral3 with an unknown tower", `{"model_type": "mistral3", "text_config": {}, "vision_config": {"model_type": "moonvit"}}`,
			`got "moonvit"`},
		{"qwen3_vl with a Qwen2 tower", `{"model_type": "qwen3_vl", "text_config": {}, "vision_config": {"model_type": "qwen2_vl"}}`,
			"want a vision tower this model builds (qwen3_vl)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantConfigError(t, tt.json, "vision_config.model_type", tt.want)
		})
	}
	wantConfigError(t, `{"model_type": "phi3_v", "embd_layer": {}, "img_processor": {"name": "siglip"}}`, "img_processor.name", `got "siglip"`)
}

// wantConfigError parses cfg and checks that it fails with a
// *ConfigError for key whose message contains want.
func wantConfigError(t *testing.T, cfg, key, want string) {
	t.Helper()
	m, err := Parse([]byte(cfg))
	if err == nil {
		t.Fatalf("Parse succeeded (%d params), want an error for %s", m.TotalParams(), key)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != key || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q, want a ConfigError for key %q containing %q", err, key, want)
	}
}

// TestUnreadVLMsRefused checks that each multimodal family gpumem does not
// read yet is refused naming it, by model_type and by architectures[0],
// even when its top level holds the keys of a text model (phi4mm).
func TestUnreadVLMsRefused(t *testing.T) {
	byType := map[string]string{}
	for arch, mt := range unreadArchs {
		byType[mt] = arch
	}
	for mt := range unreadVLMs {
		for _, cfg := range []string{
			`{"model_type": "` + mt + `", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "text_config": {}, "vision_config": {}}`,
			`{"architectures": ["` + byType[mt] + `"], "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100}`,
		} {
			m, err := Parse([]byte(cfg))
			if err == nil {
				t.Fatalf("%s: read (%d params), want a refusal", cfg, m.TotalParams())
			}
			if !errors.Is(err, ErrUnsupportedArchitecture) || !strings.Contains(err.Error(), mt) {
				t.Errorf("%s: error %q, want ErrUnsupportedArchitecture naming %s", cfg, err, mt)
			}
		}
	}
}

// TestVLMContradictions checks that keys of a multimodal config that
// contradict each other are refused naming them.
func TestVLMContradictions(t *testing.T) {
	tests := []struct{ name, json, key, want string }{
		{"tie at both levels disagreeing", `{"model_type": "llava", "tie_word_embeddings": true, "text_config": {"tie_word_embeddings": false}, "vision_config": {}}`,
			"tie_word_embeddings", "text_config.tie_word_embeddings states (false)"},
		{"feature layer past the tower", `{"model_type": "llava", "vision_feature_layer": -30, "text_config": {}, "vision_config": {"num_hidden_layers": 24}}`,
			"vision_feature_layer", "in [-25, 24], got -30"},
		{"feature layers list past the tower", `{"model_type": "mistral3", "vision_feature_layer": [-1, 40], "text_config": {}, "vision_config": {}}`,
			"vision_feature_layer", "got 40"},
		{"internvl tiles reversed", `{"model_type": "internvl_chat", "dynamic_image_size": true, "min_dynamic_patch": 9, "max_dynamic_patch": 2, "llm_config": {}, "vision_config": {}}`,
			"min_dynamic_patch", "at most max_dynamic_patch (2)"},
		{"gemma4 experts per token above experts", `{"model_type": "gemma4", "text_config": {"enable_moe_block": true, "num_experts": 4, "top_k_experts": 8, "moe_intermediate_size": 64}}`,
			"text_config.top_k_experts", "at most num_experts (4)"},
		{"gemma4 MoE block without experts", `{"model_type": "gemma4", "text_config": {"enable_moe_block": true, "top_k_experts": 8, "moe_intermediate_size": 64}}`,
			"text_config.num_experts", "a positive integer when enable_moe_block"},
		{"gemma4 every layer KV-shared", `{"model_type": "gemma4", "text_config": {"num_hidden_layers": 4, "num_kv_shared_layers": 4}}`,
			"text_config.num_kv_shared_layers", "fewer than num_hidden_layers (4)"},
		{"qwen3_vl_moe top-k above experts", `{"model_type": "qwen3_vl_moe", "text_config": {"num_experts": 2, "num_experts_per_tok": 3}, "vision_config": {}}`,
			"text_config.num_experts_per_tok", "at most the number of experts (2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantConfigError(t, tt.json, tt.key, tt.want) })
	}
}

// TestLlavaPixtralTower checks that a LLaVA config whose vision_config
// names pixtral (Pixtral-12B's layout) is read with the Pixtral tower, not
// as CLIP: bias-free attention and gated MLP, RMSNorms, no class or
// position embedding, and one [IMG_BREAK] per row of patches. The count
// is worked out by hand from modeling_pixtral.py for Pixtral-12B's vision
// dimensions.
func TestLlavaPixtralTower(t *testing.T) {
	m, err := Parse([]byte(`{"model_type": "llava", "vision_feature_select_strategy": "full", "vision_feature_layer": -1,
		"text_config": {"model_type": "mistral", "hidden_size": 5120, "num_hidden_layers": 2, "num_attention_heads": 32,
			"num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 14336, "vocab_size": 131072},
		"vision_config": {"model_type": "pixtral", "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
			"num_attention_heads": 16, "image_size": 1024, "patch_size": 16}}`))
	if err != nil {
		t.Fatal(err)
	}
	const h, f, layers = 1024, 4096, 24
	layer := int64(4*h*h + 3*h*f + 2*h)  // q/k/v/o, gate/up/down, two RMSNorms
	want := layers*layer + 3*16*16*h + h // + patch_conv (no bias) + ln_pre
	if got := m.StackParams(StackVision); got != want {
		t.Errorf("vision tower %d, want %d", got, want)
	}
	for _, mod := range m.Modules {
		if mod.Stack == StackVision && (strings.Contains(mod.Name, "class_embedding") || strings.Contains(mod.Name, "position_embedding")) {
			t.Errorf("CLIP module %s in a Pixtral tower", mod.Name)
		}
	}
	// 1024 px in 16 px patches: 64 rows of 64 patches and a break each.
	if v := m.Vision; v.Tower != "pixtral" || v.TokensPerImage != 64*65 {
		t.Errorf("tower %q, %d tokens per image; want pixtral, %d", v.Tower, v.TokensPerImage, 64*65)
	}
}

// TestLlavaPixtralPreprocessor checks that a preprocessor_config.json next
// to a Pixtral-under-LLaVA config caps the image at its longest_edge and
// keeps the row breaks in the token count.
func TestLlavaPixtralPreprocessor(t *testing.T) {
	cfg := `{"model_type": "llava", "vision_feature_select_strategy": "full", "vision_feature_layer": -1,
		"text_config": {"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 4,
			"intermediate_size": 128, "vocab_size": 100},
		"vision_config": {"model_type": "pixtral", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
			"num_attention_heads": 4, "image_size": 1024, "patch_size": 16}}`
	fsys := fstest.MapFS{
		"m/" + ConfigFile:       {Data: []byte(cfg)},
		"m/" + PreprocessorFile: {Data: []byte(`{"size": {"longest_edge": 512}, "patch_size": {"height": 16, "width": 16}}`)},
	}
	m, err := ParseFS(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	// 512 px in 16 px patches: 32 rows of 32 patches and a break each.
	if v := m.Vision; v.TokensPerImage != 32*33 || v.Image(2000).Tokens != 32*33 {
		t.Errorf("tokens per image %d (at 2000 px %d), want %d", v.TokensPerImage, v.Image(2000).Tokens, 32*33)
	}
}
