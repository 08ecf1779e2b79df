package model

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readHybrid parses a release config from testdata/hybrid (sources in
// testdata/hybrid/PROVENANCE.md).
func readHybrid(t *testing.T, file string) *Model {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "hybrid", file))
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	m, err := ParseFile(file, data)
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	checkInvariants(t, m)
	return m
}

// mtpQwen is what a Qwen3-Next / Qwen3.5 checkpoint stores under mtp.*
// and transformers does not load (_keys_to_ignore_on_load_unexpected
// ^mtp.*): one full-attention decoder layer with the model's MLP kind
// (vllm-project/vllm:vllm/model_executor/models/qwen3_next_mtp.py builds
// it with layer_type "full_attention"), fc Linear(2h, h) without bias and
// three RMSNorms of h (pre_fc_norm_hidden, pre_fc_norm_embedding, norm).
// The MTP head shares embed_tokens and lm_head with the model.
func mtpQwen(m *Model) int64 {
	s := m.Text
	h := int64(s.Hidden)
	var layer int64
	for i, lt := range s.LayerTypes {
		if lt.Attention == FullAttention {
			layer = m.LayerParams(StackText, i)
			break
		}
	}
	return layer + 2*h*h + 3*h
}

// TestHybridPublishedCounts checks the hybrid readers on release configs
// against the Hugging Face Hub's safetensors totals (elements stored in
// the checkpoint, HF Hub API safetensors.total, as recorded in
// AlexsJones/llmfit:llmfit-core/data/hf_models.json@5bdc9df). The stored
// elements are the unique parameters PyTorch counts plus what the
// checkpoint holds beyond them, named per case.
func TestHybridPublishedCounts(t *testing.T) {
	tests := []struct {
		file  string
		hub   string
		want  int64
		extra func(m *Model) int64
		why   string
	}{
		{"Qwen__Qwen3.5-27B.json", "Qwen/Qwen3.5-27B", 27781427952, mtpQwen, "the MTP layer (mtp.*)"},
		{"Qwen__Qwen3.5-35B-A3B.json", "Qwen/Qwen3.5-35B-A3B", 35951822704, mtpQwen, "the MTP layer (mtp.*)"},
		{"Qwen__Qwen3.5-122B-A10B.json", "Qwen/Qwen3.5-122B-A10B", 125086497008, mtpQwen, "the MTP layer (mtp.*)"},
		{"Qwen__Qwen3.5-397B-A17B.json", "Qwen/Qwen3.5-397B-A17B", 403397928944, mtpQwen, "the MTP layer (mtp.*)"},
		// The Thinking and Instruct releases share this config.json (the
		// vendored copy is the Thinking one); the Hub total of the Instruct
		// repo is used because the Thinking repo's reads 79,039,037,440, below
		// even the loaded parameters.
		{"Qwen__Qwen3-Next-80B-A3B-Thinking.json", "Qwen/Qwen3-Next-80B-A3B-Instruct", 81324862720, mtpQwen, "the MTP layer (mtp.*)"},
		// Nothing beyond the parameters: the router's e_score_correction_bias
		// is a buffer and the release stores none of it.
		{"nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31577937344, nil, ""},
		{"nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", 123611012096, mtpNemotronSuper,
			"the MTP block (mtp_hybrid_override_pattern \"*E\"): eh_proj Linear(2h, h), enorm, hnorm, an attention and a MoE layer each with its norm, and a final norm"},
	}
	for _, tt := range tests {
		t.Run(tt.hub, func(t *testing.T) {
			m := readHybrid(t, tt.file)
			got := m.TotalParams()
			if tt.extra != nil {
				x := tt.extra(m)
				t.Logf("%d parameters + %d stored for %s", got, x, tt.why)
				got += x
			}
			if got != tt.want {
				t.Errorf("count = %d, want %d (diff %d)", got, tt.want, got-tt.want)
			}
		})
	}
}

// mtpNemotronSuper is Nemotron-3-Super's MTP block: its attention layer
// and MoE layer have the shapes of the model's own (each layer with its
// norm), plus eh_proj (2h → h), enorm, hnorm and a final norm.
func mtpNemotronSuper(m *Model) int64 {
	h := int64(m.Text.Hidden)
	var attn, moe int64
	for i, lt := range m.Text.LayerTypes {
		switch {
		case attn == 0 && lt.Attention == FullAttention:
			attn = m.LayerParams(StackText, i)
		case moe == 0 && lt.MoE:
			moe = m.LayerParams(StackText, i)
		}
	}
	return attn + moe + 2*h*h + 3*h
}

// TestMiniMaxM1Count checks MiniMax-M1 against its model card and the
// MiniMax-01 report (arXiv:2501.08313): 456 billion parameters in total,
// 45.9 billion activated per token, where the activated count leaves out
// the input embedding and the output head.
func TestMiniMaxM1Count(t *testing.T) {
	m := readHybrid(t, "MiniMaxAI__MiniMax-M1.json")
	if got := roundSig(m.TotalParams(), 3); got != 456e9 {
		t.Errorf("total %d rounds to %d, want 456e9", m.TotalParams(), got)
	}
	var emb, head int64
	for _, c := range m.ByComponent() {
		switch c.Component {
		case CompEmbedding:
			emb = c.Params
		case CompLMHead:
			head = c.Params
		}
	}
	if got := roundSig(m.ActiveParams()-emb-head, 3); got != 45.9e9 {
		t.Errorf("activated without embedding and head %d rounds to %d, want 45.9e9", m.ActiveParams()-emb-head, got)
	}
}

// TestHybridLayerKinds checks the per-layer kinds each hybrid reader
// derives, and the recurrent state it records.
func TestHybridLayerKinds(t *testing.T) {
	tests := []struct {
		file                   string
		layers, attn, rec, moe int
		noMLP                  int
		state                  RecurrentState
	}{
		// full_attention_interval 4 (no layer_types in this config): every
		// 4th layer of 48 is full attention.
		{"Qwen__Qwen3-Next-80B-A3B-Thinking.json", 48, 12, 36, 48, 0,
			RecurrentState{Kind: GatedDeltaNet, Heads: 32, HeadDim: 128, StateDim: 128, Groups: 16, ConvKernel: 4}},
		{"Qwen__Qwen3.5-27B.json", 64, 16, 48, 0, 0,
			RecurrentState{Kind: GatedDeltaNet, Heads: 48, HeadDim: 128, StateDim: 128, Groups: 16, ConvKernel: 4, SSMCacheDtype: "float32"}},
		// "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME": 23 M, 23 E, 6 *.
		{"nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json", 52, 6, 23, 23, 29,
			RecurrentState{Kind: Mamba2, Heads: 64, HeadDim: 64, StateDim: 128, Groups: 8, ConvKernel: 4, SSMCacheDtype: "float32"}},
		// No mamba_ssm_cache_dtype in the config: vLLM's float32 default.
		{"nvidia__Nemotron-H-56B-Base-8K.json", 118, 10, 54, 0, 64,
			RecurrentState{Kind: Mamba2, Heads: 256, HeadDim: 64, StateDim: 256, Groups: 8, ConvKernel: 4, SSMCacheDtype: "float32"}},
		{"MiniMaxAI__MiniMax-M1.json", 80, 10, 70, 80, 0,
			RecurrentState{Kind: LightningAttention, Heads: 64, HeadDim: 128, StateDim: 128}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			s := readHybrid(t, tt.file).Text
			var attn, rec, moe, noMLP int
			for _, lt := range s.LayerTypes {
				if lt.Attention != NoSelfAttention {
					attn++
				}
				if lt.State != "" {
					rec++
				}
				if lt.MoE {
					moe++
				}
				if lt.NoFFN {
					noMLP++
				}
			}
			if s.Layers != tt.layers || attn != tt.attn || rec != tt.rec || moe != tt.moe || noMLP != tt.noMLP {
				t.Errorf("layers %d, attention %d, recurrent %d, moe %d, no-MLP %d; want %d, %d, %d, %d, %d",
					s.Layers, attn, rec, moe, noMLP, tt.layers, tt.attn, tt.rec, tt.moe, tt.noMLP)
			}
			if s.State == nil || *s.State != tt.state {
				t.Errorf("state %+v, want %+v", s.State, tt.state)
			}
		})
	}
}

