package memory

import (
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// QuantLayout is how one weight format lays a Linear weight out in GPU
// memory: packed data plus whatever scales, zero points and index tensors
// the format keeps next to it. Sizes are computed per tensor from its
// shape, so that rounding happens once per tensor as the checkpoint does.
type QuantLayout string

// Weight layouts. Each names the tensors it stores; the sources are the
// loaders that allocate them.
const (
	// LayoutPlain is a dense tensor of the format's width (fp32, fp16, bf16).
	LayoutPlain QuantLayout = "plain"
	// LayoutFP8Tensor is fp8 data plus one fp32 scale per tensor
	// (vllm-project/vllm:vllm/model_executor/layers/quantization/fp8.py,
	// Fp8LinearMethod weight_scale per logical tensor).
	LayoutFP8Tensor QuantLayout = "fp8-tensor"
	// LayoutFP8Block is fp8 data plus one fp32 scale per block×block tile,
	// DeepSeek-V3's weight_scale_inv (arXiv:2412.19437 §3.3.2; config
	// quantization_config.weight_block_size = [128, 128]).
	LayoutFP8Block QuantLayout = "fp8-block"
	// LayoutInt8Row is LLM.int8: int8 data plus one fp32 absmax per output
	// row (bitsandbytes-foundation/bitsandbytes:bitsandbytes/nn/modules.py
	// Int8Params CB and SCB; arXiv:2208.07339 §3).
	LayoutInt8Row QuantLayout = "int8-row"
	// LayoutGPTQ is AutoGPTQ's packing: qweight int32 [in·bits/32, out],
	// qzeros int32 [in/g, out·bits/32], scales fp16 [in/g, out] and g_idx
	// int32 [in] (AutoGPTQ/AutoGPTQ:auto_gptq/nn_modules/qlinear/qlinear_cuda.py).
	LayoutGPTQ QuantLayout = "gptq"
	// LayoutAWQ is AutoAWQ's GEMM packing: qweight int32 [in, out·bits/32],
	// qzeros int32 [in/g, out·bits/32], scales fp16 [in/g, out], no g_idx
	// (casper-hansen/AutoAWQ:awq/modules/linear/gemm.py WQLinear_GEMM).
	LayoutAWQ QuantLayout = "awq"
	// LayoutBnb4 is bitsandbytes NF4/FP4: two values per byte plus block
	// constants (see [Bnb4BitBytes]).
	LayoutBnb4 QuantLayout = "bnb4"
	// LayoutMXFP4 is OCP microscaling FP4: 4-bit E2M1 data plus one E8M0
	// (1-byte) scale per block of 32 (OCP Microscaling Formats v1.0 §5;
	// gpt-oss checkpoints store *_blocks and *_scales uint8 tensors).
	LayoutMXFP4 QuantLayout = "mxfp4"
	// LayoutNVFP4 is NVIDIA FP4: 4-bit E2M1 data, one FP8 E4M3 scale per
	// block of 16 and one fp32 global scale per tensor
	// (NVIDIA/TensorRT-Model-Optimizer NVFP4 export: weight, weight_scale,
	// weight_scale_2).
	LayoutNVFP4 QuantLayout = "nvfp4"
)

// Block sizes fixed by the formats themselves.
const (
	mxfp4Block    = 32  // OCP MX v1.0: k = 32 elements share one scale
	nvfp4Block    = 16  // NVFP4: 16 elements share one E4M3 scale
	defaultGroup  = 128 // GPTQ/AWQ group_size used by most released int4 checkpoints
	defaultFP8Blk = 128 // DeepSeek-V3 weight_block_size
	int32Bits     = 32
)

// WeightFormat is the storage format of the quantizable weights of a job:
// the element type, its layout and the group or block size of its scales.
type WeightFormat struct {
	// Name is the canonical name shown in tables, e.g. "int4-gptq-g128".
	Name string `json:"name"`
	// Layout selects the tensors stored per weight.
	Layout QuantLayout `json:"layout"`
	// Bits is the width of one data element (16, 8, 4, 3, 2).
	Bits int `json:"bits"`
	// Group is the number of weights sharing one scale (GPTQ/AWQ group
	// size, FP8 block edge, bitsandbytes block); 0 when not grouped.
	Group int `json:"group,omitempty"`
	// DoubleQuant is bitsandbytes' nested quantisation of the absmax values.
	DoubleQuant bool `json:"double_quant,omitempty"`
	// Source cites the layout.
	Source string `json:"source"`
}

// Quantized reports whether the format stores anything but plain floats.
func (f WeightFormat) Quantized() bool { return f.Layout != LayoutPlain }

// TensorBytes is the GPU storage of one weight of shape out×in (a Linear
// with in input and out output features), including its scales, zero
// points and index tensors. When the shape is unknown (in or out 0), n
// elements are laid out as one row. The result never overflows.
func (f WeightFormat) TensorBytes(in, out, n int64) units.Bytes {
	if in <= 0 || out <= 0 {
		in, out = n, 1
	}
	if in <= 0 {
		return 0
	}
	elems := units.MulInt(in, out)
	data := func(bits int) units.Bytes { return units.FromFloat(float64(elems) * float64(bits) / 8) }
	g := int64(f.Group)
	switch f.Layout {
	case LayoutFP8Block:
		if g <= 0 {
			g = defaultFP8Blk
		}
		tiles := units.MulInt(ceilDiv(in, g), ceilDiv(out, g))
		return units.Add(data(8), units.Bytes(units.MulInt(tiles, 4)))
	case LayoutFP8Tensor:
		return units.Add(data(8), 4)
	case LayoutInt8Row:
		return units.Add(data(8), units.Bytes(units.MulInt(out, 4)))
	case LayoutGPTQ:
		return gptqBytes(in, out, int64(f.Bits), groupOr(g, in), true)
	case LayoutAWQ:
		return gptqBytes(in, out, int64(f.Bits), groupOr(g, in), false)
	case LayoutBnb4:
		return Bnb4BitBytes(elems, f.DoubleQuant)
	case LayoutMXFP4:
		return units.Add(data(4), units.Bytes(ceilDiv(elems, mxfp4Block)))
	case LayoutNVFP4:
		return units.Add(units.Add(data(4), units.Bytes(ceilDiv(elems, nvfp4Block))), 4)
	}
	return data(f.Bits)
}

// groupOr returns g, or in when g is 0 or negative (group_size -1: one
// group over the whole input dimension).
func groupOr(g, in int64) int64 {
	if g <= 0 {
		return in
	}
	return g
}

// gptqBytes sizes the GPTQ / AWQ tensors of one Linear: int32-packed
// weights and zero points, fp16 scales per group, and GPTQ's int32 g_idx.
func gptqBytes(in, out, bits, g int64, gIdx bool) units.Bytes {
	groups := ceilDiv(in, g)
	var qweight int64
	if gIdx { // GPTQ packs along the input dimension
		qweight = units.MulInt(units.MulInt(ceilDiv(units.MulInt(in, bits), int32Bits), out), 4)
	} else { // AWQ packs along the output dimension
		qweight = units.MulInt(units.MulInt(in, ceilDiv(units.MulInt(out, bits), int32Bits)), 4)
	}
	qzeros := units.MulInt(units.MulInt(groups, ceilDiv(units.MulInt(out, bits), int32Bits)), 4)
	scales := units.MulInt(units.MulInt(groups, out), 2)
	total := units.Add(units.Add(units.Bytes(qweight), units.Bytes(qzeros)), units.Bytes(scales))
	if gIdx {
		total = units.Add(total, units.Bytes(units.MulInt(in, 4)))
	}
	return total
}

// PlainFormat is the format of unquantized weights of dtype d.
func PlainFormat(d DType) WeightFormat {
	return WeightFormat{Name: d.Name, Layout: LayoutPlain, Bits: int(d.Bits),
		Source: "torch dtype width (torch.finfo)"}
}

// WeightFormatNames lists the names [ParseWeightFormat] accepts as a job's
// --dtype, in table order.
func WeightFormatNames() []string {
	return []string{"fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4", "fp4", "mxfp4", "nvfp4"}
}

// ParseWeightFormat returns the format a job's --dtype names. A llama.cpp
// file type (q4_k_m, q8_0, ...) is that file type's per-tensor mix
// ([LayoutGGUF]). Float names
// give plain weights; "fp8" is per-tensor-scaled fp8 as vLLM's runtime
// --quantization fp8 stores it; "int8" is bitsandbytes LLM.int8; "int4" is
// GPTQ-style int4 with groups of 128 (the layout of most int4
// checkpoints); "nf4"/"fp4" are bitsandbytes 4-bit (double quantisation
// when doubleQuant is set); "mxfp4" and "nvfp4" are the microscaled FP4
// formats.
func ParseWeightFormat(name string, doubleQuant bool) (WeightFormat, error) {
	if f, ok, err := ggufFormat(name); ok {
		return f, err
	}
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "nvfp4", "modelopt_fp4":
		return nvfp4Format(), nil
	case "awq":
		return WeightFormat{Name: "int4-awq-g128", Layout: LayoutAWQ, Bits: 4, Group: defaultGroup, Source: string(LayoutAWQ) + ": " + awqSource}, nil
	}
	d, err := ParseDType(name)
	if err != nil {
		return WeightFormat{}, fmt.Errorf("weight format: %w (or nvfp4, or a llama.cpp file type such as q4_k_m)", err)
	}
	switch d.Name {
	case FP8.Name:
		return WeightFormat{Name: "fp8", Layout: LayoutFP8Tensor, Bits: 8, Source: fp8TensorSource}, nil
	case INT8.Name:
		return WeightFormat{Name: "int8", Layout: LayoutInt8Row, Bits: 8, Source: int8Source}, nil
	case INT4.Name:
		return WeightFormat{Name: "int4-gptq-g128", Layout: LayoutGPTQ, Bits: 4, Group: defaultGroup, Source: gptqSource}, nil
	case NF4.Name, FP4.Name:
		return bnb4Format(d.Name, doubleQuant), nil
	case MXFP4.Name:
		return mxfp4Format(), nil
	}
	return PlainFormat(d), nil
}

