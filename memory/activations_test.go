package memory

import (
	"strings"
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

// TestTitanOpCheckpoint pins torchtitan's op-level selective
// checkpointing on tiny bf16 models (h = 64, 4 heads of 16, FFN 256,
// 2 layers, batch 2 × 64 tokens). Per token and layer the checkpoint
// holds the layer input (2h) and what the policy keeps: every other mm
// output, counting from the first, and the SDPA output with its fp32
// logsumexp (4 B per head). Llama with GQA (kv width 32): q 2·64, v 2·32,
// gate 2·256, down 2·64, attention output 2·64 + 16 = 976 B. With biases
// on q/k/v (addmm, not counted) the mm calls are o, gate, up, down, so o
// and up are kept: 2·64 + 2·256 + 144 = 784 B. Eager attention keeps no
// kernel output: 832 B.
func TestTitanOpCheckpoint(t *testing.T) {
	const tinyQwen2 = `{"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 64,
		"num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 256, "num_hidden_layers": 2,
		"vocab_size": 1000, "max_position_embeddings": 2048}`
	const n, input = 2 * 64.0, 2 * 64.0
	tests := []struct {
		name string
		cfg  string
		attn string
		kept float64 // per token and layer, besides the input
	}{
		{"llama GQA sdpa", tinyLlamaGQA, "sdpa", 2*64 + 2*32 + 2*256 + 2*64 + 2*64 + 4*4},
		{"llama MHA flash", tinyLlama, "flash", 2*64 + 2*64 + 2*256 + 2*64 + 2*64 + 4*4},
		{"qwen2 q/k/v biases", tinyQwen2, "sdpa", 2*64 + 2*256 + 2*64 + 4*4},
		{"llama GQA eager", tinyLlamaGQA, "eager", 2*64 + 2*32 + 2*256 + 2*64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parseTiny(t, tt.cfg)
			job := Job{Framework: "torchtitan", GradCheckpoint: "op", Attention: tt.attn, Dtype: "bf16", MasterWeights: "none",
				MicroBatch: 2, SeqLen: 64, Optimizer: "adamw_torch"}
			var s setup
			if err := s.init(m, job); err != nil {
				t.Fatal(err)
			}
			if s.ckpt != ckptOp {
				t.Fatalf("ckpt mode %v, want ckptOp", s.ckpt)
			}
			a := s.activations()
			if a.opKept != tt.kept*n {
				t.Errorf("policy keeps %v B per layer, want %v (%v per token)", a.opKept, tt.kept*n, tt.kept)
			}
			if want := (input + tt.kept) * n; a.ckpt != want || a.nckpt != 2 || a.fwd != 2*want {
				t.Errorf("checkpoint %v B × %d layers, forward %v B; want %v × 2 = %v", a.ckpt, a.nckpt, a.fwd, want, 2*want)
			}
			// Backward of the top layer: the other layer's checkpoint, this
			// layer's input and its whole recomputed inventory.
			if want := a.ckpt + input*n + a.layer; a.top != want {
				t.Errorf("top of backward %v B, want %v", a.top, want)
			}
			if a.top >= a.fwd+a.layer {
				t.Errorf("top of backward %v B counts the popped policy outputs twice (forward %v + layer %v)", a.top, a.fwd, a.layer)
			}
		})
	}
}

// TestTitanOpTensorParallel pins the policy's kept outputs per token on
// one of 2 tensor-parallel ranks (tiny Llama with GQA, bf16): q, v and
// the gate output are column-parallel (2·32 + 2·16 + 2·128), the down
// output is the full-width partial sum (2·64), the attention kernel's
// output and logsumexp are split by heads ((2·64 + 16)/2): 552 B. With
// sequence parallelism the reduce-scatter outputs of o and down are kept
// too, 2 × 2·64/2: 680 B. Compiled, neither the down output nor the
// reduce-scatter outputs are kept (backward never reads them): 424 B.
func TestTitanOpTensorParallel(t *testing.T) {
	m := parseTiny(t, tinyLlamaGQA)
	for _, tt := range []struct {
		sp   bool
		want float64
	}{{false, 552}, {true, 680}} {
		job := Job{Framework: "torchtitan", GradCheckpoint: "op", Dtype: "bf16", MasterWeights: "none", SeqLen: 64,
			Engine: "fsdp2", NumGPUs: 2, TP: 2, SP: tt.sp}
		rg := tinyRegime(t, m, job)
		if got := titanOpSaved(&m.Text, &rg, false); got != tt.want {
			t.Errorf("sp %v: policy keeps %v B/token on a rank, want %v", tt.sp, got, tt.want)
		}
		if got := titanOpSaved(&m.Text, &rg, true); got != 424 {
			t.Errorf("sp %v, compiled: policy keeps %v B/token on a rank, want 424", tt.sp, got)
		}
	}
}

