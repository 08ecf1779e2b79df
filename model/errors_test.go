package model

import (
	"errors"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		json string
		key  string // ConfigError.Key; "" for whole-file problems
		want string // substring of the message
	}{
		{"malformed", `{"model_type": "llama",`, "", "config.json: want a JSON object"},
		{"array", `[1, 2]`, "", "want a JSON object"},
		{"null", `null`, "", "want a JSON object, got null"},
		{"trailing", `{"model_type": "llama"} {}`, "", "want a single JSON object"},
		{"negative heads", `{"model_type": "llama", "num_attention_heads": -3}`, "num_attention_heads",
			"config.json: num_attention_heads: want a positive integer, got -3"},
		{"string heads", `{"model_type": "llama", "num_attention_heads": "32"}`, "num_attention_heads",
			`want a positive integer, got "32"`},
		{"fractional width", `{"model_type": "llama", "hidden_size": 4096.5}`, "hidden_size", "got 4096.5"},
		{"zero layers", `{"model_type": "llama", "num_hidden_layers": 0}`, "num_hidden_layers", "want a positive integer, got 0"},
		{"absurd width", `{"model_type": "llama", "hidden_size": 1e30}`, "hidden_size", "got 1e30"},
		{"too many layers", `{"model_type": "llama", "num_hidden_layers": 100000}`, "num_hidden_layers", "at most 4096"},
		{"legacy alias reported", `{"model_type": "gpt2", "n_head": -1}`, "n_head", "config.json: n_head: want a positive integer"},
		{"kv heads not dividing", `{"model_type": "llama", "num_attention_heads": 32, "num_key_value_heads": 5}`,
			"num_key_value_heads", "want a divisor of num_attention_heads (32), got 5"},
		{"width not divisible", `{"model_type": "llama", "hidden_size": 4100, "num_attention_heads": 32}`,
			"num_attention_heads", "a divisor of hidden_size (4100)"},
		{"bool as string", `{"model_type": "llama", "tie_word_embeddings": "yes"}`, "tie_word_embeddings", "want true or false"},
		{"model_type number", `{"model_type": 7}`, "model_type", "want a string, got 7"},
		{"top-k above experts", `{"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 8}`,
			"num_experts_per_tok", "at most the number of experts (4)"},
		{"text_config not object", `{"model_type": "llava", "text_config": 3}`, "text_config", "want an object"},
		{"nested key path", `{"model_type": "llava", "vision_config": {}, "text_config": {"hidden_size": -1}}`, "text_config.hidden_size", "positive"},
		{"vision patch larger than image", `{"model_type": "llava", "vision_config": {"image_size": 10, "patch_size": 14}}`,
			"vision_config.image_size", "at least patch_size (14)"},
		{"layer_types length", `{"model_type": "gpt_oss", "num_hidden_layers": 2, "layer_types": ["full_attention"]}`,
			"layer_types", "want 2 entries"},
		{"layer_types value", `{"model_type": "gpt_oss", "num_hidden_layers": 1, "layer_types": ["local"]}`,
			"layer_types[0]", `got "local"`},
		{"cross layer out of range", `{"model_type": "mllama", "text_config": {"num_hidden_layers": 4, "cross_attention_layers": [9]}}`,
			"text_config.cross_attention_layers[0]", "want an integer in [0, 3]"},
		{"key given twice", "{\"model_type\": \"llama\",\n \"hidden_size\": 64,\n \"hidden_size\": 128}", "hidden_size", "config.json: hidden_size: given twice (lines 2 and 3)"},
		{"nested key given twice", `{"model_type": "llava", "text_config": {"vocab_size": 1, "vocab_size": 2}}`, "text_config.vocab_size", "given twice"},
		{"model_type too long", `{"model_type": "` + strings.Repeat("x", 100000) + `"}`, "model_type", "want a name of at most 256 characters, got \"xxxxxxxx"},
		{"architecture too long", `{"architectures": ["` + strings.Repeat("A", 300) + `"]}`, "architectures[0]", "want a name of at most 256 characters"},
		{"odd qwen v1 ffn", `{"model_type": "qwen", "intermediate_size": 11}`, "intermediate_size", "an even integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.json))
			if err == nil {
				t.Fatalf("Parse succeeded (%d params), want error %q", m.TotalParams(), tt.want)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %q is not a *ConfigError", err)
			}
			if ce.File != ConfigFile || ce.Key != tt.key {
				t.Errorf("File, Key = %q, %q; want %q, %q", ce.File, ce.Key, ConfigFile, tt.key)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestParseOverflow(t *testing.T) {
	// Every value is within its own bound, but the expert tensors of all
	// layers overflow int64.
	cfg := `{"model_type": "gpt_oss", "hidden_size": 16777216, "intermediate_size": 16777216,
		"num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 16, "num_hidden_layers": 4096,
		"num_local_experts": 16384, "num_experts_per_tok": 4, "vocab_size": 10}`
	m, err := Parse([]byte(cfg))
	if err == nil {
		t.Fatalf("Parse succeeded with %d params, want an overflow error", m.TotalParams())
	}
	if !strings.Contains(err.Error(), "config.json") || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("error %q should name the file and the overflow", err)
	}
}

func TestUnsupportedArchitecture(t *testing.T) {
	_, err := Parse([]byte(`{"model_type": "mamba", "architectures": ["MambaForCausalLM"], "d_inner": 8}`))
	if !errors.Is(err, ErrUnsupportedArchitecture) {
		t.Fatalf("err = %v, want ErrUnsupportedArchitecture", err)
	}
	if !strings.Contains(err.Error(), `"mamba"`) || !strings.Contains(err.Error(), "MambaForCausalLM") {
		t.Errorf("error %q should name the model_type and architecture", err)
	}
}

func TestGenericDecoderWarning(t *testing.T) {
	cfg := `{"model_type": "internlm2", "architectures": ["InternLM2ForCausalLM"], "hidden_size": 64,
		"num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}`
	m, err := Parse([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "internlm2") {
		t.Errorf("Warnings = %q, want one naming internlm2", m.Warnings)
	}
	// Llama layout: embeddings and lm_head (2·V·h), 2 layers of 4h² + 3hf + 2h, final norm.
	want := int64(2*100*64 + 2*(4*64*64+3*64*128+2*64) + 64)
	if got := m.TotalParams(); got != want {
		t.Errorf("TotalParams = %d, want %d", got, want)
	}
}

func TestArchitectureFallback(t *testing.T) {
	// No model_type: architectures[0] picks the reader.
	m, err := Parse([]byte(`{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64, "num_hidden_layers": 1,
		"num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100,
		"tie_word_embeddings": true}`))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Text.AttnBias || len(m.Warnings) != 0 {
		t.Errorf("AttnBias %v, warnings %q: want the Qwen2 reader", m.Text.AttnBias, m.Warnings)
	}
}

// Each module's count fits in an int64, but their sum does not: the
// config is refused instead of printing a wrapped, negative total.
func TestParseTotalOverflow(t *testing.T) {
	const config = `{"model_type":"gpt_oss","hidden_size":16000000,"n_layers":4077,"num_experts":16370}`
	m, err := Parse([]byte(config))
	if err == nil {
		t.Fatalf("Parse succeeded with a total of %d parameters", m.TotalParams())
	}
	for _, want := range []string{"config.json", "parameter total overflows int64"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// A long model_type is refused, and the message quotes only its start.
func TestLongModelTypeNotEchoed(t *testing.T) {
	_, err := Parse([]byte(`{"model_type": "` + strings.Repeat("x", 100000) + `"}`))
	if err == nil || len(err.Error()) > 200 {
		t.Fatalf("error of %d bytes: %.200s", len(err.Error()), err)
	}
}
