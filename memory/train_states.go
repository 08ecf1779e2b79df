package memory

import (
	"math"

	"github.com/gpumem/gpumem/model"
)

// rankStates is the model-state memory one rank holds, in bytes. It is
// the unit sharding divides: data-parallel engines (ZeRO, FSDP) will
// scale weights, master, grads and optimizer state by their group sizes
// and add their communication buffers; the single-GPU model leaves them whole.
type rankStates struct {
	weights float64 // base weights as held on the GPU (quantized or not)
	// weightsWhole is weights before data-parallel sharding (the rank's
	// tensor- and pipeline-parallel share): what DeepSpeed moves to the GPU
	// when ZeRO-3 did not partition the model as it was built.
	weightsWhole float64
	// weightsReplicated is the part of weights every rank keeps whole
	// when the parameters are sharded: the bitsandbytes quantization
	// constants of a sharded QLoRA job (resolveShardedQLoRA).
	weightsReplicated float64
	adapters          float64 // LoRA adapter weights (and LoRA-FA's frozen A)
	master            float64 // fp32 master copy of the trainable parameters
	grads             float64 // all gradients of trainable parameters
	gradsHead         float64 // produced first in backward (lm_head, final norm)
	gradsEmb          float64 // produced last in backward (input embedding)
	optim             optState
	castCache         float64 // AMP autocast weight copies (MODEL.md §2.2)
	castHead          float64 // the part of castCache belonging to lm_head
	dequant           float64 // QLoRA dequantized weight buffers (MODEL.md §6.2)
	hostCPU           float64 // states offloaded to host memory (this rank)
	hostNVMe          float64 // states offloaded to NVMe (this rank)
}

// modelStates computes weights, master copy, gradients, optimizer state
// and the precision-dependent weight copies.
func (s *setup) modelStates(p *trParams) (r rankStates) {
	whole := s.wholeDense()
	switch {
	case whole && !s.weight.Quantized:
		r.weights = float64(s.tab.total) * s.weight.BytesPerElement()
	case !s.weight.Quantized:
		// moduleWeightBytes of an unquantized model, without a call per module.
		wb := s.weight.BytesPerElement()
		for i := range s.m.Modules {
			r.weights += float64(s.m.Modules[i].Params) * wb * s.fracs[i]
		}
	default:
		for i := range s.m.Modules {
			mod := &s.m.Modules[i]
			r.weights += s.moduleWeightBytes(mod) * s.fracs[i]
			if s.shardedQ {
				r.weightsReplicated += s.quantConstBytes(mod) * s.fracs[i]
			}
		}
	}
	r.adapters, r.master, r.grads = p.adapterBytes, p.masterBytes, p.gradBytes
	if s.method == MethodLoRA || s.method == MethodQLoRA {
		r.adapters += s.frozenAdapterParams() * s.adapter.BytesPerElement()
	}
	if len(s.job.Trainable) > 0 && (s.method == MethodLoRA || s.method == MethodQLoRA) {
		// PEFT ModulesToSaveWrapper keeps the original module and a
		// trainable copy: the copy is counted with the adapters.
		for i := range s.m.Modules {
			mod := &s.m.Modules[i]
			if f := s.trainable.fraction(mod); f > 0 {
				r.adapters += f * s.fracs[i] * s.moduleWeightBytes(mod)
			}
		}
	}
	switch {
	case whole:
		gb := s.gradElemBytes(false)
		r.gradsHead, r.gradsEmb = s.tab.headParams*gb, s.tab.embParams*gb
	case s.method == MethodFull || s.method == MethodFrozen || len(s.job.Trainable) > 0:
		// The output head and final norm, and the text embedding (their
		// rows are marked in the model table).
		rows := s.tab.rows()
		for i := range s.m.Modules {
			row := &rows[i]
			if row.place != placeHead && row.place != placeEmbed {
				continue
			}
			mod := &s.m.Modules[i]
			f := s.trainable.fraction(mod)
			if f == 0 {
				continue
			}
			b := f * s.fracs[i] * float64(mod.Params) * s.gradElemBytes(false)
			if row.place == placeHead {
				r.gradsHead += b
			} else {
				r.gradsEmb += b
			}
		}
	}
	r.optim = s.optimizerState(p)
	if s.amp {
		r.castCache, r.castHead = s.castCacheBytes()
	}
	if s.method == MethodQLoRA {
		r.dequant = s.c[cDequantWorkspaceFactor] * p.maxLinear * s.compute.BytesPerElement() / float64(s.dist.tp)
	}
	if s.amp && !s.dist.single {
		r.castCache /= float64(s.dist.tp)
		r.castHead /= float64(s.dist.tp)
	}
	r.weightsWhole = r.weights
	r.hostCPU, r.hostNVMe = s.shardStates(&r, p)
	r.hostCPU += p.hostOpt
	return r
}

