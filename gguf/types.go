package gguf

import (
	"fmt"
	"strings"
)

// Type is a ggml tensor type (enum ggml_type in ggml/include/ggml.h of
// ggml-org/llama.cpp). Its numeric values are stored in GGUF files.
type Type uint32

// typeInfo is the block layout of a ggml type: BlockSize elements are
// stored in TypeSize bytes (ggml's type_traits blck_size and type_size).
type typeInfo struct {
	name      string
	blockSize int64
	typeSize  int64
}

// types lists the ggml types by value, with the block sizes and bytes of
// ggml/src/ggml.c type_traits (e.g. Q4_K: 256 values in 144 bytes, 4.5
// bits each). Values 4, 5 (Q4_2, Q4_3) and 31-33, 36-38 (repacked
// Q4_0/IQ4_NL variants) were removed from GGUF files and are rejected.
var types = map[Type]typeInfo{
	0:  {"F32", 1, 4},
	1:  {"F16", 1, 2},
	2:  {"Q4_0", 32, 18},
	3:  {"Q4_1", 32, 20},
	6:  {"Q5_0", 32, 22},
	7:  {"Q5_1", 32, 24},
	8:  {"Q8_0", 32, 34},
	9:  {"Q8_1", 32, 36},
	10: {"Q2_K", 256, 84},
	11: {"Q3_K", 256, 110},
	12: {"Q4_K", 256, 144},
	13: {"Q5_K", 256, 176},
	14: {"Q6_K", 256, 210},
	15: {"Q8_K", 256, 292},
	16: {"IQ2_XXS", 256, 66},
	17: {"IQ2_XS", 256, 74},
	18: {"IQ3_XXS", 256, 98},
	19: {"IQ1_S", 256, 50},
	20: {"IQ4_NL", 32, 18},
	21: {"IQ3_S", 256, 110},
	22: {"IQ2_S", 256, 82},
	23: {"IQ4_XS", 256, 136},
	24: {"I8", 1, 1},
	25: {"I16", 1, 2},
	26: {"I32", 1, 4},
	27: {"I64", 1, 8},
	28: {"F64", 1, 8},
	29: {"IQ1_M", 256, 56},
	30: {"BF16", 1, 2},
	34: {"TQ1_0", 256, 54},
	35: {"TQ2_0", 256, 66},
	39: {"MXFP4", 32, 17},
	40: {"NVFP4", 64, 36},
	41: {"Q1_0", 128, 18},
}

// String returns the ggml name, e.g. "Q4_K", or "type(N)" when unknown.
func (t Type) String() string {
	if info, ok := types[t]; ok {
		return info.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Known reports whether t is a ggml type this package can size.
func (t Type) Known() bool {
	_, ok := types[t]
	return ok
}

// BitsPerElement returns the average storage width of one element,
// scales included (Q4_K: 4.5).
func (t Type) BitsPerElement() float64 {
	info, ok := types[t]
	if !ok {
		return 0
	}
	return float64(info.typeSize*8) / float64(info.blockSize)
}

// ParseType returns the type named s ("f16", "q8_0", "Q4_K", ...),
// case-insensitively, as llama.cpp's --cache-type-k accepts them.
func ParseType(s string) (Type, error) {
	for t, info := range types {
		if strings.EqualFold(info.name, s) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown ggml type %q (want f32, f16, bf16, q8_0, q4_0, ...)", s)
}

// rowBytes returns the bytes of n consecutive elements of type t
// (ggml_row_size); n must be a whole number of blocks.
func rowBytes(t Type, n int64) (int64, error) {
	info, ok := types[t]
	if !ok {
		return 0, fmt.Errorf("unknown ggml type %d", uint32(t))
	}
	if n < 0 || n%info.blockSize != 0 {
		return 0, fmt.Errorf("%d elements of %s are not a whole number of %d-element blocks", n, info.name, info.blockSize)
	}
	blocks := n / info.blockSize
	if blocks > maxInt64/info.typeSize {
		return 0, fmt.Errorf("%d elements of %s overflow int64 bytes", n, info.name)
	}
	return blocks * info.typeSize, nil
}

const maxInt64 = int64(1<<63 - 1)

// typeF16 is GGML_TYPE_F16, llama.cpp's default KV-cache type.
const typeF16 Type = 1

// quantized reports whether t stores blocks with scales (ggml_is_quantized:
// every type but the plain floats and integers).
func (t Type) quantized() bool {
	switch t {
	case 0, 1, 30, 24, 25, 26, 27, 28: // F32, F16, BF16, I8..I64, F64
		return false
	}
	return t.Known()
}

// cacheTypeNames are the KV-cache types llama.cpp's -ctk and -ctv accept
// (kv_cache_types in common/arg.cpp).
var cacheTypeNames = []string{"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}

// CacheTypes lists the KV-cache types llama.cpp accepts, as -ctk spells them.
func CacheTypes() []string { return append([]string(nil), cacheTypeNames...) }

// parseCacheType reads a KV-cache type; a ggml type llama.cpp does not
// offer for the cache is refused with the list of those it does.
func parseCacheType(s string) (Type, error) {
	for _, n := range cacheTypeNames {
		if strings.EqualFold(n, strings.TrimSpace(s)) {
			return ParseType(n)
		}
	}
	return 0, fmt.Errorf("%q is not a KV-cache type llama.cpp accepts (want %s)", s, strings.Join(cacheTypeNames, ", "))
}
