package memory_test

import (
	"fmt"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
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

// ExampleEstimator sweeps the sequence length of a LoRA fine-tune with
// one reusable Estimator: each estimate overwrites the last, so read (or
// Clone) a result before the next call.
func ExampleEstimator() {
	m, err := model.Lookup("meta-llama/Llama-3.1-8B")
	if err != nil {
		fmt.Println(err)
		return
	}
	e := memory.NewEstimator(m)
	job := memory.Job{Method: "lora", Attention: "flash", GradCheckpoint: "full"}
	for _, seq := range []int{2048, 8192, 32768} {
		job.SeqLen = seq
		r, err := e.Estimate(&job)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%6d tokens: %5.1f GiB\n", seq, r.PerGPU.DevicePeakBytes.GiBf())
	}
	// Output:
	//   2048 tokens:  20.2 GiB
	//   8192 tokens:  31.3 GiB
	//  32768 tokens:  75.4 GiB
}

// ExampleSweep finds the largest micro-batch of a full fine-tune that
// fits in 80 GiB: a Sweep keeps what does not depend on the micro-batch
// (set-up, parameters, model states) between calls, and PeakUpTo gives
// the peaks alone, without the breakdown.
func ExampleSweep() {
	m, err := model.Lookup("meta-llama/Llama-3.2-1B-Instruct")
	if err != nil {
		fmt.Println(err)
		return
	}
	budget := 80 * units.GiB
	sw := memory.NewEstimator(m).NewSweep()
	sw.Reset(&memory.Job{SeqLen: 4096, Attention: "flash", GradCheckpoint: "full"})
	best := 0
	for mb := 1; mb <= 64; mb *= 2 {
		p, err := sw.PeakUpTo(mb, budget)
		if err != nil {
			fmt.Println(err)
			return
		}
		if p.DeviceBytes > budget {
			break
		}
		best = mb
		fmt.Printf("micro-batch %2d: %5.1f GiB at %s\n", mb, p.DeviceBytes.GiBf(), p.Phase)
	}
	fmt.Println("largest that fits:", best)
	// Output:
	// micro-batch  1:  14.5 GiB at loss
	// micro-batch  2:  21.0 GiB at loss
	// micro-batch  4:  34.1 GiB at loss
	// micro-batch  8:  60.3 GiB at loss
	// largest that fits: 8
}
