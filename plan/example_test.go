package plan_test

import (
	"fmt"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/units"
)

// A toy estimator: 20 GiB of weights and states plus 6 GiB per sequence.
func toy(j memory.Job) (memory.Result, error) {
	need := 20*units.GiB + 6*units.GiB*units.Bytes(max(j.MicroBatch, 1))
	return memory.Result{PerGPU: memory.PerGPU{DevicePeakBytes: need}}, nil
}

func ExampleMaxBatch() {
	g, _ := gpu.Lookup("h100")
	found, err := plan.MaxBatch(toy, memory.Job{SeqLen: 4096}, g, 1024)
	if err != nil {
		panic(err)
	}
	fmt.Println("largest batch:", found.Value, "using", plan.Need(found.Result))
	fmt.Println("next:", found.Stop)
	fmt.Println(plan.Check(found.Result, g))
	// Output:
	// largest batch: 9 using 74.00 GiB
	// next: per_device_batch=10: needs 80.00 GiB > budget 75.67 GiB
	// fits: 74.00 GiB of 79.65 GiB (92.9 %)
}
