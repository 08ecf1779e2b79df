package memory

import (
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// weightPlan says how every parameter tensor of a model is stored: the
// quantizable Linear weights in quant, everything else (embeddings,
// lm_head, norms, routers, biases, skipped modules) in rest.
type weightPlan struct {
	quant WeightFormat
	rest  DType
	// skip lists module patterns kept in rest (modules_to_not_convert).
	skip []string
	// origin says where quant comes from: "checkpoint <method>" or "dtype".
	origin   string
	warnings []string
	// gguf is the per-tensor mix of a llama.cpp file type (LayoutGGUF).
	gguf *ggufMix
}

// planWeights decides the storage of the weights: a pre-quantized
// checkpoint's quantization_config wins for its quantized tensors;
// --dtype then names the dtype of the unquantized rest when it is a float
// type. Without a checkpoint quantization, a quantized --dtype quantizes
// the Linear layers at load time (bitsandbytes, vLLM --quantization fp8)
// and keeps the rest in the compute dtype. The default is bf16.
func planWeights(m *model.Model, job Job) (weightPlan, error) {
	var jobFmt WeightFormat
	hasJob := strings.TrimSpace(job.Dtype) != ""
	if hasJob {
		f, err := ParseWeightFormat(job.Dtype, doubleQuant(job))
		if err != nil {
			return weightPlan{}, FieldErrorf("dtype", "{dtype}: %w", err)
		}
		jobFmt = f
	}
	if m.Quant != nil {
		return planCheckpoint(m, job, jobFmt, hasJob)
	}
	if !hasJob {
		return weightPlan{quant: PlainFormat(BF16), rest: BF16, origin: "default bf16"}, nil
	}
	if !jobFmt.Quantized() {
		d, _ := ParseDType(jobFmt.Name)
		return weightPlan{quant: jobFmt, rest: d, origin: "dtype"}, nil
	}
	rest, err := runtimeQuantRest(m, job, jobFmt)
	if err != nil {
		return weightPlan{}, err
	}
	p := weightPlan{quant: jobFmt, rest: rest, origin: "dtype=" + jobFmt.Name}
	if jobFmt.Layout == LayoutGGUF {
		p.gguf = newGGUFMix(m, jobFmt)
		p.warnings = append(p.warnings, fmt.Sprintf("dtype=%s: the weights are sized as llama-quantize mixes that file type (per-tensor ggml types by role and layer; norms f32, the vision tower in f16 as in mmproj files), without the GGUF file; gpumem inspect reads a real file exactly", jobFmt.Name))
	}
	return p, nil
}

// runtimeQuantRest is the dtype of the tensors a load-time quantizer leaves
// alone: --compute-dtype when it is a 16-bit type (QLoRA-style recipes load
// in the dtype they compute in), else the checkpoint's fp16/bf16 (with
// bitsandbytes, transformers overrides an unset torch_dtype to fp16), else
// bf16. An fp32 --compute-dtype is the dtype of bitsandbytes' 4-bit matmuls
// only (BitsAndBytesConfig's default); it does not widen the other tensors.
func runtimeQuantRest(m *model.Model, job Job, f WeightFormat) (DType, error) {
	rest := BF16
	if d, err := ParseDType(m.TorchDtype); err == nil && (d.Name == FP16.Name || d.Name == BF16.Name) {
		rest = d
	}
	c, err := floatDtypeOr(job.ComputeDtype, rest, "compute_dtype")
	if err != nil {
		return DType{}, err
	}
	if c.Bits == 16 || (f.Layout != LayoutBnb4 && f.Layout != LayoutInt8Row) {
		return c, nil
	}
	return rest, nil
}

// planCheckpoint is planWeights for a pre-quantized checkpoint.
func planCheckpoint(m *model.Model, job Job, jobFmt WeightFormat, hasJob bool) (weightPlan, error) {
	q := m.Quant
	f, known := checkpointFormat(q)
	p := weightPlan{quant: f, skip: skipModules(q), origin: "checkpoint quantization_config " + q.Method}
	if !known {
		p.warnings = append(p.warnings, unknownQuantWarning(q, f))
	}
	// The unquantized tensors: --dtype when it is a float type, else the
	// checkpoint's torch_dtype, else fp16 for the int4 kernels that need it
	// (GPTQ/AWQ exllama, marlin) and bf16 otherwise.
	def := BF16
	if m := strings.ToLower(q.Method); m == "gptq" || m == "awq" {
		def = FP16
	}
	if d, err := ParseDType(m.TorchDtype); err == nil && d.Float {
		def = d
	}
	p.rest = def
	if hasJob {
		if jobFmt.Quantized() {
			p.warnings = append(p.warnings, fmt.Sprintf(
				"dtype=%s ignored: the checkpoint is already quantized (quant_method %q); its tensors are counted as %s", job.Dtype, q.Method, f.Name))
		} else {
			d, _ := ParseDType(jobFmt.Name)
			p.rest = d
		}
	}
	return p, nil
}

// unknownQuantWarning names a quant_method the tool cannot lay out and the
// fallback it used instead.
func unknownQuantWarning(q *model.Quantization, f WeightFormat) string {
	if f.Quantized() || f.Bits < 16 {
		return fmt.Sprintf("quantization_config: quant_method %q is not known; counting its weights as plain %d-bit data without scales", q.Method, f.Bits)
	}
	return fmt.Sprintf("quantization_config: quant_method %q is not known and states no bits; counting the weights unquantized in the compute dtype", q.Method)
}

// checkpointFormat maps a quantization_config onto a weight layout. It
// reports false for a method it does not know (with a plain-bits fallback).
func checkpointFormat(q *model.Quantization) (WeightFormat, bool) {
	bits := q.Bits
	if bits == 0 {
		bits = rawInt(q.Raw, "bits", rawInt(q.Raw, "w_bit", 0))
	}
	group := q.GroupSize
	if group == 0 {
		group = rawInt(q.Raw, "group_size", rawInt(q.Raw, "q_group_size", 0))
	}
	switch strings.ToLower(q.Method) {
	case "gptq":
		return WeightFormat{Name: fmt.Sprintf("int%d-gptq-g%d", orInt(bits, 4), orGroup(group)), Layout: LayoutGPTQ,
			Bits: orInt(bits, 4), Group: orGroup(group), Source: gptqSource}, true
	case "awq":
		return WeightFormat{Name: fmt.Sprintf("int%d-awq-g%d", orInt(bits, 4), orGroup(group)), Layout: LayoutAWQ,
			Bits: orInt(bits, 4), Group: orGroup(group), Source: awqSource}, true
	case "bitsandbytes", "bnb":
		if rawBool(q.Raw, "load_in_8bit") || bits == 8 {
			return WeightFormat{Name: "int8", Layout: LayoutInt8Row, Bits: 8, Source: int8Source}, true
		}
		kind := strings.ToLower(rawString(q.Raw, "bnb_4bit_quant_type", "fp4"))
		if kind != "nf4" {
			kind = "fp4" // transformers BitsAndBytesConfig default bnb_4bit_quant_type="fp4"
		}
		return bnb4Format(kind, rawBool(q.Raw, "bnb_4bit_use_double_quant")), true
	case "fp8", "fbgemm_fp8":
		return fp8CheckpointFormat(q, group), true
	case "mxfp4":
		return mxfp4Format(), true
	case "modelopt":
		switch strings.ToUpper(rawString(q.Raw, "quant_algo", "")) {
		case "FP8":
			return WeightFormat{Name: "fp8", Layout: LayoutFP8Tensor, Bits: 8, Source: fp8TensorSource}, true
		case "NVFP4":
			return nvfp4Format(), true
		}
	case "compressed-tensors":
		if f, ok := compressedTensorsFormat(q.Raw); ok {
			return f, true
		}
	}
	if bits > 0 && bits < 16 {
		return WeightFormat{Name: fmt.Sprintf("%s-%dbit", q.Method, bits), Layout: LayoutPlain, Bits: bits,
			Source: "unknown quant_method: plain packed bits, scales not counted"}, false
	}
	return WeightFormat{Name: q.Method + "-unquantized", Layout: LayoutPlain, Bits: 16,
		Source: "unknown quant_method: counted unquantized"}, false
}

// fp8CheckpointFormat is block-scaled fp8 when weight_block_size is set
// (DeepSeek-V3), per-channel for fbgemm_fp8, per-tensor otherwise.
func fp8CheckpointFormat(q *model.Quantization, group int) WeightFormat {
	if blk := rawInts(q.Raw, "weight_block_size"); len(blk) > 0 && blk[0] > 0 {
		group = blk[0]
	}
	if group > 0 {
		return WeightFormat{Name: fmt.Sprintf("fp8-block%d", group), Layout: LayoutFP8Block, Bits: 8, Group: group, Source: fp8BlockSource}
	}
	if strings.EqualFold(q.Method, "fbgemm_fp8") {
		return WeightFormat{Name: "fp8-channel", Layout: LayoutInt8Row, Bits: 8,
			Source: "huggingface/transformers:src/transformers/integrations/fbgemm_fp8.py (fp8 weight + fp32 per-row weight_scale)"}
	}
	return WeightFormat{Name: "fp8", Layout: LayoutFP8Tensor, Bits: 8, Source: fp8TensorSource}
}

// compressedTensorsFormat reads the weights scheme of the first
// config_groups entry of a compressed-tensors config
// (neuralmagic/compressed-tensors: QuantizationArgs num_bits, type,
// strategy, group_size).
func compressedTensorsFormat(raw map[string]any) (WeightFormat, bool) {
	groups, _ := raw["config_groups"].(map[string]any)
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		w, _ := gm["weights"].(map[string]any)
		if w == nil {
			continue
		}
		bits := rawInt(w, "num_bits", 0)
		typ := strings.ToLower(rawString(w, "type", "int"))
		strategy := strings.ToLower(rawString(w, "strategy", "tensor"))
		group := rawInt(w, "group_size", 0)
		switch {
		case bits == 8 && typ == "float" && strategy == "block":
			blk := rawInts(w, "block_structure")
			edge := defaultFP8Blk
			if len(blk) > 0 && blk[0] > 0 {
				edge = blk[0]
			}
			return WeightFormat{Name: fmt.Sprintf("fp8-block%d", edge), Layout: LayoutFP8Block, Bits: 8, Group: edge, Source: fp8BlockSource}, true
		case bits == 8 && strategy == "channel":
			return WeightFormat{Name: "w8-channel", Layout: LayoutInt8Row, Bits: 8, Source: compressedSource}, true
		case bits == 8:
			return WeightFormat{Name: "w8-tensor", Layout: LayoutFP8Tensor, Bits: 8, Source: compressedSource}, true
		case bits == 4 && typ == "float":
			return nvfp4Format(), true
		case bits > 0 && bits < 8:
			return WeightFormat{Name: fmt.Sprintf("w%da16-g%d", bits, orGroup(group)), Layout: LayoutAWQ, Bits: bits,
				Group: orGroup(group), Source: compressedSource + " (pack-quantized int32 weights, 16-bit scales and zero points per group)"}, true
		}
	}
	return WeightFormat{}, false
}

