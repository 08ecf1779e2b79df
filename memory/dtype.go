package memory

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// DType is a storage data type of tensors on the GPU. Widths are kept in
// bits so that packed 4-bit formats stay exact; bytes are rounded up once
// per tensor by [DType.Bytes].
type DType struct {
	// Name is the canonical short name: "fp32", "bf16", "nf4", ...
	Name string `json:"name"`
	// Aliases are other spellings accepted by [ParseDType] (torch and
	// Hugging Face names such as "bfloat16", "torch.float16").
	Aliases []string `json:"aliases,omitempty"`
	// Bits is the storage width of one element, without block scales.
	Bits float64 `json:"bits"`
	// Float is true for floating-point formats that autograd can train
	// directly (fp32, tf32, fp16, bf16).
	Float bool `json:"float"`
	// Quantized is true for formats that need scales or block constants
	// and are dequantized to a compute dtype before a matmul.
	Quantized bool `json:"quantized"`
	// Note says where the format is used.
	Note string `json:"note,omitempty"`
}

// Canonical dtypes. Their widths are those of the torch dtypes
// (torch.finfo / torch.iinfo) and, for the packed formats, of the
// bitsandbytes storage (two 4-bit values per uint8).
var (
	FP32  = DType{Name: "fp32", Aliases: []string{"float32", "float", "f32", "torch.float32", "full"}, Bits: 32, Float: true, Note: "IEEE single precision; torch default dtype"}
	FP16  = DType{Name: "fp16", Aliases: []string{"float16", "half", "f16", "torch.float16"}, Bits: 16, Float: true, Note: "IEEE half precision"}
	BF16  = DType{Name: "bf16", Aliases: []string{"bfloat16", "torch.bfloat16", "bf16-true", "bf16-mixed"}, Bits: 16, Float: true, Note: "brain float 16"}
	FP8   = DType{Name: "fp8", Aliases: []string{"float8", "fp8_e4m3", "e4m3", "fp8_e5m2", "e5m2", "float8_e4m3fn", "torch.float8_e4m3fn"}, Bits: 8, Quantized: true, Note: "8-bit float weights with per-tensor or per-block scales"}
	INT8  = DType{Name: "int8", Aliases: []string{"8bit", "llm.int8", "torch.int8"}, Bits: 8, Quantized: true, Note: "LLM.int8 / 8-bit integer weights with per-row scales"}
	INT4  = DType{Name: "int4", Aliases: []string{"4bit", "gptq", "awq"}, Bits: 4, Quantized: true, Note: "4-bit integer weights (GPTQ/AWQ style groups)"}
	NF4   = DType{Name: "nf4", Aliases: []string{"normalfloat4"}, Bits: 4, Quantized: true, Note: "bitsandbytes NormalFloat4, block 64 (QLoRA)"}
	FP4   = DType{Name: "fp4", Aliases: []string{"float4"}, Bits: 4, Quantized: true, Note: "bitsandbytes FP4, block 64"}
	MXFP4 = DType{Name: "mxfp4", Aliases: nil, Bits: 4, Quantized: true, Note: "OCP microscaling fp4 (block 32, one e8m0 scale)"}
)

// dtypes is the lookup table of [ParseDType], in listing order.
var dtypes = [...]*DType{&FP32, &BF16, &FP16, &FP8, &INT8, &INT4, &NF4, &FP4, &MXFP4}

// DTypes lists every dtype [ParseDType] accepts.
func DTypes() []DType {
	out := make([]DType, len(dtypes))
	for i, d := range dtypes {
		out[i] = *d
	}
	return out
}

// ParseDType returns the dtype named s (canonical name or alias, case
// insensitive, surrounding blanks ignored).
func ParseDType(s string) (DType, error) {
	d, err := lookupDType(s)
	if err != nil {
		return DType{}, err
	}
	return *d, nil
}

