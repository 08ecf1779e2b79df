package memory

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// llama.cpp quantization mixes without a GGUF file.
//
// A llama.cpp file type (--dtype q4_k_m) is not one width: llama-quantize
// picks a ggml type per tensor from the file type, the tensor's role and
// its layer (llama_tensor_get_type in ggml-org/llama.cpp
// src/llama-quant.cpp). This file replays that choice on the model's
// modules, so a Q4_K_M estimate keeps the output matrix in Q6_K and every
// few layers' V and FFN-down projections in Q6_K as the real files do.
// Norms stay f32; tensors llama-quantize never quantizes (MoE routers,
// 1-D tensors) keep their converted type; the vision tower and projector
// of a VLM are counted in f16, as llama.cpp's mmproj files store them.

// LayoutGGUF is a llama.cpp quantization mix: the format's GGUF type names
// the mix, and each tensor is sized in the ggml type the mix gives it.
const LayoutGGUF QuantLayout = "gguf"

// ggmlType is the block layout of a ggml tensor type: blockSize elements
// in typeSize bytes (type_traits in ggml-org/llama.cpp ggml/src/ggml.c;
// the gguf package's table, which a test keeps in step).
type ggmlType struct {
	name      string
	blockSize int64
	typeSize  int64
}

var (
	ggmlF32    = ggmlType{"F32", 1, 4}
	ggmlF16    = ggmlType{"F16", 1, 2}
	ggmlQ4_0   = ggmlType{"Q4_0", 32, 18}
	ggmlQ4_1   = ggmlType{"Q4_1", 32, 20}
	ggmlQ5_0   = ggmlType{"Q5_0", 32, 22}
	ggmlQ5_1   = ggmlType{"Q5_1", 32, 24}
	ggmlQ8_0   = ggmlType{"Q8_0", 32, 34}
	ggmlQ2_K   = ggmlType{"Q2_K", 256, 84}
	ggmlQ3_K   = ggmlType{"Q3_K", 256, 110}
	ggmlQ4_K   = ggmlType{"Q4_K", 256, 144}
	ggmlQ5_K   = ggmlType{"Q5_K", 256, 176}
	ggmlQ6_K   = ggmlType{"Q6_K", 256, 210}
	ggmlIQ4_NL = ggmlType{"IQ4_NL", 32, 18}
	ggmlIQ4_XS = ggmlType{"IQ4_XS", 256, 136}
)

// GGMLTypeLayout returns the block size and bytes per block of the ggml
// types this package sizes mixes with, by name; false for others.
func GGMLTypeLayout(name string) (blockSize, typeSize int64, ok bool) {
	for _, t := range []ggmlType{ggmlF32, ggmlF16, ggmlQ4_0, ggmlQ4_1, ggmlQ5_0, ggmlQ5_1, ggmlQ8_0, ggmlQ2_K, ggmlQ3_K,
		ggmlQ4_K, ggmlQ5_K, ggmlQ6_K, ggmlIQ4_NL, ggmlIQ4_XS} {
		if strings.EqualFold(t.name, name) {
			return t.blockSize, t.typeSize, true
		}
	}
	return 0, 0, false
}

// bytes is the storage of n elements (whole blocks).
func (t ggmlType) bytes(n int64) units.Bytes {
	return units.Bytes(units.MulInt(ceilDiv(n, t.blockSize), t.typeSize))
}

// ggufFileTypes are the llama-quantize file types modelled, with the type
// each tensor starts from (the default_type of llama_model_quantize_impl).
// "q4_k", "q5_k" and "q3_k" are llama-quantize's aliases of the _M mixes.
var ggufFileTypes = map[string]ggmlType{
	"q4_0": ggmlQ4_0, "q4_1": ggmlQ4_1, "q5_0": ggmlQ5_0, "q5_1": ggmlQ5_1, "q8_0": ggmlQ8_0,
	"q2_k": ggmlQ2_K, "q2_k_s": ggmlQ2_K,
	"q3_k_s": ggmlQ3_K, "q3_k_m": ggmlQ3_K, "q3_k_l": ggmlQ3_K,
	"q4_k_s": ggmlQ4_K, "q4_k_m": ggmlQ4_K,
	"q5_k_s": ggmlQ5_K, "q5_k_m": ggmlQ5_K,
	"q6_k": ggmlQ6_K, "iq4_nl": ggmlIQ4_NL, "iq4_xs": ggmlIQ4_XS,
}

