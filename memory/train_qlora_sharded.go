package memory

import (
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/model"
)

// Sharded QLoRA: bitsandbytes 4-bit weights under FSDP or DeepSpeed
// ZeRO-3 (MODEL.md §6.2, §3.5).
//
// bitsandbytes stores a 4-bit weight as packed data in the dtype
// bnb_4bit_quant_storage names (uint8 by default; bitsandbytes ≥ 0.43.0,
// PR #970) and keeps its quantization constants (absmax, the double
// quantization's nested absmax and code) in a QuantState object attached
// to the parameter and to the module (bitsandbytes/nn/modules.py
// Params4bit, Linear4bit: "the quant state got lost when the parameter
// got converted. This happens for example for fsdp"). FSDP and ZeRO-3
// flatten and partition parameters only: with a float storage dtype the
// packed data is sharded and all-gathered still packed, while every rank
// keeps the whole QuantState of every layer. FSDP1 flattens a unit's
// parameters into one tensor and so needs one dtype in it
// (torch/distributed/fsdp/_flat_param.py _validate_tensors_to_flatten),
// hence the storage dtype must be the model's.
//
// TRL (0.8.0 on, PR #1416) recognises the sharded case by the 4-bit
// parameters sitting on the CPU or the meta device when the trainer is
// built (FSDP's cpu_ram_efficient_loading, ZeRO-3's zero.Init) and then
// skips prepare_model_for_kbit_training, so nothing is upcast to fp32
// (trl/trainer/sft_trainer.py is_sharded_qlora; trl/models/utils.py
// prepare_peft_model since 0.24), and (0.9.3 on, PR #1654) builds the
// adapters with get_peft_model(..., autocast_adapter_dtype=False), in
// the model dtype. The HF Trainer then sets FSDP's mixed precision to
// the storage dtype (transformers trainer.py _fsdp_qlora_plugin_updates:
// fsdp_plugin.set_mixed_precision(bnb_4bit_quant_storage, override=True)),
// and wraps each trainable adapter Linear as a unit of its own
// (peft/utils/other.py fsdp_auto_wrap_policy), so the decoder-layer units
// hold only frozen parameters.

// quantStorage names the bnb_4bit_quant_storage dtypes the job accepts.
const quantStorageNames = "uint8, bf16, fp16 or fp32"

// resolveShardedQLoRA reads QuantStorage and, for a QLoRA job whose
// engine shards parameters, applies what sharding the 4-bit weights
// changes: nothing upcast to fp32 (TRL's is_sharded_qlora), adapters in
// the model dtype, packed data sharded and gathered packed, constants
// kept whole on every rank.
func (s *setup) resolveShardedQLoRA() error {
	j := s.job
	store := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(j.QuantStorage), "torch."))
	bnb4 := s.method == MethodQLoRA && (s.weight.Name == "nf4" || s.weight.Name == "fp4")
	if store != "" && !bnb4 {
		s.warn(fmt.Sprintf("quant_storage=%s: the storage dtype of bitsandbytes 4-bit weights; the job quantizes none (method %s, dtype %s), so it changes nothing", j.QuantStorage, s.method, s.weight.Name))
		return nil
	}
	var stored *DType // nil: uint8
	switch store {
	case "", "uint8":
	default:
		d, err := lookupDType(store)
		if err != nil || !d.Float {
			return FieldErrorf("quant_storage", "{quant_storage}: want %s (bnb_4bit_quant_storage), got %q", quantStorageNames, j.QuantStorage)
		}
		stored = d
	}
	d := &s.dist
	sharded := bnb4 && !d.single && d.nd > 1 &&
		((s.isFSDP() && d.zero >= 2) || (d.engine == EngineDeepSpeed && d.zero == 3))
	if !sharded {
		return nil
	}
	if s.rules.has(ruleBnbNoQuantStorage) {
		return FieldErrorf("stack", "{method=qlora} with %s: bitsandbytes before 0.43.0 stores 4-bit weights only as uint8 (no bnb_4bit_quant_storage), which %s cannot shard with the model's float parameters; state bitsandbytes 0.43.0 or later in the {stack}", s.shardingName(), s.shardingName())
	}
	switch {
	case store == "":
		s.warn(fmt.Sprintf("quant_storage not given: assuming bnb_4bit_quant_storage %s, the compute dtype, which %s needs to shard the 4-bit weights (transformers' FSDP-QLoRA and DeepSpeed ZeRO-3 QLoRA guides)", s.compute.Name, s.shardingName()))
	case stored == nil || stored.Name != s.compute.Name:
		return FieldErrorf("quant_storage", "{quant_storage=%s} with %s: the packed 4-bit weights are sharded with the model's other parameters only when stored in the model's dtype (%s); set {quant_storage=%s}", j.QuantStorage, s.shardingName(), s.compute.Name, s.compute.Name)
	}
	s.shardedQ = true
	if s.framework != FrameworkHF {
		return nil
	}
	if s.rules.has(ruleTRLShardedQLoRAKbitPrep) {
		if s.dist.engine == EngineFSDP {
			return FieldErrorf("stack", "{method=qlora} with FSDP1 on TRL before 0.8.0: prepare_model_for_kbit_training upcasts the non-quantized parameters to fp32, which FSDP1 cannot flatten with the %s 4-bit storage; state TRL 0.8.0 or later in the {stack}", s.compute.Name)
		}
		return nil
	}
	s.kbitFP32 = false
	s.residual = s.compute.BytesPerElement()
	if strings.TrimSpace(j.AdapterDtype) == "" && !s.rules.has(ruleTRLShardedQLoRAFP32Adapters) {
		s.adapter = s.compute
	}
	return nil
}

