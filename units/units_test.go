package units

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Bytes
	}{
		{"80GiB", 80 << 30},
		{"80 GB", 80e9},
		{"24576MiB", 24576 << 20},
		{"1024", 1024},
		{"1.5 KiB", 1536},
		{"0.5tib", 1 << 39},
		{"12b", 12},
		{"2e3 MB", 2e9},
	} {
		got, err := ParseBytes(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseBytesErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"80G", "ambiguous"},
		{"80 m", "ambiguous"},
		{"GiB", "want a number"},
		{"-1GiB", "non-negative"},
		{"1e30 TB", "overflow"},
		{"12 parsecs", "unknown unit"},
		{"NaN GiB", "want a number"},
	} {
		_, err := ParseBytes(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseBytes(%q) error = %v; want it to mention %q", tc.in, err, tc.want)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		b       Bytes
		iec, si string
	}{
		{0, "0 B", "0 B"},
		{1023, "1023 B", "1.02 KB"},
		{80 << 30, "80.00 GiB", "85.90 GB"},
		{-3 * GiB / 2, "-1.50 GiB", "-1.61 GB"},
	} {
		if got := FormatIEC(tc.b); got != tc.iec {
			t.Errorf("FormatIEC(%d) = %q, want %q", tc.b, got, tc.iec)
		}
		if got := FormatSI(tc.b); got != tc.si {
			t.Errorf("FormatSI(%d) = %q, want %q", tc.b, got, tc.si)
		}
	}
}

func TestSaturatingArithmetic(t *testing.T) {
	if got := Add(MaxBytes-1, 10); got != MaxBytes {
		t.Errorf("Add overflow = %d, want MaxBytes", got)
	}
	if got := Add(2, 3); got != 5 {
		t.Errorf("Add(2,3) = %d", got)
	}
	if got := MulInt(math.MaxInt64/2, 3); got != math.MaxInt64 {
		t.Errorf("MulInt overflow = %d", got)
	}
	if got := MulInt(-4, 3); got != 0 {
		t.Errorf("MulInt(-4,3) = %d, want 0", got)
	}
	for _, f := range []float64{math.NaN(), -1, math.Inf(-1)} {
		if got := FromFloat(f); got != 0 {
			t.Errorf("FromFloat(%v) = %d, want 0", f, got)
		}
	}
	if got := FromFloat(math.Inf(1)); got != MaxBytes {
		t.Errorf("FromFloat(+Inf) = %d, want MaxBytes", got)
	}
	if got := FromFloat(1.2); got != 2 {
		t.Errorf("FromFloat(1.2) = %d, want 2 (rounded up)", got)
	}
}

func TestParams(t *testing.T) {
	for in, want := range map[string]Params{"7B": 7e9, "6.74b": 6.74e9, "350M": 350e6, "1.5T": 1.5e12, "70e9": 70e9, "6738415616": 6738415616, "12k": 12000} {
		got, err := ParseParams(in)
		if err != nil || got != want {
			t.Errorf("ParseParams(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "B", "-7B", "0", "1e30T", "seven"} {
		if _, err := ParseParams(in); err == nil {
			t.Errorf("ParseParams(%q): want an error", in)
		}
	}
	if s := Params(6738415616).String(); s != "6.74B" {
		t.Errorf("String = %q", s)
	}
}

// FuzzParseBytes checks that parsing never panics, never returns a
// negative size, and that formatted IEC values parse back close to the input.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"80GiB", "80 GB", "1024", "1.5 KiB", "80G", "-1", "1e400TB", "NaN", ".e-GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBytes(s)
		if err != nil {
			return
		}
		if b < 0 {
			t.Fatalf("ParseBytes(%q) = %d < 0", s, b)
		}
		back, err := ParseBytes(FormatIEC(b))
		if errors.Is(err, ErrOverflow) && b > MaxBytes/1000*995 {
			return // within the rounding of "8.00 EiB" of the largest size
		}
		if err != nil {
			t.Fatalf("re-parse of %q (from %q): %v", FormatIEC(b), s, err)
		}
		if diff := math.Abs(float64(back - b)); diff > 0.006*float64(b)+1 {
			t.Fatalf("round trip %q -> %d -> %q -> %d", s, b, FormatIEC(b), back)
		}
	})
}