// ggufAliases are llama-quantize's short names for the _M mixes.
var ggufAliases = map[string]string{"q4_k": "q4_k_m", "q5_k": "q5_k_m", "q3_k": "q3_k_m"}

// GGUFFileTypes lists the llama.cpp file types --dtype takes, sorted.
func GGUFFileTypes() []string {
	out := make([]string, 0, len(ggufFileTypes))
	for k := range ggufFileTypes {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

const llamaQuantSource = "ggml-org/llama.cpp:src/llama-quant.cpp llama_tensor_get_type (per-tensor types of each file type); ggml/src/ggml.c type_traits (block sizes)"

// ggufFormat returns the weight format of a llama.cpp file type, or false
// when name is none. The IQ1-IQ3 and ternary mixes depend on an
// importance matrix and are refused with the modelled list.
func ggufFormat(name string) (WeightFormat, bool, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := ggufAliases[n]; ok {
		n = a
	}
	t, ok := ggufFileTypes[n]
	if !ok {
		if strings.HasPrefix(n, "iq") || strings.HasPrefix(n, "tq") || n == "mxfp4_moe" {
			return WeightFormat{}, true, fmt.Errorf("llama.cpp file type %q is not modelled without its GGUF file (its mix depends on the importance matrix); pass one of %s, or read the file with gpumem inspect", name, strings.Join(GGUFFileTypes(), ", "))
		}
		return WeightFormat{}, false, nil
	}
	bits := int(t.typeSize * 8 / t.blockSize)
	return WeightFormat{Name: n, Layout: LayoutGGUF, Bits: bits, Group: int(t.blockSize), Source: llamaQuantSource}, true, nil
}

// ggufMix is a file type applied to one model: the counts llama-quantize
// keeps while it walks the tensors.
type ggufMix struct {
	ftype string
	base  ggmlType
	// vLayers and downLayers are the layers (ascending) of the V-like
	// projections and of the FFN-down tensors, one entry per tensor, in
	// file order.
	vLayers    []int
	downLayers []int
	nExpert    int
	nGQA       int
	is70B      bool
	falcon     bool
	tied       bool
	hidden     int64
	// summary lists the whole model's bytes per ggml type, largest first.
	summary string
}

// newGGUFMix prepares the mix of format f for model m.
func newGGUFMix(m *model.Model, f WeightFormat) *ggufMix {
	x := &ggufMix{ftype: f.Name, base: ggufFileTypes[f.Name], tied: m.Text.TiedEmbeddings, hidden: int64(m.Text.Hidden),
		falcon: strings.Contains(strings.ToLower(m.Architecture), "falcon")}
	st := &m.Text
	if st.MoE != nil {
		x.nExpert = st.MoE.Experts
	}
	if kv := cmpOr(st.KVHeads, st.Heads); kv > 0 {
		x.nGQA = st.Heads / kv
	}
	// llama.cpp names an 80-layer GQA llama LLM_TYPE_70B and gives its V
	// projections a type up (llama_model::load_hparams, LLM_ARCH_LLAMA).
	x.is70B = strings.Contains(strings.ToLower(m.Architecture), "llama") && st.Layers == 80 && x.nGQA > 1
	for _, mod := range m.Modules {
		if mod.Stack != "text" || mod.Layer < 0 {
			continue
		}
		c := ggufCategory(mod)
		for l := mod.Layer; l < mod.Layer+max(mod.Layers, 1); l++ {
			switch c {
			case catAttnV, catQKV, catKVB:
				x.vLayers = append(x.vLayers, l)
			case catDown:
				x.downLayers = append(x.downLayers, l)
			}
		}
	}
	slices.Sort(x.vLayers)
	slices.Sort(x.downLayers)
	x.summary = x.typeSummary(m)
	return x
}

// typeSummary totals the model's bytes by ggml type, as llama-quantize's
// log and gpumem inspect list them: "Q4_K 3.29 GiB, Q6_K 1.20 GiB, ...".
func (x *ggufMix) typeSummary(m *model.Model) string {
	by := map[string]units.Bytes{}
	for _, mod := range m.Modules {
		x.visit(mod, func(t ggmlType, b units.Bytes) { by[t.name] = units.Add(by[t.name], b) })
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(by[b], by[a]), strings.Compare(a, b))
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " " + units.FormatIEC(by[n])
	}
	return strings.Join(parts, ", ") + ", whole model"
}

// Tensor categories of llama-quant.cpp's tensor_get_category.
const (
	catOther = iota
	catEmbd
	catOutput
	catQ
	catK
	catAttnV
	catQKV
	catKVB
	catAttnOut
	catUp
	catGate
	catDown
	catKeep // not quantized: routers, norms, bare parameters
)

// ggufCategory maps a module onto the GGUF tensor it becomes.
func ggufCategory(mod model.Module) int {
	switch mod.Component {
	case "embedding":
		return catEmbd
	case "lm_head":
		return catOutput
	case "norm", "final_norm", "router":
		return catKeep
	}
	if mod.Kind != "linear" && !mod.Expert && (mod.In <= 0 || mod.Out <= 0) {
		return catKeep
	}
	short := mod.Short
	if short == "" {
		short = mod.Name[strings.LastIndexByte(mod.Name, '.')+1:]
	}
	switch short {
	case "q_proj", "query", "wq":
		return catQ
	case "k_proj", "key", "wk":
		return catK
	case "v_proj", "value", "wv":
		return catAttnV
	case "qkv_proj", "query_key_value", "c_attn", "W_pack", "Wqkv":
		return catQKV
	case "kv_b_proj":
		return catKVB
	case "o_proj", "dense", "out_proj", "wo", "c_proj":
		return catAttnOut
	case "up_proj", "w3", "gate_up_proj", "c_fc", "fc1", "dense_h_to_4h":
		return catUp
	case "gate_proj", "w1":
		return catGate
	case "down_proj", "w2", "fc2", "dense_4h_to_h":
		return catDown
	}
	return catOther
}

// useMoreBits is llama-quant.cpp's use_more_bits: the first and last
// eighth of the layers, and every third in between.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// typeFor is the ggml type of a tensor of category c in layer l with
// rows of cols elements (ne[0]).
func (x *ggufMix) typeFor(c, l int, cols int64) ggmlType {
	t := x.base
	f := x.ftype
	switch c {
	case catOutput:
		return x.outputType(cols)
	case catEmbd:
		if x.tied {
			return x.outputType(cols)
		}
	case catAttnV, catQKV, catKVB:
		i, n := slices.Index(x.vLayers, l), len(x.vLayers)
		switch {
		case f == "q2_k":
			t = pickType(x.nGQA >= 4, ggmlQ4_K, ggmlQ3_K)
		case f == "q2_k_s" && x.nGQA >= 4:
			t = ggmlQ4_K
		case f == "q3_k_m":
			t = pickType(i < 2, ggmlQ5_K, ggmlQ4_K)
		case f == "q3_k_l":
			t = ggmlQ5_K
		case (f == "iq4_nl" || f == "iq4_xs") && x.nGQA >= 4:
			t = ggmlQ5_K
		case (f == "q4_k_m" || f == "q5_k_m") && useMoreBits(i, n):
			t = ggmlQ6_K
		case f == "q4_k_s" && i < 4:
			t = ggmlQ5_K
		}
		if x.is70B && (t == ggmlQ3_K || t == ggmlQ4_K) {
			t = ggmlQ5_K
		}
		if x.nExpert == 8 {
			t = ggmlQ8_0
		}
		if c == catQKV {
			// attn_qkv is V-like for the counts above and has its own bumps.
			switch f {
			case "q3_k_m", "q3_k_l":
				t = ggmlQ4_K
			case "q4_k_m":
				t = ggmlQ5_K
			case "q5_k_m":
				t = ggmlQ6_K
			}
		}
	case catK:
		if x.nExpert == 8 {
			t = ggmlQ8_0
		}
	case catDown:
		t = x.downType(l)
	case catAttnOut:
		t = x.attnOutType()
	}
	return fallback(t, cols)
}

// outputType is the type of the output matrix (and of token embeddings
// tied to it): Q8_0 for Falcon, rows that are no whole block, and the
// Q8_0 file type; Q6_K otherwise.
func (x *ggufMix) outputType(cols int64) ggmlType {
	if x.falcon || cols%x.base.blockSize != 0 || x.base == ggmlQ8_0 {
		return ggmlQ8_0
	}
	return ggmlQ6_K
}

// downType is the FFN-down type. With experts, llama-quantize reads the
// layer from the tensor name and counts the layers as the number of
// FFN-down tensors in the file (layer_info), shared experts included.
func (x *ggufMix) downType(l int) ggmlType {
	i, n := slices.Index(x.downLayers, l), len(x.downLayers)
	if x.nExpert > 1 {
		i = l
	}
	f := x.ftype
	switch {
	case f == "q2_k":
		return ggmlQ3_K
	case f == "q2_k_s" && i < n/8:
		return ggmlQ4_K
	case f == "q3_k_m":
		switch {
		case i < n/16:
			return ggmlQ5_K
		case !x.falcon || useMoreBits(i, n):
			return ggmlQ4_K
		}
		return ggmlQ3_K
	case f == "q3_k_l":
		return pickType(x.falcon, ggmlQ4_K, ggmlQ5_K)
	case f == "q4_k_m":
		if x.falcon {
			switch {
			case i < n/16:
				return ggmlQ6_K
			case useMoreBits(i, n):
				return ggmlQ5_K
			}
			return ggmlQ4_K
		}
		if useMoreBits(i, n) {
			return ggmlQ6_K
		}
	case i < n/8 && (f == "iq4_nl" || f == "iq4_xs"):
		return ggmlQ5_K
	case f == "q5_k_m" && useMoreBits(i, n):
		return ggmlQ6_K
	case f == "q4_k_s" && !x.falcon && i < n/8:
		return ggmlQ5_K
	}
	return x.base
}

// attnOutType is the type of the attention output projection.
func (x *ggufMix) attnOutType() ggmlType {
	f := x.ftype
	if x.falcon {
		return pickType(f == "q3_k_l", ggmlQ4_K, x.base)
	}
	if x.nExpert == 8 {
		switch f {
		case "q2_k", "q3_k_s", "q3_k_m", "iq4_nl", "q4_k_s", "q4_k_m", "iq4_xs":
			return ggmlQ5_K
		}
		return x.base
	}
	switch f {
	case "q2_k":
		return ggmlQ3_K
	case "q3_k_m":
		return ggmlQ4_K
	case "q3_k_l":
		return ggmlQ5_K
	}
	return x.base
}

func pickType(cond bool, a, b ggmlType) ggmlType {
	if cond {
		return a
	}
	return b
}

// fallback is tensor_type_fallback: a row that is no whole number of
// the type's blocks takes a type of 32-element blocks, and f16 when even
// that does not divide it.
func fallback(t ggmlType, cols int64) ggmlType {
	if cols <= 0 || cols%t.blockSize == 0 {
		return t
	}
	switch t {
	case ggmlQ2_K, ggmlQ3_K:
		t = ggmlQ4_0
	case ggmlQ4_K:
		t = ggmlQ5_0
	case ggmlQ5_K:
		t = ggmlQ5_1
	case ggmlQ6_K:
		t = ggmlQ8_0
	case ggmlIQ4_XS:
		t = ggmlIQ4_NL
	}
	if cols%t.blockSize != 0 {
		return ggmlF16
	}
	return t
}

// moduleBytes sizes all instances of mod in the mix.
func (x *ggufMix) moduleBytes(mod model.Module) units.Bytes {
	var total units.Bytes
	x.visit(mod, func(_ ggmlType, b units.Bytes) { total = units.Add(total, b) })
	return total
}

// visit calls add with each ggml type mod is stored in and its bytes
// (all instances).
func (x *ggufMix) visit(mod model.Module, add func(ggmlType, units.Bytes)) {
	inst := int64(max(mod.Instances, 1))
	each := mod.Each
	if each <= 0 && mod.Params > 0 {
		each = ceilDiv(mod.Params, inst)
	}
	c := ggufCategory(mod)
	switch {
	case mod.Stack != "text":
		// A VLM's tower and projector live in llama.cpp's mmproj file,
		// usually f16.
		add(ggmlF16, units.Bytes(units.MulInt(int64(ggmlF16.bytes(each)), inst)))
		return
	case c == catKeep:
		add(ggmlF32, units.Bytes(units.MulInt(int64(ggmlF32.bytes(each)), inst)))
		return
	}
	// The weight matrix: ne[0] is the input width (the row); the rest is
	// bias, stored in f32.
	cols, w := int64(mod.In), units.MulInt(int64(mod.In), int64(mod.Out))
	if w <= 0 || w > each {
		w, cols = each, 0
	}
	if (c == catEmbd || c == catOutput) && cols == 0 {
		cols = x.hidden // token_embd and output are rows of n_embd
	}
	if bias := each - w; bias > 0 {
		add(ggmlF32, units.Bytes(units.MulInt(int64(ggmlF32.bytes(bias)), inst)))
	}
	per := int64(max(mod.Layers, 1))
	n := inst / per // instances per layer (experts)
	layer := mod.Layer
	for l := int64(0); l < per; l++ {
		t := x.typeFor(c, layer+int(l), cols)
		add(t, units.Bytes(units.MulInt(int64(t.bytes(w)), n)))
	}
}