const compressedSource = "neuralmagic/compressed-tensors: src/compressed_tensors/quantization/quant_args.py"

// skipModules collects the modules a checkpoint keeps unquantized, from
// every key the quantizers use for it.
func skipModules(q *model.Quantization) []string {
	out := append([]string(nil), q.SkipModules...)
	for _, key := range []string{"modules_to_not_convert", "llm_int8_skip_modules", "ignore", "exclude_modules"} {
		out = append(out, rawStrings(q.Raw, key)...)
	}
	return out
}

// doubleQuant is the job's --double-quant, default off as in
// transformers' BitsAndBytesConfig (bnb_4bit_use_double_quant=False).
func doubleQuant(job Job) bool { return job.DoubleQuant != nil && *job.DoubleQuant }

// floatDtypeOr parses the float dtype setting key, returning def when it
// is empty.
func floatDtypeOr(s string, def DType, key string) (DType, error) {
	if strings.TrimSpace(s) == "" {
		return def, nil
	}
	d, err := ParseDType(s)
	if err != nil {
		return DType{}, FieldErrorf(key, "{"+key+"}: %w", err)
	}
	if !d.Float {
		return DType{}, FieldErrorf(key, "{"+key+"=%q}: want a float dtype (fp32, bf16, fp16)", s)
	}
	return d, nil
}

