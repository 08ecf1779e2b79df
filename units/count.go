package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Params is a number of parameters (or any element count).
type Params int64

// String formats p with an SI suffix: "6.74B", "124.4M", "1.2K".
func (p Params) String() string {
	v := float64(p)
	switch {
	case math.Abs(v) >= 1e12:
		return fmt.Sprintf("%.2fT", v/1e12)
	case math.Abs(v) >= 1e9:
		return fmt.Sprintf("%.2fB", v/1e9)
	case math.Abs(v) >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case math.Abs(v) >= 1e3:
		return fmt.Sprintf("%.1fK", v/1e3)
	}
	return strconv.FormatInt(int64(p), 10)
}

// ParseParams parses a parameter count such as "7B", "6.74b", "350M",
// "1.5T", "70e9" or "6738415616".
func ParseParams(s string) (Params, error) {
	orig := s
	s = strings.TrimSpace(s)
	mult := 1.0
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K', 'k':
			mult, s = 1e3, s[:n-1]
		case 'M', 'm':
			mult, s = 1e6, s[:n-1]
		case 'B', 'b', 'G', 'g':
			mult, s = 1e9, s[:n-1]
		case 'T', 't':
			mult, s = 1e12, s[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("parse parameter count %q: want a number with an optional K, M, B or T suffix", orig)
	}
	f := v * mult
	if math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 || f >= math.MaxInt64 {
		return 0, fmt.Errorf("parse parameter count %q: must be a positive number below 9.2e18", orig)
	}
	// A fraction below one half would round to a count of zero.
	if math.Round(f) < 1 {
		return 0, fmt.Errorf("parse parameter count %q: must be at least 1", orig)
	}
	return Params(math.Round(f)), nil
}
