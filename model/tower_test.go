package model

import (
	"errors"
	"sort"
	"strings"
	"testing"
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
