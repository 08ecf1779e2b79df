package model

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the config parser: it must return a
// model or an error, never panic, and a model it returns must satisfy the
// inventory invariants. The catalog configs are the seed corpus; crashers
// found later live in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	files, err := fs.Glob(catalogFS, "catalog/*.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := catalogFS.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	hybrid, err := filepath.Glob("testdata/hybrid/*.json")
	if err != nil || len(hybrid) == 0 {
		f.Fatalf("no hybrid release configs: %v", err)
	}
	for _, file := range hybrid {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"model_type": "nemotron_h", "hybrid_override_pattern": "M*-E", "n_routed_experts": 4, "num_experts_per_tok": 2, "time_step_limit": [0.0, Infinity]}`))
	f.Add([]byte(`{"model_type": "qwen3_next", "num_hidden_layers": 4, "full_attention_interval": 2, "num_experts": 0}`))
	f.Add([]byte(`{"model_type": "minimax_m1", "num_hidden_layers": 2, "attn_type_list": [0, 1], "shared_intermediate_size": 64}`))
	f.Add([]byte(`{"model_type": "frobnet", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "x": NaN}`))
	f.Add([]byte(`{"model_type": "llava", "text_config": {"model_type": "llava"}}`))
	f.Add([]byte(`{"model_type": "deepseek_v3", "q_lora_rank": null, "n_routed_experts": 1, "num_experts_per_tok": 1}`))
	// multimodal wrappers (tower.go): real release configs and edge cases
	vlms, err := filepath.Glob("testdata/vlm/*.json")
	if err != nil || len(vlms) == 0 {
		f.Fatalf("no VLM release configs in testdata/vlm: %v", err)
	}
	for _, file := range vlms {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		`{"model_type": "internvl_chat", "downsample_ratio": 0.3, "dynamic_image_size": true, "min_dynamic_patch": 9, "max_dynamic_patch": 2, "llm_config": {"architectures": ["Qwen2ForCausalLM"]}, "vision_config": {}}`,
		`{"model_type": "gemma4", "text_config": {"num_hidden_layers": 2, "num_kv_shared_layers": 2, "enable_moe_block": true, "num_experts": 4, "top_k_experts": 9}, "vision_config": {"pooling_kernel_size": 99}}`,
		`{"model_type": "mistral3", "spatial_merge_size": 0, "text_config": {}, "vision_config": {"model_type": "pixtral", "image_size": 1, "patch_size": 14}}`,
		`{"model_type": "llava", "text_config": {}, "vision_config": {"model_type": "siglip_vision_model"}, "vision_feature_layer": [-1, -2, 3]}`,
		`{"model_type": "qwen3_vl_moe", "text_config": {"num_experts": 2, "num_experts_per_tok": 3}, "vision_config": {}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			if m != nil {
				t.Fatalf("model and error both returned: %v", err)
			}
			return
		}
		total := m.TotalParams()
		var sum int64
		for _, mod := range m.Modules {
			if mod.Params <= 0 || mod.Each <= 0 || mod.Instances <= 0 {
				t.Fatalf("module %s with non-positive counts: %+v", mod.Name, mod)
			}
			sum += mod.Params
			if sum < 0 {
				t.Fatalf("sum of modules overflows")
			}
		}
		if sum != total || total <= 0 {
			t.Fatalf("total %d, sum %d", total, sum)
		}
		if a := m.ActiveParams(); a <= 0 || a > total {
			t.Fatalf("active %d, total %d", a, total)
		}
		if len(m.Text.LayerTypes) != m.Text.Layers {
			t.Fatalf("%d layer types for %d layers", len(m.Text.LayerTypes), m.Text.Layers)
		}
		if v := m.Vision; v != nil {
			for _, side := range []int{0, 1, 1 << 16} {
				if sh := v.Image(side); sh.Tiles < 1 || sh.Patches < 0 || sh.Tokens < 0 {
					t.Fatalf("image of side %d: %+v", side, sh)
				}
			}
		}
		recurrent := 0
		for _, lt := range m.Text.LayerTypes {
			if lt.State != "" {
				recurrent++
			}
		}
		if (recurrent > 0) != (m.Text.State != nil) {
			t.Fatalf("%d recurrent layers, state %+v", recurrent, m.Text.State)
		}
		if r := m.Text.State; r != nil && (r.Heads <= 0 || r.HeadDim <= 0 || r.StateDim <= 0 || r.ConvDim() < 0) {
			t.Fatalf("recurrent state %+v", r)
		}
	})
}
