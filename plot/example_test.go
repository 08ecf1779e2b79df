package plot_test

import (
	"os"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/plot"
	"github.com/gpumem/gpumem/units"
)

func ExampleBreakdown() {
	r := memory.Result{PerGPU: memory.PerGPU{Components: []memory.Component{
		{Name: "weights", Bytes: 16 * units.GiB},
		{Name: "kv_cache", Bytes: 4 * units.GiB},
		{Name: "cuda_context", Bytes: 512 * units.MiB},
	}}}
	err := plot.Breakdown(os.Stdout, r, plot.BarOptions{Width: 42, ASCII: true, Capacity: 24 * units.GiB, CapacityName: "L4"})
	if err != nil {
		panic(err)
	}
	// Output:
	// [###########################======+......]
	// 20.50 GiB of 24.00 GiB L4 (85.4 %)
	// # weights 16.00 GiB 78%
	// = kv_cache 4.00 GiB 20%
	// + cuda_context 512.00 MiB 2%
}
