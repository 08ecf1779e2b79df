package model

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// withKeys returns the release config name (testdata/families) with keys
// replaced; nil values delete keys. Structural tests vary one key of a
// real release config this way rather than writing a config by hand.
func withKeys(t *testing.T, dir, name string, set map[string]any) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const familiesDir = "testdata/families"

func mustParse(t *testing.T, data []byte) *Model {
	t.Helper()
	m, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// moduleNames lists the module names of a model's text stack.
func moduleNames(m *Model) []string {
	var out []string
	for _, mod := range m.Modules {
		out = append(out, mod.Name)
	}
	return out
}

func TestNewFamilyLayerKinds(t *testing.T) {
	t.Run("smollm3 NoPE every fourth layer", func(t *testing.T) {
		m := familyConfig(t, "HuggingFaceTB__SmolLM3-3B")
		for i, lt := range m.Text.LayerTypes {
			if want := (i+1)%4 == 0; lt.NoPE != want || lt.Attention != FullAttention {
				t.Errorf("layer %d: %+v, want NoPE %v, full attention", i, lt, want)
			}
		}
		if !m.Text.TiedEmbeddings {
			t.Error("SmolLM3Config ties the embeddings by default; the release leaves the key out")
		}
		// The interval alone gives the same layers.
		alone := mustParse(t, withKeys(t, familiesDir, "HuggingFaceTB__SmolLM3-3B", map[string]any{"no_rope_layers": nil}))
		if !slices.Equal(alone.Text.LayerTypes, m.Text.LayerTypes) {
			t.Error("no_rope_layer_interval 4 does not give the release's no_rope_layers")
		}
	})
	t.Run("olmo3 slides three layers of four", func(t *testing.T) {
		m := mustParse(t, withKeys(t, familiesDir, "allenai__OLMo-2-1124-7B", map[string]any{
			"model_type": "olmo3", "architectures": []string{"Olmo3ForCausalLM"}}))
		if m.Text.SlidingWindow != 4096 {
			t.Errorf("window %d, want Olmo3Config's 4096", m.Text.SlidingWindow)
		}
		got := attnKinds(m.Text)[:8]
		S, F := SlidingAttention, FullAttention
		if want := []AttnKind{S, S, S, F, S, S, S, F}; !slices.Equal(got, want) {
			t.Errorf("layers %v, want %v", got, want)
		}
		if m.TotalParams() != familyConfig(t, "allenai__OLMo-2-1124-7B").TotalParams() {
			t.Error("sliding windows changed the parameter count")
		}
	})
	t.Run("olmo2 normalises after each block", func(t *testing.T) {
		names := moduleNames(familyConfig(t, "allenai__OLMo-2-1124-7B"))
		for _, want := range []string{"model.layers.*.post_attention_layernorm", "model.layers.*.post_feedforward_layernorm",
			"model.layers.*.self_attn.q_norm", "model.layers.*.self_attn.k_norm"} {
			if !slices.Contains(names, want) {
				t.Errorf("no %s in %v", want, names)
			}
		}
		if slices.Contains(names, "model.layers.*.input_layernorm") {
			t.Error("OLMo 2 has no input_layernorm")
		}
	})
	t.Run("cohere2 global layers are NoPE", func(t *testing.T) {
		m := mustParse(t, withKeys(t, familiesDir, "CohereLabs__aya-23-8B", map[string]any{
			"model_type": "cohere2", "architectures": []string{"Cohere2ForCausalLM"}, "sliding_window": 4096}))
		for i, lt := range m.Text.LayerTypes {
			global := (i+1)%4 == 0
			if (lt.Attention == FullAttention) != global || lt.NoPE != global {
				t.Errorf("layer %d: %+v, want global %v with NoPE", i, lt, global)
			}
		}
		// Command R7B has Aya-23-8B's shapes: its Hub total (CohereLabs/
		// c4ai-command-r7b-12-2024, 8,028,033,024 in the llmfit listing)
		// is Aya's.
		if got := m.TotalParams(); got != 8028033024 {
			t.Errorf("TotalParams = %d, want Command R7B's 8028033024", got)
		}
	})
	t.Run("exaone4 pattern string", func(t *testing.T) {
		m := mustParse(t, withKeys(t, familiesDir, "allenai__OLMo-2-1124-7B", map[string]any{
			"model_type": "exaone4", "num_hidden_layers": 6, "sliding_window": 4096, "sliding_window_pattern": "LLG"}))
		S, F := SlidingAttention, FullAttention
		if got, want := attnKinds(m.Text), []AttnKind{S, S, F, S, S, F}; !slices.Equal(got, want) {
			t.Errorf("layers %v, want %v", got, want)
		}
		if !m.Text.LayerTypes[2].NoPE || m.Text.LayerTypes[0].NoPE {
			t.Error("EXAONE 4's global layers apply no RoPE, its local ones do")
		}
		// The last layer is global whatever the pattern says.
		m = mustParse(t, withKeys(t, familiesDir, "allenai__OLMo-2-1124-7B", map[string]any{
			"model_type": "exaone4", "num_hidden_layers": 4, "sliding_window": 4096, "sliding_window_pattern": "L"}))
		if got, want := attnKinds(m.Text), []AttnKind{S, S, S, F}; !slices.Equal(got, want) {
			t.Errorf("layers %v, want %v", got, want)
		}
	})
	t.Run("nemotron-nas blocks", func(t *testing.T) {
		m := familyConfig(t, "nvidia__Llama-3_3-Nemotron-Super-49B-v1")
		noAttn, widths := 0, map[int]int{}
		for _, lt := range m.Text.LayerTypes {
			if lt.Attention == NoSelfAttention {
				noAttn++
			}
			widths[layerFFN(&m.Text, lt)]++
		}
		if noAttn != 31 || m.Text.KVHeads != 8 || m.Text.Intermediate != 28672 {
			t.Errorf("%d no-op attention blocks, %d KV heads, widest FFN %d; want 31, 8, 28672", noAttn, m.Text.KVHeads, m.Text.Intermediate)
		}
		// ffn_mult 5.25 → int(2·5.25·8192/3) = 28672; 0.5 → 2730 rounded up to 2816.
		if widths[28672] != 49 || widths[2816] != 6 {
			t.Errorf("FFN widths %v, want 49 × 28672 and 6 × 2816", widths)
		}
	})
	t.Run("glm-5 indexer on every layer", func(t *testing.T) {
		m := familyConfig(t, "zai-org__GLM-5")
		if mla := m.Text.MLA; mla.IndexerHeads != 32 || mla.IndexerHeadDim != 128 || mla.IndexerTopK != 2048 || mla.IndexerLayers != nil {
			t.Errorf("indexer %+v, want 32 heads of 128, top-2048, every layer", *mla)
		}
		shared := mustParse(t, withKeys(t, familiesDir, "zai-org__GLM-5", map[string]any{"index_topk_freq": 2}))
		full := 0
		for i := 0; i < shared.Text.Layers; i++ {
			if shared.Text.MLA.HasIndexer(i) {
				full++
			}
		}
		// GlmMoeDsaConfig: full where max(i - 2 + 1, 0) % 2 == 0 — layer 0, then every other layer from 1.
		if full != 40 || !shared.Text.MLA.HasIndexer(0) || !shared.Text.MLA.HasIndexer(1) || shared.Text.MLA.HasIndexer(2) {
			t.Errorf("%d indexer layers with index_topk_freq 2, want 40 (0, 1, 3, 5, ...)", full)
		}
		if d := m.TotalParams() - shared.TotalParams(); d != 38*dsaIndexerParams(&m.Text) {
			t.Errorf("shared layers removed %d parameters, want 38 indexers", d)
		}
	})
}

// dsaIndexerParams is one DSA indexer: wq_b, wk, k_norm weight and bias,
// weights_proj.
func dsaIndexerParams(s *Stack) int64 {
	m := s.MLA
	return int64(m.QLoRARank)*int64(m.IndexerHeads*m.IndexerHeadDim) + int64(s.Hidden)*int64(m.IndexerHeadDim) +
		2*int64(m.IndexerHeadDim) + int64(s.Hidden)*int64(m.IndexerHeads)
}

// TestHeadlessCheckpoints checks that a decoder saved as its base class
// (how embedding models ship) has no LM head, and that task heads replace
// it.
func TestHeadlessCheckpoints(t *testing.T) {
	dir := "catalog"
	full := mustLookup(t, "Qwen/Qwen3-8B")
	base := mustParse(t, withKeys(t, dir, "Qwen__Qwen3-8B", map[string]any{"architectures": []string{"Qwen3Model"}}))
	if !base.NoLMHead || full.NoLMHead {
		t.Fatalf("NoLMHead: Qwen3Model %v, Qwen3ForCausalLM %v", base.NoLMHead, full.NoLMHead)
	}
	head := int64(full.Text.Vocab) * int64(full.Text.Hidden)
	if got := full.TotalParams() - base.TotalParams(); got != head {
		t.Errorf("Qwen3Model has %d fewer parameters than Qwen3ForCausalLM, want the untied lm_head's %d", got, head)
	}
	for _, mod := range base.Modules {
		if mod.Component == CompLMHead {
			t.Errorf("base model keeps %s", mod.Name)
		}
	}
	cls := mustParse(t, withKeys(t, dir, "Qwen__Qwen3-8B", map[string]any{
		"architectures": []string{"Qwen3ForSequenceClassification"}, "num_labels": 1}))
	if want := base.TotalParams() + int64(full.Text.Hidden); !cls.NoLMHead || cls.TotalParams() != want {
		t.Errorf("reward model: NoLMHead %v, %d parameters; want true, %d (base + score Linear(h, 1))", cls.NoLMHead, cls.TotalParams(), want)
	}
	// Encoder-decoders keep their LM even when BartModel is listed first.
	if m := mustLookup(t, "facebook/bart-large"); m.NoLMHead {
		t.Error("bart-large (BartModel first) lost its LM head")
	}
}

// TestNewFamilyBadInput checks that keys contradicting each other or
// naming a layout gpumem does not read are refused with the key named.
func TestNewFamilyBadInput(t *testing.T) {
	tests := []struct {
		name   string
		config string
		set    map[string]any
		key    string
		want   string
	}{
		{"no_rope_layers too long", "HuggingFaceTB__SmolLM3-3B", map[string]any{"num_hidden_layers": 30, "layer_types": nil},
			"no_rope_layers", "want 30 entries"},
		{"block_configs too short", "nvidia__Llama-3_3-Nemotron-Super-49B-v1", map[string]any{"num_hidden_layers": 81},
			"block_configs", "want 81 entries"},
		{"linear replacement", "nvidia__Llama-3_3-Nemotron-Super-49B-v1", map[string]any{"block_configs": []any{
			map[string]any{"attention": map[string]any{"replace_with_linear": true}, "ffn": map[string]any{"ffn_mult": 1.0}}}, "num_hidden_layers": 1},
			"block_configs[0].attention.replace_with_linear", "does not read this block feature"},
		{"group not dividing heads", "nvidia__Llama-3_3-Nemotron-Super-49B-v1", map[string]any{"block_configs": []any{
			map[string]any{"attention": map[string]any{"n_heads_in_group": 7}, "ffn": map[string]any{"ffn_mult": 1.0}}}, "num_hidden_layers": 1},
			"block_configs[0].attention.n_heads_in_group", "a divisor of num_attention_heads (64)"},
		{"top-k above experts", "MiniMaxAI__MiniMax-M2.5", map[string]any{"num_experts_per_tok": 300},
			"num_experts_per_tok", "at most the number of experts (256)"},
		{"lightning attention layer", "MiniMaxAI__MiniMax-M2.5", map[string]any{"attn_type_list": append([]any{0.0}, slices.Repeat([]any{1.0}, 61)...)},
			"attn_type_list[0]", "0 is MiniMax-M1's lightning attention"},
		{"shared expert", "MiniMaxAI__MiniMax-M2.5", map[string]any{"shared_intermediate_size": 1536},
			"shared_intermediate_size", "builds no shared expert"},
		{"first layer shares its indexer", "zai-org__GLM-5", map[string]any{"index_topk_pattern": "S" + strings.Repeat("F", 77)},
			"index_topk_pattern", "a first layer that runs its own indexer"},
		{"pattern longer than the layers", "zai-org__GLM-5", map[string]any{"index_topk_pattern": strings.Repeat("F", 79)},
			"index_topk_pattern", "want 78 letters"},
		{"mlp_layer_types too long", "deepseek-ai__DeepSeek-V3.2", map[string]any{"mlp_layer_types": slices.Repeat([]any{"sparse"}, 62)},
			"mlp_layer_types", "want 61 entries"},
		{"V3.2 without a query latent", "deepseek-ai__DeepSeek-V3.2", map[string]any{"q_lora_rank": nil},
			"", ""},
		{"hunyuan uneven experts", "tencent__Hunyuan-A13B-Instruct", map[string]any{"moe_topk": append(slices.Repeat([]any{8.0}, 31), 4.0)},
			"moe_topk", "the same value for every layer"},
		{"hunyuan cross-layer attention", "tencent__Hunyuan-A13B-Instruct", map[string]any{"use_cla": true},
			"use_cla", "does not read"},
		{"hunyuan top-k above experts", "tencent__Hunyuan-A13B-Instruct", map[string]any{"moe_topk": 65},
			"moe_topk", "at most num_experts (64)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := withKeys(t, familiesDir, tt.config, tt.set)
			if tt.name == "V3.2 without a query latent" {
				// An explicit null (withKeys deletes a nil key).
				data = []byte(strings.Replace(string(data), `"qk_nope_head_dim"`, `"q_lora_rank": null, "qk_nope_head_dim"`, 1))
				tt.key, tt.want = "q_lora_rank", "the DSA indexer reads the query latent"
			}
			m, err := Parse(data)
			if err == nil {
				t.Fatalf("Parse succeeded (%d params), want an error on %s", m.TotalParams(), tt.key)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %q is not a *ConfigError", err)
			}
			if !strings.HasPrefix(ce.Key, tt.key) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q (key %q), want key %q and %q", err, ce.Key, tt.key, tt.want)
			}
		})
	}
}
