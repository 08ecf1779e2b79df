package memory

import (
	"testing"

	"github.com/gpumem/gpumem/model"
)

// tinyNeoX is a GPT-NeoX config for hand-computed cases: hidden 64, 4
// heads of 16, FFN 256, vocabulary 1000, parallel residual.
const tinyNeoX = `{"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "hidden_size": 64,
	"num_attention_heads": 4, "intermediate_size": 256, "num_hidden_layers": 2, "vocab_size": 1000,
	"rotary_pct": 0.25, "use_parallel_residual": true, "hidden_act": "gelu", "max_position_embeddings": 2048}`

func parseTiny(t *testing.T, cfg string) *model.Model {
	t.Helper()
	m, err := model.Parse([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLitGPTLoss pins litgpt's chunked loss (V = 1000): Fabric hands the
// loss fp32 chunks of 128 positions × batch tokens, kept by the training
// loop (held 4·N·V); the loss peaks at 8·N·V (fp32 logits + saved fp32
// log-probs, then the logits' fp32 gradients replacing the log-probs) +
// 8·ch·V (one chunk's nll and log-softmax gradients). The compute dtype
// does not change it: the chunks reach the loss in fp32 either way.
func TestLitGPTLoss(t *testing.T) {
	const V = 1000.0
	tests := []struct {
		name       string
		batch, seq int
		dtype      string
		n, ch      float64 // tokens, tokens per chunk
	}{
		{"chunks of 2×128 tokens", 2, 300, "bf16", 600, 256},
		{"shorter than a chunk", 1, 100, "bf16", 100, 100},
		{"fp32 weights", 2, 300, "fp32", 600, 256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parseTiny(t, tinyNeoX)
			job := Job{Framework: "litgpt", Dtype: tt.dtype, MasterWeights: "none", SeqLen: tt.seq,
				MicroBatch: tt.batch, Optimizer: "adamw_torch", Method: "lora"}
			var s setup
			if err := s.init(m, job); err != nil {
				t.Fatal(err)
			}
			if s.loss != lossLitGPTChunked {
				t.Fatalf("loss %v, want litgpt's chunked loss", s.loss)
			}
			l := s.lossMemory()
			peak, held := 8*tt.n*V+8*tt.ch*V, 4*tt.n*V
			if l.peak != peak || l.held != held || l.chunk != tt.ch {
				t.Errorf("peak %v held %v chunk %v; want %v %v %v", l.peak, l.held, l.chunk, peak, held, tt.ch)
			}
		})
	}
}
