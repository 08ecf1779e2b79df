package calibrate_test

import (
	"fmt"

	"github.com/gpumem/gpumem/calibrate"
)

// Fit a line y = a·x + b through points that lie on y = 2x + 1.
func ExampleSolve() {
	a := [][]float64{{0, 1}, {1, 1}, {2, 1}, {3, 1}}
	y := []float64{1, 3, 5, 7}
	ls, err := calibrate.Solve(a, y)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("a = %.3f, b = %.3f, RMSE < 1e-12: %v\n", ls.Coef[0], ls.Coef[1], ls.RMSE < 1e-12)
	// Output:
	// a = 2.000, b = 1.000, RMSE < 1e-12: true
}

func ExampleDefault() {
	p := calibrate.Default()
	fmt.Println(p.Name, len(p.Constants))
	// Output:
	// default 0
}
