package gpu_test

import (
	"fmt"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/units"
)

func ExampleLookup() {
	// The name nvidia-smi prints works as well as an alias.
	g, err := gpu.Lookup("NVIDIA H100 80GB HBM3")
	if err != nil {
		panic(err)
	}
	fmt.Println(g.Name, int64(g.Memory/units.MiB), "MiB", g.Memory, "sm", g.SM(), "fp8", g.FP8)

	_, err = gpu.Lookup("a100")
	fmt.Println(err)
	// Output:
	// H100-SXM 81559 MiB 79.65 GiB sm 90 fp8 true
	// gpu "a100": ambiguous GPU name: matches A100-PCIe-40GB, A100-SXM-40GB, A100-PCIe-80GB, A100-SXM-80GB with different memory sizes
}