// TestTitanOpResolution checks which jobs read "op" as torchtitan's
// policy: torchtitan full training; other frameworks keep selective
// recompute; adapters and MoE models are errors naming the flag.
func TestTitanOpResolution(t *testing.T) {
	const tinyMoE = `{"model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "hidden_size": 64,
		"num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "num_hidden_layers": 2,
		"num_local_experts": 4, "num_experts_per_tok": 2, "vocab_size": 1000, "max_position_embeddings": 2048}`
	tests := []struct {
		name    string
		cfg     string
		job     Job
		want    ckptMode
		wantErr string
	}{
		{"torchtitan", tinyLlama, Job{Framework: "torchtitan", GradCheckpoint: "op"}, ckptOp, ""},
		{"torchtitan frozen layers", tinyLlama, Job{Framework: "torchtitan", GradCheckpoint: "OP", Trainable: []string{"top:1"}}, ckptOp, ""},
		{"hf op is selective recompute", tinyLlama, Job{GradCheckpoint: "op"}, ckptSelective, ""},
		{"torchtitan selective is every 2nd layer", tinyLlama, Job{Framework: "torchtitan", GradCheckpoint: "selective"}, ckptEveryN, ""},
		{"torchtitan lora", tinyLlama, Job{Framework: "torchtitan", GradCheckpoint: "op", Method: "lora", LoRARank: 8}, 0, "<grad_checkpoint=op>"},
		{"torchtitan moe", tinyMoE, Job{Framework: "torchtitan", GradCheckpoint: "op"}, 0, "mixture-of-experts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parseTiny(t, tt.cfg)
			tt.job.SeqLen, tt.job.Dtype = 64, "bf16"
			var s setup
			err := s.init(m, tt.job)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(marked(err), tt.wantErr) {
					t.Fatalf("error %v, want one mentioning %q", marked(err), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.ckpt != tt.want {
				t.Errorf("ckpt mode %v, want %v", s.ckpt, tt.want)
			}
		})
	}
}

// TestLoRAFirstAdaptedLayer pins what the lowest adapted layer saves when
// its input (the frozen embedding's output) does not require grad, per
// token, in bf16 with dropout 0.05 and rank 8 (h = 64, FFN 256, 4 heads).
// Autograd saves for an op only when one of its inputs requires grad, so
// the frozen input norm keeps nothing, dropout keeps no mask on an input
// that does not require grad (lora_A still keeps the dropout output), and
// a block no adapter output reaches keeps nothing.
//
//   - litgpt GPT-NeoX q,v (parallel residual): adapter 2h + 2·2r + zero_pad
//     source 2·2h; q, k after RoPE 4h; the qkv output v views 6h; kernel
//     output 2h + 16; the MLP reads the layer input through its norm and
//     has no adapter: nothing. 18h + 4r + 16 against 21h + 2f + 4r + 16
//     above it (LayerNorm input 2h, GELU input 2f, dropout mask h).
//   - HF Llama q,v (bf16 adapters): dropouts 2·2h + lora_A 2·2r; q, k, v
//     6h, kernel output 2h + 16; the MLP's input requires grad, so its
//     norm's fp32 input 4h and gate, SiLU and up outputs 3·2f. Layers
//     above add the attention norm's fp32 input 4h and two masks 2h.
//   - HF Llama down_proj only: nothing before the down projection
//     requires grad; its adapter keeps the dropout output 2f and lora_A's
//     output 2r.
func TestLoRAFirstAdaptedLayer(t *testing.T) {
	const h, f, r = 64.0, 256.0, 8.0
	tests := []struct {
		name         string
		cfg          string
		job          Job
		first, above float64
	}{
		{"litgpt neox q,v", tinyNeoX, tinyLoRAJob("litgpt", "q_proj", "v_proj"), 18*h + 4*r + 16, 21*h + 2*f + 4*r + 16},
		{"hf llama q,v", tinyLlama, bf16Adapters(tinyLoRAJob("hf", "q_proj", "v_proj")), 4*h + 4*r + 8*h + 16 + 4*h + 6*f,
			4*h + 4*r + 8*h + 16 + 4*h + 6*f + 4*h + 2*h},
		{"hf llama down only", tinyLlama, bf16Adapters(tinyLoRAJob("hf", "down_proj")), 2*f + 2*r, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parseTiny(t, tt.cfg)
			var s setup
			if err := s.init(m, tt.job); err != nil {
				t.Fatal(err)
			}
			if !s.inputNoGrad(0) {
				t.Fatal("layer 0's input should not require grad")
			}
			rg := s.regime()
			above := decoderLayer(&m.Text, layerTypeAt(&m.Text, 1), &rg)
			rg.noGradIn = true
			first := decoderLayer(&m.Text, layerTypeAt(&m.Text, 0), &rg)
			if first.lin != tt.first || first.quad != 0 {
				t.Errorf("first adapted layer saves %v B/token (+%v per key), want %v", first.lin, first.quad, tt.first)
			}
			if tt.above > 0 && above.lin != tt.above {
				t.Errorf("layers above save %v B/token, want %v", above.lin, tt.above)
			}
			// The stack's total counts the first layer once.
			a := s.activations()
			if want := above.lin + first.lin; a.perTok.lin != want {
				t.Errorf("two layers save %v B/token, want %v + %v", a.perTok.lin, above.lin, first.lin)
			}
		})
	}
}

// TestLoRAInputRequiresGrad lists the jobs whose lowest adapted layer has
// an input that requires grad, so it saves what the layers above save.
func TestLoRAInputRequiresGrad(t *testing.T) {
	m := parseTiny(t, tinyLlama)
	base := bf16Adapters(tinyLoRAJob("hf", "q_proj", "v_proj"))
	tests := []struct {
		name string
		edit func(*Job)
		want bool // input does not require grad
	}{
		{"hf without checkpointing", func(*Job) {}, true},
		{"hf checkpointing: enable_input_require_grads", func(j *Job) { j.GradCheckpoint = "full" }, false},
		{"litgpt checkpointing", func(j *Job) { j.Framework, j.GradCheckpoint = "litgpt", "full" }, true},
		{"trainable embedding (modules_to_save)", func(j *Job) { j.Trainable = []string{"embedding"} }, false},
		{"full fine-tuning", func(j *Job) { j.Method = "full" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := base
			tt.edit(&job)
			var s setup
			if err := s.init(m, job); err != nil {
				t.Fatal(err)
			}
			if got := s.inputNoGrad(0); got != tt.want {
				t.Errorf("layer 0 input without grad: %v, want %v", got, tt.want)
			}
		})
	}
}
