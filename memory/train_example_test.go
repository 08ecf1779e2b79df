package memory_test

import (
	"fmt"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
)

// ExampleEstimate_training estimates full fine-tuning of Llama-2-7B in
// pure bf16 with fused AdamW, FlashAttention and gradient checkpointing
// (MODEL.md §12.3).
func ExampleEstimate_training() {
	m, err := model.Lookup("meta-llama/Llama-2-7b-hf")
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := memory.Estimate(m, memory.Job{
		SeqLen:         4096,
		GradAccum:      2,
		Optimizer:      "adamw_torch_fused",
		Attention:      "flash",
		GradCheckpoint: "full",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("peak %.1f GiB at %s\n", r.PerGPU.AllocatedPeakBytes.GiBf(), r.PerGPU.PeakPhase)
	for _, c := range r.PerGPU.Components[:4] {
		fmt.Printf("%-16s %5.2f GiB\n", c.Name, c.Bytes.GiBf())
	}
	// Output:
	// peak 52.8 GiB at loss
	// weights          12.55 GiB
	// gradients        12.55 GiB
	// optimizer_states 25.10 GiB
	// activations       1.00 GiB
}
