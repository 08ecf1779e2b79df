package memory

import (
	"strings"
)

// resolvePrecision picks the precision recipe (MODEL.md §2.1):
//
//   - pure bf16/fp16: weights, grads and torch optimizer states in the
//     weight dtype, no master copy (torchtune, litgpt bf16-true, HF with a
//     bf16-loaded model);
//   - AMP: fp32 weights (which are the master) + torch.autocast to
//     ComputeDtype, with the autocast weight-cast cache (§2.2);
//   - mixed precision with a master copy (DeepSpeed, Megatron): bf16/fp16
//     params and grads + fp32 master weights + fp32 optimizer states;
//     Megatron accumulates gradients in fp32 (main_grad, §3.4: 18 B/param);
//   - pure fp32 (ComputeDtype fp32): everything fp32, no autocast;
//   - quantized base (QLoRA, 8-bit LoRA): frozen quantized Linears.
func (s *setup) resolvePrecision() error {
	j := s.job
	name := j.Dtype
	if name == "" {
		name = "bf16"
		if s.method == MethodQLoRA {
			name = "nf4"
		}
	}
	d, err := lookupDType(name)
	if err != nil {
		return FieldErrorf("dtype", "{dtype}: %w", err)
	}
	if s.method == MethodQLoRA && j.QuantType != "" {
		if d, err = lookupDType(j.QuantType); err != nil || (d.Name != "nf4" && d.Name != "fp4") {
			return FieldErrorf("quant_type", "{quant_type}: want nf4 or fp4, got %q", j.QuantType)
		}
	}
	s.weight = *d
	if err := s.checkMethodDtype(); err != nil {
		return err
	}
	if err := s.resolveCompute(); err != nil {
		return err
	}
	if err := s.resolveMaster(); err != nil {
		return err
	}
	s.gradFP32 = s.framework == FrameworkMegatron && s.method == MethodFull && !s.amp && s.weight.Bits < 32
	s.residual = s.compute.BytesPerElement()
	if s.amp {
		// Under autocast the residual stream stays fp32 (MODEL.md §4.3.3).
		s.residual = 4
	}
	if s.weight.Quantized {
		s.kbitFP32 = s.method == MethodQLoRA && s.framework == FrameworkHF
		if s.kbitFP32 {
			// prepare_model_for_kbit_training upcasts embeddings and the
			// residual stream to fp32 (MODEL.md §5.2).
			s.residual = 4
		}
		s.quantHead = s.framework == FrameworkLitGPT
		s.double = s.framework != FrameworkLitGPT
		if j.DoubleQuant != nil {
			s.double = *j.DoubleQuant
		}
	}
	return s.resolveAdapterDtype()
}

// checkMethodDtype rejects weight dtypes the method cannot train.
func (s *setup) checkMethodDtype() error {
	switch s.method {
	case MethodFull, MethodFrozen:
		if s.weight.Name == "fp8" {
			return FieldErrorf("dtype", "{dtype=fp8}: FP8 training (Transformer Engine, torchao float8) keeps bf16 or fp32 weights and casts to fp8 for the matmuls; pass {dtype=bf16} with {float8=tensorwise} or rowwise (torchao Float8Linear)")
		}
		if s.weight.Quantized {
			return FieldErrorf("dtype", "{dtype=%s}: quantized weights cannot be trained directly; use {method=qlora} (4-bit) or lora on the quantized base", s.weight.Name)
		}
	case MethodLoRA:
		if s.weight.Name == "nf4" || s.weight.Name == "fp4" {
			s.method = MethodQLoRA
		}
	case MethodQLoRA:
		if !s.weight.Quantized || s.weight.Bits > 4 {
			return FieldErrorf("dtype", "{dtype=%s}: QLoRA keeps the base in 4-bit (nf4 or fp4); use {method=lora} for a %s base", s.weight.Name, s.weight.Name)
		}
	}
	return nil
}

// resolveCompute sets the compute dtype and whether autocast is on.
func (s *setup) resolveCompute() error {
	c := s.job.ComputeDtype
	if c != "" {
		c = strings.TrimSpace(c)
	}
	if c == "" && s.weight.Name == "fp32" {
		c = "bf16"
	}
	if c == "" {
		s.compute = s.weight
		if s.weight.Quantized {
			s.compute = BF16
		}
		return nil
	}
	if strings.EqualFold(c, "none") {
		c = "fp32"
	}
	d, err := lookupDType(c)
	if err != nil || !d.Float {
		return FieldErrorf("compute_dtype", "{compute_dtype}: want fp32, bf16 or fp16, got %q", s.job.ComputeDtype)
	}
	s.compute = *d
	s.amp = s.weight.Name == "fp32" && d.Bits < 32
	return nil
}

// resolveMaster decides whether a separate fp32 master copy exists.
func (s *setup) resolveMaster() error {
	switch mw := fold(s.job.MasterWeights); mw {
	case "":
		mixed := s.framework == FrameworkMegatron || s.framework == FrameworkDeepSpeed
		if !mixed && s.job.Engine != "" {
			engine := strings.ToLower(s.job.Engine)
			mixed = engine == "deepspeed" || engine == "megatron"
		}
		s.master = mixed && s.weight.Float && s.weight.Bits < 32
	case "fp32", "float32":
		s.master = s.weight.Float && s.weight.Bits < 32
	case "none", "false", "no":
		s.master = false
	default:
		return FieldErrorf("master_weights", "{master_weights}: want fp32 or none, got %q", s.job.MasterWeights)
	}
	return nil
}

// resolveAdapterDtype sets the LoRA adapter dtype: PEFT upcasts fp16/bf16
// adapters to fp32 by default (get_peft_model autocast_adapter_dtype=True,
// MODEL.md §6.1); torchtune and litgpt keep them in the model dtype.
func (s *setup) resolveAdapterDtype() error {
	if a := s.job.AdapterDtype; a != "" {
		if a = strings.TrimSpace(a); a != "" {
			d, err := lookupDType(a)
			if err != nil || !d.Float {
				return FieldErrorf("adapter_dtype", "{adapter_dtype}: want fp32, bf16 or fp16, got %q", a)
			}
			s.adapter = *d
			return nil
		}
	}
	switch {
	case s.weight.Name == "fp32":
		s.adapter = FP32
	case s.framework == FrameworkHF:
		s.adapter = FP32
	default:
		s.adapter = s.compute
	}
	return nil
}

// stateElemBytes is the bytes per element of full-size optimizer states:
// the dtype of the parameters the optimizer steps (fp32 master when it
// exists), or fp32 for optimizers that always keep fp32 states.
func (s *setup) stateElemBytes(adapter bool) float64 {
	if s.opt.fp32 || s.master || s.opt.info.StateDtype == "fp32" {
		return 4
	}
	if adapter {
		return s.adapter.BytesPerElement()
	}
	return s.weight.BytesPerElement()
}

// gradElemBytes is the bytes per element of a trainable parameter's gradient.
func (s *setup) gradElemBytes(adapter bool) float64 {
	if adapter {
		return s.adapter.BytesPerElement()
	}
	if s.gradFP32 {
		return 4
	}
	return s.weight.BytesPerElement()
}
