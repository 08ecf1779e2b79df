package calibrate

import (
	"errors"
	"fmt"
	"math"
)

// ErrRankDeficient reports a design matrix whose columns are linearly
// dependent (or nearly so): the coefficients are not determined by the data.
var ErrRankDeficient = errors.New("least squares: columns are linearly dependent")

// LeastSquares is the solution of an overdetermined linear system.
type LeastSquares struct {
	// Coef minimises ‖y − A·Coef‖₂.
	Coef []float64
	// StdErr is the standard error of each coefficient, σ̂·sqrt(((AᵀA)⁻¹)_jj)
	// with σ̂² = RSS/(m−n); NaN when m == n (no degrees of freedom left).
	StdErr []float64
	// Residuals are y − A·Coef.
	Residuals []float64
	// RSS is the residual sum of squares; RMSE is sqrt(RSS/m).
	RSS, RMSE float64
}

// Solve finds the least-squares solution of A·x ≈ y by Householder QR,
// which avoids squaring the condition number as the normal equations do
// (Golub & Van Loan, Matrix Computations, §5.3). A has m rows of n values
// (m ≥ n ≥ 1); A and y are not modified.
func Solve(a [][]float64, y []float64) (LeastSquares, error) {
	m := len(a)
	if m == 0 || len(a[0]) == 0 {
		return LeastSquares{}, errors.New("least squares: empty system")
	}
	n := len(a[0])
	if len(y) != m {
		return LeastSquares{}, fmt.Errorf("least squares: %d rows but %d observations", m, len(y))
	}
	if m < n {
		return LeastSquares{}, fmt.Errorf("least squares: %d observations for %d unknowns: want at least as many observations", m, n)
	}
	r := make([][]float64, m) // becomes R above the diagonal and Householder vectors below
	for i, row := range a {
		if len(row) != n {
			return LeastSquares{}, fmt.Errorf("least squares: row %d has %d values, want %d", i, len(row), n)
		}
		r[i] = append([]float64(nil), row...)
		if !finite(row...) || !finite(y[i]) {
			return LeastSquares{}, fmt.Errorf("least squares: row %d is not finite", i)
		}
	}
	qty := append([]float64(nil), y...)
	diag, err := householder(r, qty, n)
	if err != nil {
		return LeastSquares{}, err
	}
	coef := backSubstitute(r, diag, qty, n)
	return summarize(a, y, r, diag, coef), nil
}

// householder reduces the first n columns of r to upper-triangular form,
// applying the same reflections to qty, and returns R's diagonal.
func householder(r [][]float64, qty []float64, n int) ([]float64, error) {
	m := len(r)
	diag := make([]float64, n)
	scale := 0.0
	for k := 0; k < n; k++ {
		norm := 0.0
		for i := k; i < m; i++ {
			norm = math.Hypot(norm, r[i][k])
		}
		scale = math.Max(scale, norm)
		if norm == 0 || norm <= 1e-12*scale {
			return nil, fmt.Errorf("%w (column %d)", ErrRankDeficient, k)
		}
		if r[k][k] > 0 {
			norm = -norm
		}
		// v = x − norm·e₁, stored in place and normalised so v₁ = 1.
		for i := k; i < m; i++ {
			r[i][k] /= -norm
		}
		r[k][k]++
		for j := k + 1; j < n; j++ {
			reflect(r, k, func(i int) *float64 { return &r[i][j] })
		}
		reflect(r, k, func(i int) *float64 { return &qty[i] })
		diag[k] = norm
	}
	return diag, nil
}

// reflect applies the k-th Householder reflection to the column at(i).
func reflect(r [][]float64, k int, at func(int) *float64) {
	s := 0.0
	for i := k; i < len(r); i++ {
		s += r[i][k] * *at(i)
	}
	s = -s / r[k][k]
	for i := k; i < len(r); i++ {
		*at(i) += s * r[i][k]
	}
}

// backSubstitute solves R·x = (Qᵀy)[:n].
func backSubstitute(r [][]float64, diag, qty []float64, n int) []float64 {
	x := make([]float64, n)
	for k := n - 1; k >= 0; k-- {
		s := qty[k]
		for j := k + 1; j < n; j++ {
			s -= r[k][j] * x[j]
		}
		x[k] = s / diag[k]
	}
	return x
}

// summarize computes residuals and standard errors. (AᵀA)⁻¹ = R⁻¹R⁻ᵀ, so
// its diagonal is the squared row norms of R⁻¹.
func summarize(a [][]float64, y []float64, r [][]float64, diag, coef []float64) LeastSquares {
	m, n := len(a), len(coef)
	ls := LeastSquares{Coef: coef, Residuals: make([]float64, m), StdErr: make([]float64, n)}
	for i := range a {
		pred := 0.0
		for j, c := range coef {
			pred += a[i][j] * c
		}
		ls.Residuals[i] = y[i] - pred
		ls.RSS += ls.Residuals[i] * ls.Residuals[i]
	}
	ls.RMSE = math.Sqrt(ls.RSS / float64(m))
	rinv := upperInverse(r, diag, n)
	for j := 0; j < n; j++ {
		if m == n {
			ls.StdErr[j] = math.NaN()
			continue
		}
		s := 0.0
		for k := j; k < n; k++ {
			s += rinv[j][k] * rinv[j][k]
		}
		ls.StdErr[j] = math.Sqrt(ls.RSS / float64(m-n) * s)
	}
	return ls
}

// upperInverse inverts the upper-triangular R (diagonal diag, strict upper
// part in r).
func upperInverse(r [][]float64, diag []float64, n int) [][]float64 {
	inv := make([][]float64, n)
	for i := range inv {
		inv[i] = make([]float64, n)
	}
	for j := 0; j < n; j++ {
		inv[j][j] = 1 / diag[j]
		for i := j - 1; i >= 0; i-- {
			s := 0.0
			for k := i + 1; k <= j; k++ {
				s += r[i][k] * inv[k][j]
			}
			inv[i][j] = -s / diag[i]
		}
	}
	return inv
}

func finite(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
