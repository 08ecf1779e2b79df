package calibrate

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// design returns rows [x1, x2, 1] for m points and y from the true coefficients.
func design(m int, coef []float64, noise float64, rng *rand.Rand) ([][]float64, []float64) {
	a := make([][]float64, m)
	y := make([]float64, m)
	for i := range a {
		a[i] = []float64{rng.Float64()*10 - 5, rng.Float64() * 100, 1}
		for j, c := range coef {
			y[i] += a[i][j] * c
		}
		y[i] += noise * rng.NormFloat64()
	}
	return a, y
}

func TestSolveRecoversCoefficients(t *testing.T) {
	truth := []float64{2.5, -1.2, 0.7}
	tests := []struct {
		name  string
		m     int
		noise float64
		tol   float64 // absolute tolerance on each coefficient
	}{
		{"exact, square", 3, 0, 1e-9},
		{"exact, tall", 50, 0, 1e-9},
		{"noisy", 400, 0.5, 0.2},
		{"very noisy, many points", 4000, 5, 0.6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tt.m)))
			a, y := design(tt.m, truth, tt.noise, rng)
			ls, err := Solve(a, y)
			if err != nil {
				t.Fatal(err)
			}
			for j, want := range truth {
				if d := math.Abs(ls.Coef[j] - want); d > tt.tol {
					t.Errorf("coef[%d] = %.6g, want %.6g ± %g", j, ls.Coef[j], want, tt.tol)
				}
				if tt.noise > 0 {
					// The standard error must describe the actual error.
					if se := ls.StdErr[j]; !(se > 0) || math.Abs(ls.Coef[j]-want) > 5*se {
						t.Errorf("coef[%d] = %.6g ± %.3g does not cover %.6g", j, ls.Coef[j], se, want)
					}
				}
			}
			if tt.noise > 0 {
				// RMSE estimates the noise level.
				if ls.RMSE < 0.8*tt.noise || ls.RMSE > 1.2*tt.noise {
					t.Errorf("RMSE %.3g, want about %g", ls.RMSE, tt.noise)
				}
			} else if ls.RSS > 1e-12 {
				t.Errorf("RSS %g for exact data", ls.RSS)
			}
			if tt.m == 3 && !math.IsNaN(ls.StdErr[0]) {
				t.Errorf("square system: StdErr %v, want NaN (no degrees of freedom)", ls.StdErr)
			}
		})
	}
}

// The standard errors agree with sigma²·(AᵀA)⁻¹ computed directly for a
// one-column problem, where (AᵀA)⁻¹ = 1/Σx².
func TestSolveStdErrOneColumn(t *testing.T) {
	a := [][]float64{{1}, {2}, {3}, {4}}
	y := []float64{2.1, 3.9, 6.2, 7.8}
	ls, err := Solve(a, y)
	if err != nil {
		t.Fatal(err)
	}
	sxx, sxy := 30.0, 2.1+7.8+18.6+31.2
	slope := sxy / sxx
	rss := 0.0
	for i := range a {
		d := y[i] - slope*a[i][0]
		rss += d * d
	}
	se := math.Sqrt(rss / 3 / sxx)
	if math.Abs(ls.Coef[0]-slope) > 1e-12 || math.Abs(ls.StdErr[0]-se) > 1e-12 {
		t.Errorf("got %v ± %v, want %v ± %v", ls.Coef[0], ls.StdErr[0], slope, se)
	}
}

func TestSolveErrors(t *testing.T) {
	tests := []struct {
		name string
		a    [][]float64
		y    []float64
		is   error
		want string
	}{
		{name: "empty", a: nil, y: nil, want: "empty system"},
		{name: "too few rows", a: [][]float64{{1, 2}}, y: []float64{1}, want: "1 observations for 2 unknowns"},
		{name: "length mismatch", a: [][]float64{{1}, {2}}, y: []float64{1}, want: "2 rows but 1 observations"},
		{name: "ragged", a: [][]float64{{1, 2}, {3}}, y: []float64{1, 2}, want: "row 1 has 1 values, want 2"},
		{name: "NaN", a: [][]float64{{1}, {math.NaN()}}, y: []float64{1, 2}, want: "row 1 is not finite"},
		{name: "Inf observation", a: [][]float64{{1}, {2}}, y: []float64{1, math.Inf(1)}, want: "row 1 is not finite"},
		{name: "zero column", a: [][]float64{{0}, {0}}, y: []float64{1, 2}, is: ErrRankDeficient},
		{name: "dependent columns", a: [][]float64{{1, 2}, {2, 4}, {3, 6}}, y: []float64{1, 2, 3}, is: ErrRankDeficient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Solve(tt.a, tt.y)
			if err == nil {
				t.Fatal("want an error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestSolveDoesNotModifyInputs(t *testing.T) {
	a := [][]float64{{1, 0}, {1, 1}, {1, 2}}
	y := []float64{1, 3, 5}
	if _, err := Solve(a, y); err != nil {
		t.Fatal(err)
	}
	if a[1][1] != 1 || y[2] != 5 {
		t.Errorf("inputs modified: %v %v", a, y)
	}
}