// shardingName names the engine that shards the 4-bit weights.
func (s *setup) shardingName() string {
	if s.dist.engine == EngineDeepSpeed {
		return "DeepSpeed ZeRO-3"
	}
	if s.dist.engine == EngineFSDP2 {
		return "FSDP2"
	}
	return "FSDP"
}

// quantConstBytes is the part of a module's weight bytes that is
// bitsandbytes' quantization constants (the QuantState's absmax, nested
// absmax and code), which a sharded QLoRA job keeps whole on every rank;
// 0 for modules it does not quantize.
func (s *setup) quantConstBytes(mod *model.Module) float64 {
	if !s.quantizes(mod) {
		return 0
	}
	w := int64(mod.In) * int64(mod.Out)
	return float64(mod.Instances) * (float64(Bnb4BitBytes(w, s.double)) - float64(ceilDiv(w, 2)))
}

// quantizes reports whether the job's quantized base stores mod
// quantized: every Linear but the output head (HF keeps it, litgpt
// quantizes it too).
func (s *setup) quantizes(mod *model.Module) bool {
	return s.weight.Quantized && mod.In > 0 && mod.Out > 0 && (mod.Component != compLMHead || s.quantHead)
}

// storageElems is the number of elements of the compute dtype one
// instance of mod occupies when a sharded engine gathers it: its
// parameter count, or for a 4-bit Linear of a sharded QLoRA job its
// packed data in the storage dtype (bitsandbytes quantize_4bit with
// quant_storage: ⌈n/2⌉ bytes) plus its bias, which FSDP and ZeRO-3
// all-gather in place of the weight; under float8 all-gather a float8
// Linear's weight in one byte per element.
func (s *setup) storageElems(mod *model.Module) float64 {
	if s.float8Gather && s.float8Linear(mod) {
		// FSDP2 gathers the float8 cast: one byte per weight element
		// (train_float8.go).
		w := int64(mod.In) * int64(mod.Out)
		return float64(w)/s.compute.BytesPerElement() + float64(mod.Each-w)
	}
	if !s.shardedQ || !s.quantizes(mod) {
		return float64(mod.Each)
	}
	w := int64(mod.In) * int64(mod.Out)
	return float64(ceilDiv(w, 2))/s.compute.BytesPerElement() + float64(mod.Each-w)
}