// lookupDType is [ParseDType] returning the table's dtype itself, which
// callers copy at most once. The dtype it points to must not be changed.
func lookupDType(s string) (*DType, error) {
	if d := canonicalDType(s); d != nil {
		return d, nil
	}
	s = strings.TrimSpace(s)
	for _, d := range dtypes {
		if strings.EqualFold(s, d.Name) {
			return d, nil
		}
		for _, a := range d.Aliases {
			if strings.EqualFold(s, a) {
				return d, nil
			}
		}
	}
	return nil, fmt.Errorf("unknown dtype %q (want fp32, bf16, fp16, fp8, int8, int4, nf4, fp4 or mxfp4)", s)
}

// canonicalDType is the dtype whose canonical name is exactly s, or nil:
// the fast path of [ParseDType] for the names jobs usually carry. No
// alias of one dtype is another's canonical name, so the answer is the
// one the full scan gives.
func canonicalDType(s string) *DType {
	switch s {
	case "bf16":
		return &BF16
	case "fp32":
		return &FP32
	case "fp16":
		return &FP16
	case "nf4":
		return &NF4
	case "fp8":
		return &FP8
	case "int8":
		return &INT8
	case "int4":
		return &INT4
	case "fp4":
		return &FP4
	case "mxfp4":
		return &MXFP4
	}
	return nil
}

// BytesPerElement is the storage width in bytes (0.5 for 4-bit formats),
// without block constants. Its receiver is a pointer: the estimators call
// it in their inner loops, and an inlined call on a DType value still
// copies the whole struct (nine words) to read one field.
func (d *DType) BytesPerElement() float64 { return d.Bits / 8 }

// Bytes is the storage of one tensor of n elements, rounded up to whole
// bytes, without block constants. Non-positive n gives 0; sizes saturate.
func (d DType) Bytes(n int64) units.Bytes {
	if n <= 0 {
		return 0
	}
	return units.FromFloat(math.Ceil(float64(n) * d.Bits / 8))
}

// String returns the canonical name.
func (d DType) String() string { return d.Name }

// Bitsandbytes 4-bit block constants (bitsandbytes-foundation/bitsandbytes:
// bitsandbytes/functional.py quantize_4bit, blocksize=64 default; double
// quantisation quantizes the fp32 absmax values to 8 bits in blocks of 256
// with one fp32 absmax each; QLoRA arXiv:2305.14314 §3 "Double Quantization").
const (
	bnb4BlockSize        = 64
	bnb4DoubleQuantBlock = 256
)

// Bnb4BitBytes is the storage of a bitsandbytes 4-bit (NF4 or FP4) weight
// of n elements: packed data n/2 plus one fp32 absmax per block of 64, or,
// with double quantisation, one uint8 absmax per block plus one fp32
// constant per 256 blocks (4.5 vs ≈4.127 bits per parameter).
func Bnb4BitBytes(n int64, doubleQuant bool) units.Bytes {
	if n <= 0 {
		return 0
	}
	blocks := ceilDiv(n, bnb4BlockSize)
	data := ceilDiv(n, 2)
	if !doubleQuant {
		return units.Add(units.Bytes(data), units.Bytes(units.MulInt(blocks, 4)))
	}
	groups := ceilDiv(blocks, bnb4DoubleQuantBlock)
	return units.Add(units.Add(units.Bytes(data), units.Bytes(blocks)), units.Bytes(units.MulInt(groups, 4)))
}

// Bnb4BitBitsPerParam is the average storage width of [Bnb4BitBytes] for
// large tensors: 4.5 bits, or 4 + 8/64 + 32/(64·256) ≈ 4.127 bits with
// double quantisation (QLoRA arXiv:2305.14314 §3).
func Bnb4BitBitsPerParam(doubleQuant bool) float64 {
	if doubleQuant {
		return 4 + 8.0/bnb4BlockSize + 32.0/(bnb4BlockSize*bnb4DoubleQuantBlock)
	}
	return 4 + 32.0/bnb4BlockSize
}

// ceilDiv is ⌈n/d⌉ for n >= 0, d > 0, without overflow.
func ceilDiv(n, d int64) int64 {
	q := n / d
	if n%d != 0 {
		q++
	}
	return q
}
