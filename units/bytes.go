package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bytes is a memory size in bytes. It is modelled on time.Duration: the
// constants below multiply a plain number into a size, and String formats it
// in IEC units ("17.2 GiB"), the units nvidia-smi and CUDA error messages use.
type Bytes int64

// IEC (binary) and SI (decimal) byte multiples.
const (
	B   Bytes = 1
	KiB Bytes = 1 << 10
	MiB Bytes = 1 << 20
	GiB Bytes = 1 << 30
	TiB Bytes = 1 << 40
	PiB Bytes = 1 << 50
	EiB Bytes = 1 << 60

	KB Bytes = 1e3
	MB Bytes = 1e6
	GB Bytes = 1e9
	TB Bytes = 1e12
	PB Bytes = 1e15
	EB Bytes = 1e18
)

// MaxBytes is the largest representable size; arithmetic helpers saturate
// here instead of wrapping around.
const MaxBytes Bytes = math.MaxInt64

// ErrOverflow reports that a size does not fit in an int64 number of bytes.
var ErrOverflow = errors.New("size overflows int64 bytes")

// GiBf returns b in GiB as a float, for presentation only.
func (b Bytes) GiBf() float64 { return float64(b) / float64(GiB) }

// String formats b in IEC units, e.g. "17.20 GiB".
func (b Bytes) String() string { return FormatIEC(b) }

// FormatIEC formats b with binary prefixes (KiB, MiB, GiB, TiB, PiB, EiB).
func FormatIEC(b Bytes) string {
	return format(b, 1024, []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"})
}

// FormatSI formats b with decimal prefixes (KB, MB, GB, TB, PB, EB).
func FormatSI(b Bytes) string {
	return format(b, 1000, []string{"B", "KB", "MB", "GB", "TB", "PB", "EB"})
}

func format(b Bytes, base float64, names []string) string {
	neg := b < 0
	v := math.Abs(float64(b))
	i := 0
	for v >= base && i < len(names)-1 {
		v /= base
		i++
	}
	s := ""
	if i == 0 {
		s = fmt.Sprintf("%d %s", int64(math.Abs(float64(b))), names[0])
	} else {
		s = fmt.Sprintf("%.2f %s", v, names[i])
	}
	if neg {
		s = "-" + s
	}
	return s
}

// ParseBytes parses a size such as "80GiB", "80 GB", "24576MiB" or "1024".
// Binary suffixes (KiB, MiB, GiB, TiB, PiB, EiB) are powers of 1024; decimal
// ones (KB, MB, GB, TB, PB, EB) powers of 1000, so every size FormatIEC and
// FormatSI print parses back. A bare "G", "M" or "K" is ambiguous and
// is rejected with a hint rather than guessed.
func ParseBytes(s string) (Bytes, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("parse size %q: empty", orig)
	}
	i := strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune("0123456789.+-eE", r) })
	if i < 0 {
		i = len(s)
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("parse size %q: want a number followed by a unit such as GiB or GB", orig)
	}
	mult, ok := byteUnits[strings.ToLower(unit)]
	if !ok {
		switch strings.ToLower(unit) {
		case "k", "m", "g", "t", "p", "e":
			u := strings.ToUpper(unit)
			return 0, fmt.Errorf("parse size %q: %q is ambiguous; write %siB (powers of 1024) or %sB (powers of 1000)", orig, unit, u, u)
		}
		return 0, fmt.Errorf("parse size %q: unknown unit %q (want B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB or EB)", orig, unit)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("parse size %q: must be a finite, non-negative number", orig)
	}
	f := v * float64(mult)
	if f >= math.MaxInt64 {
		return 0, fmt.Errorf("parse size %q: %w", orig, ErrOverflow)
	}
	return Bytes(math.Round(f)), nil
}

var byteUnits = map[string]Bytes{
	"": B, "b": B,
	"kib": KiB, "mib": MiB, "gib": GiB, "tib": TiB, "pib": PiB, "eib": EiB,
	"kb": KB, "mb": MB, "gb": GB, "tb": TB, "pb": PB, "eb": EB,
}

// Add returns a+b, saturating at MaxBytes instead of overflowing.
func Add(a, b Bytes) Bytes {
	if b > 0 && a > MaxBytes-b {
		return MaxBytes
	}
	return a + b
}

// MulInt returns n*m, saturating at math.MaxInt64. Both must be
// non-negative; a negative input is returned as 0 so no size goes negative.
func MulInt(n, m int64) int64 {
	if n <= 0 || m <= 0 {
		return 0
	}
	if n > math.MaxInt64/m {
		return math.MaxInt64
	}
	return n * m
}

// FromFloat converts a non-negative byte count computed in floating point
// into Bytes, rounding up, saturating at MaxBytes, and mapping NaN or
// negative values to 0.
func FromFloat(f float64) Bytes {
	// One test for the usual case; it is false for NaN. The largest
	// float64 below 2⁶³ is an integer, so the ceiling fits.
	if f > 0 && f < float64(MaxBytes) {
		return Bytes(math.Ceil(f))
	}
	if f >= float64(MaxBytes) {
		return MaxBytes
	}
	return 0
}