// TestNemotronHInfinity parses Nemotron-H-56B's config.json as released,
// with Python's bare Infinity in time_step_limit.
func TestNemotronHInfinity(t *testing.T) {
	data, err := os.ReadFile("testdata/hybrid/nvidia__Nemotron-H-56B-Base-8K.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "Infinity") {
		t.Fatal("the release config no longer holds Infinity")
	}
	m := readHybrid(t, "nvidia__Nemotron-H-56B-Base-8K.json")
	// 56B per the model card (Nemotron-H report, arXiv:2504.03624).
	if got := roundSig(m.TotalParams(), 2); got != 56e9 {
		t.Errorf("total %d, want about 56e9", m.TotalParams())
	}
}

// TestPythonFloats checks the Infinity/NaN rewrite: tokens inside strings
// stay, a non-finite value is refused by the accessor that reads it, and
// one nobody reads is harmless.
func TestPythonFloats(t *testing.T) {
	c, err := decodeConfig("config.json", []byte(`{"a": [0.0, Infinity, -Infinity, NaN], "s": "NaN Infinity \" NaN", "b": NaN}`))
	if err != nil {
		t.Fatal(err)
	}
	arr := c.m["a"].([]any)
	if !math.IsInf(arr[1].(float64), 1) || !math.IsInf(arr[2].(float64), -1) || !math.IsNaN(arr[3].(float64)) {
		t.Errorf("a = %v", arr)
	}
	if s := c.str("s", ""); s != `NaN Infinity " NaN` {
		t.Errorf("s = %q", s)
	}
	_ = c.number("b", 0)
	var ce *ConfigError
	if !errors.As(c.err(), &ce) || ce.Key != "b" || ce.Got != "NaN" {
		t.Errorf("err = %v, want a ConfigError naming b", c.err())
	}
	for _, bad := range []string{`{"a": Infinit}`, `{"a": Nan}`, `{"a": -Inf}`} {
		if _, err := decodeConfig("config.json", []byte(bad)); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}

// TestHybridContradictions checks that keys contradicting each other are
// refused with the key named.
func TestHybridContradictions(t *testing.T) {
	tests := []struct {
		name, config, key string
	}{
		{"pattern longer than num_hidden_layers",
			`{"model_type": "nemotron_h", "num_hidden_layers": 3, "hybrid_override_pattern": "M*-M"}`, "hybrid_override_pattern"},
		{"pattern with an unknown block",
			`{"model_type": "nemotron_h", "hybrid_override_pattern": "M*X"}`, "hybrid_override_pattern"},
		{"layer_types shorter than num_hidden_layers",
			`{"model_type": "qwen3_next", "num_hidden_layers": 4, "layer_types": ["linear_attention", "full_attention"]}`, "layer_types"},
		{"unknown layer type",
			`{"model_type": "qwen3_next", "num_hidden_layers": 2, "layer_types": ["linear_attention", "mamba"]}`, "layer_types[1]"},
		{"experts per token above the expert count",
			`{"model_type": "qwen3_next", "num_experts": 4, "num_experts_per_tok": 8}`, "num_experts_per_tok"},
		{"value heads not a multiple of key heads",
			`{"model_type": "qwen3_next", "linear_num_value_heads": 24, "linear_num_key_heads": 16}`, "linear_num_key_heads"},
		{"attn_type_list longer than num_hidden_layers",
			`{"model_type": "minimax_m1", "num_hidden_layers": 2, "attn_type_list": [0, 1, 0]}`, "attn_type_list"},
		{"Nemotron-H without a layer pattern",
			`{"model_type": "nemotron_h", "num_hidden_layers": 2}`, "hybrid_override_pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.config))
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tt.key {
				t.Errorf("err = %v, want a ConfigError naming %s", err, tt.key)
			}
		})
	}
}

// TestQwen35SubConfigs checks that a Qwen3.5 release config without its
// vision_config or its text_config is refused naming the key, as every
// multimodal wrapper is, rather than read with a config class's defaults.
func TestQwen35SubConfigs(t *testing.T) {
	data, err := os.ReadFile("testdata/hybrid/Qwen__Qwen3.5-27B.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(data); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"vision_config", "text_config"} {
		c, err := decodeConfig("config.json", data)
		if err != nil {
			t.Fatal(err)
		}
		delete(c.m, key)
		without, err := json.Marshal(c.m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Parse(without)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("without %s: err = %v, want a ConfigError naming it", key, err)
		}
	}
}
