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
	// The release configs of the hybrid and newer families.
	var more []string
	for _, dir := range []string{"testdata/hybrid", "testdata/families"} {
		files, err := filepath.Glob(dir + "/*.json")
		if err != nil || len(files) == 0 {
			f.Fatalf("no release configs in %s: %v", dir, err)
		}
		more = append(more, files...)
	}
	for _, file := range more {
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
	for _, seed := range []string{
		`{"model_type": "nemotron-nas", "num_hidden_layers": 2, "block_configs": [{}, {"attention": {"no_op": true}, "ffn": {"no_op": true}}]}`,
		`{"model_type": "nemotron-nas", "num_hidden_layers": 1, "block_configs": [{"attention": {"n_heads_in_group": 8}, "ffn": {"ffn_mult": 1e300}}]}`,
		`{"model_type": "glm_moe_dsa", "num_hidden_layers": 2, "index_topk_pattern": "FS"}`,
		`{"model_type": "glm_moe_dsa", "num_hidden_layers": 3, "indexer_types": ["full", "shared", "full"], "mlp_layer_types": ["dense", "sparse", "dense"]}`,
		`{"model_type": "exaone4", "num_hidden_layers": 3, "sliding_window_pattern": "LG"}`,
		`{"model_type": "exaone4", "sliding_window": null}`,
		`{"model_type": "hunyuan", "architectures": ["HunYuanMoEV1ForCausalLM"], "num_hidden_layers": 2, "num_experts": 4, "moe_topk": [1, 1], "num_shared_expert": [0, 0]}`,
		`{"model_type": "ernie4_5_moe", "moe_layer_end_index": -1, "moe_layer_interval": 2}`,
		`{"model_type": "smollm3", "num_hidden_layers": 2, "no_rope_layers": [1, 0]}`,
		`{"model_type": "minimax_m2", "num_hidden_layers": 1, "attn_type_list": [1]}`,
		`{"model_type": "qwen3", "architectures": ["Qwen3Model"]}`,
		`{"model_type": "qwen2", "architectures": ["Qwen2ForSequenceClassification"], "id2label": {"0": "a"}}`,
		`{"model_type": "xlm-roberta", "architectures": ["XLMRobertaForSequenceClassification"], "num_labels": 1}`,
		`{"model_type": "modernbert", "architectures": ["ModernBertForMaskedLM"], "num_hidden_layers": 1}`,
	} {
		f.Add([]byte(seed))
	}
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
		checkPartialSums(t, m, total)
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

// checkPartialSums asserts that the per-component and per-stack totals
// are non-negative and add up to the model's total, and that every
// per-layer count is non-negative and at most the total: sums over
// modules never wrap.
func checkPartialSums(t *testing.T, m *Model, total int64) {
	t.Helper()
	var byComp int64
	for _, c := range m.ByComponent() {
		if c.Params < 0 || c.Params > total {
			t.Fatalf("component %s: %d parameters of %d", c.Component, c.Params, total)
		}
		byComp += c.Params
	}
	if byComp != total {
		t.Fatalf("components sum to %d, total %d", byComp, total)
	}
	var byStack int64
	for _, st := range []string{StackText, StackEncoder, StackVision, StackProjector} {
		n := m.StackParams(st)
		if n < 0 || n > total {
			t.Fatalf("stack %s: %d parameters of %d", st, n, total)
		}
		byStack += n
	}
	if byStack != total {
		t.Fatalf("stacks sum to %d, total %d", byStack, total)
	}
	if l := m.LinearParams(); l < 0 || l > total {
		t.Fatalf("linear %d, total %d", l, total)
	}
	for i := range min(m.Text.Layers, 64) {
		if n := m.LayerParams(StackText, i); n < 0 || n > total {
			t.Fatalf("layer %d: %d parameters of %d", i, n, total)
		}
	}
	if n := m.OutsideLayerParams(StackText); n < 0 || n > total {
		t.Fatalf("outside the layers: %d parameters of %d", n, total)
	}
}
