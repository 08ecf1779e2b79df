package units_test

import (
	"fmt"

	"github.com/gpumem/gpumem/units"
)

// ExampleParseBytes shows the two unit systems and the hint for an
// ambiguous suffix.
func ExampleParseBytes() {
	for _, s := range []string{"80GiB", "80GB", "24576 MiB", "80G"} {
		b, err := units.ParseBytes(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s = %d bytes = %s = %s\n", s, int64(b), units.FormatIEC(b), units.FormatSI(b))
	}
	// Output:
	// 80GiB = 85899345920 bytes = 80.00 GiB = 85.90 GB
	// 80GB = 80000000000 bytes = 74.51 GiB = 80.00 GB
	// 24576 MiB = 25769803776 bytes = 24.00 GiB = 25.77 GB
	// parse size "80G": "G" is ambiguous; write GiB (powers of 1024) or GB (powers of 1000)
}

// ExampleParseParams parses the parameter counts model cards use.
func ExampleParseParams() {
	for _, s := range []string{"7B", "6738415616", "1.5T", "350M"} {
		p, err := units.ParseParams(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(s, int64(p), p)
	}
	// Output:
	// 7B 7000000000 7.00B
	// 6738415616 6738415616 6.74B
	// 1.5T 1500000000000 1.50T
	// 350M 350000000 350.0M
}

// ExampleAdd shows that sizes saturate instead of wrapping around.
func ExampleAdd() {
	fmt.Println(units.Add(units.MaxBytes, units.GiB) == units.MaxBytes)
	fmt.Println(units.MulInt(1<<40, 1<<40) > 0)
	// Output:
	// true
	// true
}
