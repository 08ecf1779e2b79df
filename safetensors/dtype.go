package safetensors

import (
	"fmt"
	"sort"
)

// DType is a tensor element type as spelled in a safetensors header
// ("BF16", "F8_E4M3", "I32", ...).
type DType string

// Bits returns the storage width of one element in bits, and false when
// the dtype is not one the safetensors format defines.
//
// The list follows the Dtype enum of huggingface/safetensors:
// safetensors/src/tensor.rs, including the sub-byte microscaling types
// (F4 = FP4 E2M1, F6_E2M3, F6_E3M2) and the scale type F8_E8M0.
func (d DType) Bits() (int, bool) {
	b, ok := dtypeBits[d]
	return b, ok
}

var dtypeBits = map[DType]int{
	"BOOL":        8,
	"F4":          4,
	"F6_E2M3":     6,
	"F6_E3M2":     6,
	"U8":          8,
	"I8":          8,
	"F8_E5M2":     8,
	"F8_E4M3":     8,
	"F8_E8M0":     8,
	"F8_E4M3FNUZ": 8,
	"F8_E5M2FNUZ": 8,
	"I16":         16,
	"U16":         16,
	"F16":         16,
	"BF16":        16,
	"I32":         32,
	"U32":         32,
	"F32":         32,
	"C64":         64,
	"F64":         64,
	"I64":         64,
	"U64":         64,
}

// KnownDTypes returns every dtype the reader accepts, sorted.
func KnownDTypes() []DType {
	out := make([]DType, 0, len(dtypeBits))
	for d := range dtypeBits {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// byteSize returns the bytes elements of dtype d occupy. Sub-byte dtypes
// must fill whole bytes, as the reference implementation requires
// (huggingface/safetensors: safetensors/src/tensor.rs, MisalignedSlice).
func byteSize(d DType, elements int64) (int64, error) {
	bits, ok := d.Bits()
	if !ok {
		return 0, fmt.Errorf("unknown dtype %q", string(d))
	}
	if elements > maxElements/int64(bits) {
		return 0, fmt.Errorf("%d elements of %s overflow int64 bits", elements, d)
	}
	total := elements * int64(bits)
	if total%8 != 0 {
		return 0, fmt.Errorf("%d elements of %s (%d bits) do not fill whole bytes", elements, d, bits)
	}
	return total / 8, nil
}

// maxElements bounds element counts so that a count times a width in bits
// still fits in int64.
const maxElements = int64(1<<63 - 1)
