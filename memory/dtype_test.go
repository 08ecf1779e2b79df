package memory

import (
	"math"
	"testing"

	"github.com/gpumem/gpumem/units"
)

func TestParseDType(t *testing.T) {
	tests := []struct {
		in   string
		want string
		bits float64
	}{
		{"fp32", "fp32", 32}, {"float32", "fp32", 32}, {" torch.bfloat16 ", "bf16", 16},
		{"BF16", "bf16", 16}, {"half", "fp16", 16}, {"fp8", "fp8", 8}, {"e4m3", "fp8", 8},
		{"int8", "int8", 8}, {"int4", "int4", 4}, {"nf4", "nf4", 4}, {"fp4", "fp4", 4}, {"mxfp4", "mxfp4", 4},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDType(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tt.want || got.Bits != tt.bits {
				t.Errorf("ParseDType(%q) = %s/%v bits, want %s/%v", tt.in, got.Name, got.Bits, tt.want, tt.bits)
			}
		})
	}
	for _, bad := range []string{"", "fp64", "bf17", "int3"} {
		if _, err := ParseDType(bad); err == nil {
			t.Errorf("ParseDType(%q): no error", bad)
		}
	}
}

func TestDTypeBytes(t *testing.T) {
	tests := []struct {
		d    DType
		n    int64
		want units.Bytes
	}{
		{FP32, 10, 40}, {BF16, 6738415616, 13476831232}, {NF4, 3, 2}, {INT8, 7, 7},
		{FP32, 0, 0}, {BF16, -5, 0}, {FP32, math.MaxInt64, units.MaxBytes},
	}
	for _, tt := range tests {
		if got := tt.d.Bytes(tt.n); got != tt.want {
			t.Errorf("%s.Bytes(%d) = %d, want %d", tt.d, tt.n, got, tt.want)
		}
	}
}

func TestBnb4BitBytes(t *testing.T) {
	// 4096×4096 weight: 8 MiB data; 262144 blocks of 64.
	n := int64(4096 * 4096)
	if got, want := Bnb4BitBytes(n, false), units.Bytes(n/2+4*(n/64)); got != want {
		t.Errorf("no double quant: got %d, want %d", got, want)
	}
	if got, want := Bnb4BitBytes(n, true), units.Bytes(n/2+n/64+4*(n/64/256)); got != want {
		t.Errorf("double quant: got %d, want %d", got, want)
	}
	// QLoRA §3: 0.127 bits of constants per parameter with double quantisation.
	if got := Bnb4BitBitsPerParam(true); math.Abs(got-4.127) > 0.001 {
		t.Errorf("bits per param with double quant = %v, want ≈ 4.127", got)
	}
	if got := Bnb4BitBitsPerParam(false); got != 4.5 {
		t.Errorf("bits per param = %v, want 4.5", got)
	}
	if Bnb4BitBytes(0, true) != 0 || Bnb4BitBytes(-1, false) != 0 {
		t.Error("non-positive sizes must be 0")
	}
	if got := Bnb4BitBytes(math.MaxInt64, false); got < NF4.Bytes(math.MaxInt64) {
		t.Errorf("huge size: %d, want at least the packed data %d (no wrap-around)", got, NF4.Bytes(math.MaxInt64))
	}
}

func FuzzParseDType(f *testing.F) {
	for _, s := range []string{"bf16", "float32", "", "nf4", "torch.float16", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDType(s)
		if err != nil {
			return
		}
		again, err := ParseDType(d.Name)
		if err != nil || again.Name != d.Name {
			t.Errorf("canonical name %q does not parse back: %v", d.Name, err)
		}
		if d.Bits <= 0 {
			t.Errorf("%s has %v bits", d.Name, d.Bits)
		}
	})
}
