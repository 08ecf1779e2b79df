package memory

import (
	"testing"

	"github.com/gpumem/gpumem/model"
)

// Tiny Llama configs like tinyNeoX: hidden 64, 4 heads of 16, FFN 256.
const (
	tinyLlama = `{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
		"num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 256, "num_hidden_layers": 2,
		"vocab_size": 1000, "max_position_embeddings": 2048}`
	tinyLlamaGQA = `{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
		"num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 256, "num_hidden_layers": 2,
		"vocab_size": 1000, "max_position_embeddings": 2048}`
)

// tinyLoRAJob is a pure-bf16 LoRA job (rank 8, dropout 0.05) on targets.
func tinyLoRAJob(framework string, targets ...string) Job {
	return Job{Method: "lora", LoRARank: 8, LoRADropout: 0.05, LoRATargets: targets, Framework: framework,
		Dtype: "bf16", MasterWeights: "none", SeqLen: 64, Optimizer: "adamw_torch"}
}

func bf16Adapters(j Job) Job {
	j.AdapterDtype = "bf16"
	return j
}

func tinyRegime(t *testing.T, m *model.Model, job Job) actRegime {
	t.Helper()
	var s setup
	if err := s.init(m, job); err != nil {
		t.Fatal(err)
	}
	return s.regime()
}

// TestLoRAActLitGPT pins what the attention adapters of one layer save,
// per token, in bf16 with dropout 0.05 and rank 8 (h = 64). Each adapter
// input saves its dropout output (2 B) and mask (1 B) per element, and
// lora_A saves its r-wide output for lora_B (2 B × 8 per adapted module).
// litgpt's LoRAQKVLinear is one module on the fused qkv Linear (one
// dropout for q, k and v) and, unless all three are adapted, keeps
// lora_B's output as the source of zero_pad's index_copy (2 B per
// adapted output column); PEFT on separate q_proj and v_proj has two
// dropouts and no padding.
func TestLoRAActLitGPT(t *testing.T) {
	const h, r = 64.0, 8.0
	tests := []struct {
		name      string
		cfg       string
		job       Job
		want      float64
		wantMLP   float64
		wantLayer float64 // whole text layer, when pinned (0: not checked)
	}{
		// One dropout 3h, lora_A 2·(2r), zero_pad source 2·(h + h).
		{"litgpt llama q,v", tinyLlama, tinyLoRAJob("litgpt", "q_proj", "v_proj"), 3*h + 2*2*r + 2*(h+h), 0, 0},
		// Two dropouts 2·3h, lora_A 2·(2r) (bf16 adapters, as litgpt's).
		{"hf llama q,v", tinyLlama, bf16Adapters(tinyLoRAJob("hf", "q_proj", "v_proj")), 2*3*h + 2*2*r, 0, 0},
		// PEFT's default fp32 adapters: each dropout output is fp32 (4 B)
		// and lora_A's output too: 2·(1 + 4)h + 4·2r.
		{"hf llama q,v fp32 adapters", tinyLlama, tinyLoRAJob("hf", "q_proj", "v_proj"), 2*5*h + 4*2*r, 0, 0},
		// q, k and v adapted: zero_pad returns lora_B's output as is.
		{"litgpt llama q,k,v", tinyLlama, tinyLoRAJob("litgpt", "q_proj", "k_proj", "v_proj"), 3*h + 2*3*r, 0, 0},
		// GQA: v is 2 heads of 16 wide, so the source is h + 32 columns.
		{"litgpt llama GQA q,v", tinyLlamaGQA, tinyLoRAJob("litgpt", "q_proj", "v_proj"), 3*h + 2*2*r + 2*(h+32), 0, 0},
		// GPT-NeoX's fused query_key_value: the same module in litgpt.
		// Whole layer (not the first): LayerNorm input 2h (shared by the
		// parallel attention and MLP norms); q and k after RoPE 2h each;
		// the qkv output 6h, kept by v, a view of it; kernel output 2h;
		// fp32 logsumexp 4 B × 4 heads; GELU input 2f; the adapter 3h +
		// 2·2r + 2·2h: 21h + 2f + 16 + 4r.
		{"litgpt neox q,v", tinyNeoX, tinyLoRAJob("litgpt", "q_proj", "v_proj"), 3*h + 2*2*r + 2*(h+h), 0,
			21*h + 2*256 + 16 + 4*r},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parseTiny(t, tt.cfg)
			rg := tinyRegime(t, m, tt.job)
			attn, mlp := loraAct(&m.Text, &rg)
			if attn != tt.want || mlp != tt.wantMLP {
				t.Errorf("adapters save %v (attention) + %v (MLP) B/token, want %v + %v", attn, mlp, tt.want, tt.wantMLP)
			}
			if tt.wantLayer > 0 {
				a := decoderLayer(&m.Text, layerTypeAt(&m.Text, 1), &rg)
				if a.lin != tt.wantLayer || a.quad != 0 {
					t.Errorf("layer saves %v B/token (+%v per key), want %v", a.lin, a.quad, tt.wantLayer)
				}
			}
		})
	}
}