// moduleWeightBytes is one module's weights as held on the GPU: the
// weight dtype, or for a quantized base the quantized storage of Linear
// weights (bitsandbytes, GPTQ-style groups, fp8) and the compute dtype
// for everything else — fp32 after PEFT's prepare_model_for_kbit_training
// (MODEL.md §5.2, §6.2). HF keeps the output head unquantized
// (get_keys_to_not_convert); litgpt's bitsandbytes precision quantizes it.
func (s *setup) moduleWeightBytes(mod *model.Module) float64 {
	if !s.weight.Quantized {
		return float64(mod.Params) * s.weight.BytesPerElement()
	}
	rest := s.compute.BytesPerElement()
	if s.kbitFP32 {
		rest = 4
	}
	if !s.quantizes(mod) {
		return float64(mod.Params) * rest
	}
	w := int64(mod.In) * int64(mod.Out)
	bias := float64(mod.Each-w) * rest
	return float64(mod.Instances) * (quantizedLinearBytes(s.weight, w, mod.Out, mod.In, s.double) + bias)
}

// quantizedLinearBytes is the storage of one quantized Linear weight of
// w = in·out elements (MODEL.md §6.2): bitsandbytes 4-bit with block-64
// absmax (double-quantized or not), LLM.int8 with an fp32 scale per row,
// GPTQ/AWQ-style int4 with an fp16 scale and packed 4-bit zero per group
// of 128 inputs, fp8 with one fp32 scale, MXFP4 with one e8m0 scale per 32.
func quantizedLinearBytes(d DType, w int64, out, in int, double bool) float64 {
	switch d.Name {
	case "nf4", "fp4":
		return float64(Bnb4BitBytes(w, double))
	case "int8":
		return float64(w) + 4*float64(out)
	case "int4":
		groups := math.Ceil(float64(in) / 128)
		return float64(w)/2 + float64(out)*groups*2.5
	case "fp8":
		return float64(w) + 4
	case "mxfp4":
		return float64(w)/2 + float64(w)/32
	}
	return float64(d.Bytes(w))
}

// castCacheBytes is the AMP autocast copy of Linear weights in the compute
// dtype (2·P_linear, MODEL.md §2.2) for the layers that record a graph and
// the modules outside the layers, and the lm_head part of it.
func (s *setup) castCacheBytes() (all, head float64) {
	L := s.m.Text.Layers
	for i := range s.m.Modules {
		mod := &s.m.Modules[i]
		if mod.In <= 0 || mod.Out <= 0 {
			continue
		}
		w := float64(mod.In) * float64(mod.Out) * float64(mod.Instances) * s.compute.BytesPerElement()
		switch {
		case mod.Stack == stackVision && !s.trainable.vision:
			continue
		case mod.Component == compLMHead:
			if !s.dist.last {
				continue
			}
			head += w
		case mod.Stack == stackText && mod.Layer >= 0 && mod.Layers > 0:
			lo := max(mod.Layer, s.trainable.lowest, s.dist.stageLo)
			hi := min(mod.Layer+mod.Layers, s.dist.stageHi) - 1
			if hi < lo || L == 0 {
				continue
			}
			w *= float64(hi-lo+1) / float64(mod.Layers)
		}
		all += w
	}
	return all, head
}