// quantizes reports whether mod's weight is stored in the quantized format:
// Linear layers of the text and encoder stacks, except the ones that stay
// in full precision in every quantizer (embeddings, lm_head — kept by
// transformers' get_keys_to_not_convert —, norms and MoE routers) and the
// modules the checkpoint lists as not converted. Vision towers stay
// unquantized (the released AWQ/GPTQ/FP8 VLM checkpoints skip them).
func (p weightPlan) quantizes(mod model.Module) bool {
	if !p.quant.Quantized() && p.quant.Bits == int(p.rest.Bits) {
		return false
	}
	switch mod.Component {
	case "embedding", "lm_head", "norm", "final_norm", "router":
		return false
	}
	if mod.Stack != "" && mod.Stack != "text" && mod.Stack != "encoder" {
		return false
	}
	if (mod.In <= 0 || mod.Out <= 0) && !mod.Expert {
		return false // not a Linear (norm, conv, bare parameter)
	}
	for _, pat := range p.skip {
		if moduleMatches(mod.Name, pat) {
			return false
		}
	}
	return true
}

// moduleBytes is the storage of all instances of mod, unsharded: each
// instance's weight laid out by the format (rounded to bytes per tensor),
// its bias in the rest dtype.
func (p weightPlan) moduleBytes(mod model.Module) units.Bytes {
	if p.gguf != nil {
		return p.gguf.moduleBytes(mod)
	}
	inst := int64(max(mod.Instances, 1))
	each := mod.Each
	if each <= 0 && mod.Params > 0 {
		each = ceilDiv(mod.Params, inst)
	}
	if !p.quantizes(mod) {
		return units.Bytes(units.MulInt(int64(p.rest.Bytes(each)), inst))
	}
	in, out := int64(mod.In), int64(mod.Out)
	w := units.MulInt(in, out)
	if w <= 0 || w > each {
		in, out, w = 0, 0, each
	}
	one := units.Add(p.quant.TensorBytes(in, out, w), p.rest.Bytes(each-w))
	return units.Bytes(units.MulInt(int64(one), inst))
}

// moduleMatches reports whether a module_to_not_convert pattern names the
// module or one of its parents. Both are dotted paths; "*" in the pattern
// matches any one segment, "*" in the module name (the repeated layer or
// expert index) matches a numeric segment, and a pattern may match
// anywhere in the path ("lm_head", "self_attn", "model.layers.*.mlp.router").
func moduleMatches(name, pattern string) bool {
	pattern = strings.TrimSpace(pattern)
	if pattern == "" {
		return false
	}
	ns, ps := strings.Split(name, "."), strings.Split(pattern, ".")
	for start := 0; start+len(ps) <= len(ns); start++ {
		ok := true
		for i, seg := range ps {
			if n := ns[start+i]; seg != n && seg != "*" && (n != "*" || !isIndex(seg)) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func orInt(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// orGroup maps group_size 0 to the default 128; -1 (one group per input
// row) stays -1 and is resolved per tensor.
func orGroup(g int) int {
	if g == 0 {
		return defaultGroup
	}
	return g
}

// isIndex reports whether a path segment is a layer or expert index.
func isIndex(seg string) bool {
	if seg == "" {
		return false
	}
	for _, r := range seg {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