// Layout sources, cited in component rows.
const (
	fp8TensorSource = "vllm-project/vllm:vllm/model_executor/layers/quantization/fp8.py (fp8 weight + fp32 per-tensor weight_scale)"
	fp8BlockSource  = "arXiv:2412.19437 §3.3.2 (DeepSeek-V3 128×128 block scales, fp32 weight_scale_inv)"
	int8Source      = "bitsandbytes-foundation/bitsandbytes:bitsandbytes/nn/modules.py Int8Params (int8 CB + fp32 row absmax SCB); arXiv:2208.07339"
	gptqSource      = "AutoGPTQ/AutoGPTQ:auto_gptq/nn_modules/qlinear/qlinear_cuda.py (qweight, qzeros int32; scales fp16; g_idx int32)"
	awqSource       = "casper-hansen/AutoAWQ:awq/modules/linear/gemm.py WQLinear_GEMM (qweight, qzeros int32; scales fp16)"
	bnb4Source      = "bitsandbytes-foundation/bitsandbytes:bitsandbytes/functional.py quantize_4bit (block 64, fp32 absmax; nested 8-bit absmax); MODEL.md §6.2"
	mxfp4Source     = "OCP Microscaling Formats (MX) v1.0 §5 (E2M1 elements, one E8M0 scale per 32)"
	nvfp4Source     = "NVIDIA/TensorRT-Model-Optimizer NVFP4 (E2M1 elements, E4M3 scale per 16, fp32 global scale)"
)

func bnb4Format(kind string, doubleQuant bool) WeightFormat {
	name := kind
	if doubleQuant {
		name += "-dq"
	}
	return WeightFormat{Name: name, Layout: LayoutBnb4, Bits: 4, Group: bnb4BlockSize, DoubleQuant: doubleQuant, Source: bnb4Source}
}

func mxfp4Format() WeightFormat {
	return WeightFormat{Name: "mxfp4", Layout: LayoutMXFP4, Bits: 4, Group: mxfp4Block, Source: mxfp4Source}
}

func nvfp4Format() WeightFormat {
	return WeightFormat{Name: "nvfp4", Layout: LayoutNVFP4, Bits: 4, Group: nvfp4Block, Source: nvfp4Source}
}
