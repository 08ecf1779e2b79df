package accuracy

import (
	"testing"

	"github.com/gpumem/gpumem/memory"
)

func TestStackOf(t *testing.T) {
	tests := []struct {
		name string
		r    Record
		want string
	}{
		{"stated versions", Record{Framework: "fms-hf-tuning 2.5.0 (TRL 0.13.0 SFTTrainer); torch 2.4.1, transformers 4.48.1, peft 0.13.2, accelerate 1.0.1, bitsandbytes 0.43.3, flash-attn 2.7.3"},
			"accelerate=1.0.1,bitsandbytes=0.43.3,peft=0.13.2,torch=2.4.1,transformers=4.48.1,trl=0.13.0"},
		{"local label and pre-release", Record{Framework: "transformers 5.13.1, torch 2.13.0+cu130, peft 0.19.2.dev0"},
			"peft=0.19.2.dev0,torch=2.13.0,transformers=5.13.1"},
		{"torch 1.x era", Record{Framework: "transformers Trainer (2022, transformers ~4.18); torch 1.x"}, "torch=1.12.1,transformers=4.18.0"},
		{"tuple cache note", Record{Job: RecordJob{SoftwareNote: "transformers 4.3x era: tuple KV cache rebuilt by torch.cat during decoding"}}, "transformers=4.35.2"},
		{"full-sequence logits only", Record{Job: RecordJob{SoftwareNote: "full-sequence logits"}}, "transformers=4.44.2"},
		{"stated wins over a note", Record{Framework: "transformers 4.40.0", Job: RecordJob{SoftwareNote: "tuple KV cache"}}, "transformers=4.40.0"},
		{"bnb spelled short", Record{Job: RecordJob{QuantFormat: "x", SoftwareNote: "bnb 0.41.1"}}, "bitsandbytes=0.41.1"},
		{"vLLM V0 by environment", Record{Framework: "vLLM 0.8.3, VLLM_USE_V1=0"}, "vllm=0.7.3"},
		{"vLLM main around a release", Record{Job: RecordJob{SoftwareNote: "vLLM main around v0.6.5 (PR #10511, Dec 2024), V0 engine"}}, "vllm=0.6.5"},
		{"torchtitan by month", Record{Framework: "torchtitan (torchtrain) @ PR #165 merge 83c879f, PyTorch nightly March 2024",
			Job: RecordJob{SoftwareNote: "PyTorch nightly (2.3 dev)"}}, "torch=2.3.0.dev0,torchtitan=2024-03"},
		{"torchtitan by nightly", Record{Framework: "torch 2.9.0.dev20250811+rocm6.4, torchao 0.13.0, torchtitan 2c8b594"}, "torch=2.9.0.dev20250811,torchtitan=2025-08"},
		{"torchtitan before the compiled loss", Record{Framework: "torch 2.7.0a0+gitb98af95, torchtitan 0.0.2",
			Job: RecordJob{SoftwareNote: "loss eager (torchtitan before the 2025-04-02 change that compiles the loss with the model)"}}, "torch=2.7.0a0,torchtitan=2025-03"},
		{"nothing stated", Record{Framework: "litgpt finetune (Lightning Fabric)"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StackOf(tt.r)
			if got.String() != tt.want {
				t.Errorf("StackOf = %q, want %q", got.String(), tt.want)
			}
		})
	}
}

// TestDevStacksResolve checks that every stack the development records
// state or imply is one the memory model accepts: versions that parse and
// are not older than the oldest its rules cover.
func TestDevStacksResolve(t *testing.T) {
	recs, err := DevRecords()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		st := StackOf(r)
		if _, err := memory.ResolveStack(st, nil); err != nil {
			t.Errorf("%s: stack %s: %v", r.ID, st, err)
		}
	}
}
