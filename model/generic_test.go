package model

import (
	"errors"
	"strings"
	"testing"
)

// denseKeys are the keys a generic dense decoder needs.
const denseKeys = `"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8, "intermediate_size": 4096, "vocab_size": 32000`

// TestGenericReadingWarns checks that an unknown dense decoder is read
// generically and says so.
func TestGenericReadingWarns(t *testing.T) {
	for _, cfg := range []string{
		`{"model_type": "frobnet", "architectures": ["FrobForCausalLM"], ` + denseKeys + `}`,
		// Keys set to their "off" value do not block it.
		`{"model_type": "frobnet", "num_experts": 0, "moe_intermediate_size": null, "use_bias": false, "rope_scaling": {"type": "linear", "factor": 2.0}, ` + denseKeys + `}`,
		`{"model_type": "frobnet", "layer_types": ["sliding_attention", "full_attention", "full_attention", "full_attention"], "sliding_window": 512, ` + denseKeys + `}`,
	} {
		m, err := Parse([]byte(cfg))
		if err != nil {
			t.Fatalf("%s: %v", cfg, err)
		}
		if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], GenericWarning) || !strings.Contains(m.Warnings[0], `"frobnet"`) {
			t.Errorf("warnings = %q, want the generic-reading warning naming frobnet", m.Warnings)
		}
		if got, want := m.TotalParams(), int64(2*32000*1024+4*(4*1024*1024+3*1024*4096+2*1024)+1024); got != want {
			t.Errorf("TotalParams = %d, want %d", got, want)
		}
	}
}

// TestGenericReadingRefuses checks that configs holding what the generic
// reading does not understand are refused with the key and the closest
// supported families named, in one line.
func TestGenericReadingRefuses(t *testing.T) {
	tests := []struct {
		name, cfg string
		want      []string
	}{
		{"MoE keys", `{"model_type": "frobnet", "num_local_experts": 64, "num_experts_per_tok": 8, ` + denseKeys + `}`,
			[]string{`"frobnet"`, "num_local_experts (mixture-of-experts)", "num_experts_per_tok", "qwen3_moe"}},
		{"SSM keys", `{"model_type": "frobnet", "mamba_d_state": 128, "mamba_n_heads": 24, ` + denseKeys + `}`,
			[]string{"mamba_d_state (recurrent or hybrid layer)", "nemotron_h"}},
		{"hybrid pattern", `{"model_type": "frobnet", "hybrid_override_pattern": "M*M-", ` + denseKeys + `}`,
			[]string{"hybrid_override_pattern", "qwen3_next"}},
		{"hybrid layer_types", `{"model_type": "frobnet", "layer_types": ["linear_attention", "full_attention"], ` + denseKeys + `}`,
			[]string{"layer_types (layer kind linear_attention)"}},
		{"latent attention", `{"model_type": "frobnet", "kv_lora_rank": 512, ` + denseKeys + `}`,
			[]string{"kv_lora_rank (latent-attention)", "deepseek_v3"}},
		{"unknown sub-config", `{"model_type": "frobnet", "vision_config": {"hidden_size": 1152}, ` + denseKeys + `}`,
			[]string{"vision_config (sub-config)", "llava"}},
		{"unknown MLP kind", `{"model_type": "frobnet", "mlp_type": "relu2", ` + denseKeys + `}`,
			[]string{"mlp_type (MLP-kind)"}},
		{"biases", `{"model_type": "frobnet", "use_bias": true, ` + denseKeys + `}`,
			[]string{"use_bias (norm or bias)"}},
		{"missing width", `{"model_type": "frobnet", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8, "vocab_size": 32000}`,
			[]string{"without intermediate_size"}},
		{"near spelling", `{"model_type": "qwen3_nxt", "architectures": ["Qwen3NxtForCausalLM"], "linear_num_key_heads": 16, ` + denseKeys + `}`,
			[]string{`"Qwen3NxtForCausalLM"`, "closest supported families: qwen3_next"}},
		{"dense family with experts", `{"model_type": "llama", "num_local_experts": 8, ` + denseKeys + `}`,
			[]string{`the llama reader is a dense decoder and would ignore num_local_experts`}},
		{"dense family with recurrent layers", `{"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "full_attention_interval": 4, ` + denseKeys + `}`,
			[]string{"full_attention_interval (recurrent or hybrid layer)", "qwen3_next"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.cfg))
			if err == nil {
				t.Fatalf("read as %s with warnings %q; want a refusal", m.ModelType, m.Warnings)
			}
			if !errors.Is(err, ErrUnsupportedArchitecture) {
				t.Errorf("err = %v, want ErrUnsupportedArchitecture", err)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("message spans lines: %q", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
		})
	}
}

// TestCatalogNeverGeneric checks that no catalog model reaches the
// generic reading.
func TestCatalogNeverGeneric(t *testing.T) {
	for id, m := range catalogModels(t) {
		for _, w := range m.Warnings {
			if strings.Contains(w, GenericWarning) {
				t.Errorf("%s: %s", id, w)
			}
		}
	}
}

// TestUnreadHybridsRefusedByName checks that the hybrid families without a
// reader are refused by name even when their keys would pass the generic
// checks (a Mamba config's keys are not all prefixed).
func TestUnreadHybridsRefusedByName(t *testing.T) {
	for mt := range unreadHybrids {
		cfg := `{"model_type": "` + mt + `", ` + denseKeys + `}`
		_, err := Parse([]byte(cfg))
		if !errors.Is(err, ErrUnsupportedArchitecture) || !strings.Contains(err.Error(), "does not read yet") || !strings.Contains(err.Error(), `"`+mt+`"`) {
			t.Errorf("%s: err = %v", mt, err)
		}
		if _, ok := readers[mt]; ok {
			t.Errorf("%s has a reader and is still listed as unread", mt)
		}
	}
}
