package memory_test

import (
	"fmt"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// Generation with HF transformers: one 4096-token prompt on Llama-2-7B in
// bf16 keeps 2 GiB of KV cache next to 12.55 GiB of weights (MODEL.md §12.6).
func ExampleEstimate_inference() {
	m, err := model.Lookup("meta-llama/Llama-2-7b-hf")
	if err != nil {
		panic(err)
	}
	r, err := memory.Estimate(m, memory.Job{Mode: memory.Inference, PromptLen: 4096})
	if err != nil {
		panic(err)
	}
	for _, c := range r.PerGPU.Components {
		if c.Name == "weights" || c.Name == "kv_cache" {
			fmt.Printf("%s: %s\n", c.Name, c.Bytes)
		}
	}
	fmt.Println("peak phase:", r.PerGPU.PeakPhase)
	// Output:
	// weights: 12.55 GiB
	// kv_cache: 2.00 GiB
	// peak phase: prefill
}

// Serving with vLLM: the KV pool is what is left of 90 % of an H100 after
// weights, the profiled activation peak and non-torch memory. The job
// carries the GPU's facts (front ends copy them from the GPU catalog with
// plan.OnGPU): its compute capability and the 79.19 GiB CUDA reports.
func ExampleEstimate_serving() {
	m, err := model.Lookup("meta-llama/Llama-3.1-8B")
	if err != nil {
		panic(err)
	}
	r, err := memory.Estimate(m, memory.Job{Mode: memory.Serving, MaxModelLen: 32768,
		GPU: "H100-SXM", GPUComputeCapability: 90, GPUMemory: 7919 * units.GiB / 100})
	if err != nil {
		panic(err)
	}
	s := r.Serving
	fmt.Printf("KV per token: %d B\n", s.KVBytesPerToken)
	fmt.Println("32k-token sequence fits:", s.MaxModelLenFits)
	// Output:
	// KV per token: 131072 B
	// 32k-token sequence fits: true
}
