package memory_test

import (
	"testing"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// benchEstimate times memory.Estimate of one job on one catalog model.
func benchEstimate(b *testing.B, id string, job memory.Job) {
	m, err := model.Lookup(id)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := memory.Estimate(m, job); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := memory.Estimate(m, job); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEstimateServing is a vLLM budget: weights, profiled
// activations, KV pages.
func BenchmarkEstimateServing(b *testing.B) {
	benchEstimate(b, "meta-llama/Llama-3.1-8B", memory.Job{Mode: memory.Serving, GPU: "H100-SXM", GPUComputeCapability: 90, GPUMemory: 80 * units.GiB, MaxModelLen: 8192})
}

// BenchmarkEstimateDistributed is ZeRO-3 on 64 GPUs with CPU offload, a
// mixture-of-experts model.
func BenchmarkEstimateDistributed(b *testing.B) {
	benchEstimate(b, "Qwen/Qwen3-30B-A3B", memory.Job{SeqLen: 4096, Engine: "deepspeed", ZeRO: 3, NumGPUs: 64, OffloadOptimizer: "cpu", GradCheckpoint: "full"})
}

// BenchmarkEstimateQLoRA is a QLoRA fine-tune of a 70B model.
func BenchmarkEstimateQLoRA(b *testing.B) {
	benchEstimate(b, "meta-llama/Llama-3.1-70B", memory.Job{SeqLen: 8192, Method: "qlora", LoRATargets: []string{"all-linear"}, Optimizer: "paged_adamw_8bit", GradCheckpoint: "full"})
}
