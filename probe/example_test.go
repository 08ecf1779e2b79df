package probe_test

import (
	"fmt"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/probe"
	"github.com/gpumem/gpumem/units"
)

func ExampleCompare() {
	est := memory.PerGPU{AllocatedPeakBytes: 20 * units.GiB, ReservedPeakBytes: 21 * units.GiB, DevicePeakBytes: 22 * units.GiB}
	measured := probe.Measured{AllocatedPeakBytes: 19 * units.GiB, DevicePeakBytes: 23 * units.GiB}
	for _, r := range probe.Compare(est, measured).Rows {
		fmt.Printf("%s %s: estimated %s, measured %s, %+.1f %%\n", r.Kind, r.Name, r.EstimatedBytes, r.MeasuredBytes, r.ErrorPct)
	}
	// Output:
	// peak allocated: estimated 20.00 GiB, measured 19.00 GiB, +5.3 %
	// peak device: estimated 22.00 GiB, measured 23.00 GiB, -4.3 %
}

func ExampleParseSyntheticOutput() {
	stdout := []byte("loading...\n" +
		`{"schema":"gpumem-probe/1","ok":false,"error_kind":"missing_module","module":"peft","error":"No module named 'peft'"}` + "\n")
	res, err := probe.ParseSyntheticOutput(stdout)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Err())
	// Output:
	// a Python package the probe needs is missing: python cannot import peft: pip install peft (needed for --method lora and qlora) (No module named 'peft')
}
