package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// Two rules users plan with hold for most jobs but not all, and the
// exceptions are the frameworks' real behaviour, not estimation error:
//
//   - DeepSpeed ZeRO-3 needs no more memory per GPU than ZeRO-2. ZeRO-3
//     also shards the weights, but it allocates its gradient partitions
//     and its reduce (IPG) bucket when the optimizer is built, so they
//     live through every phase where ZeRO-2 has no gradients before
//     backward (deepspeed/runtime/zero/stage3.py _setup_for_real_optimizer:
//     grad_partitions_flat_buffer, __ipg_bucket_flat_buffer), and it
//     gathers the module in use plus the prefetch bucket
//     (partitioned_param_coordinator.py fetch_sub_module). Over two GPUs
//     sharding the weights saves only half of them, which for a small
//     model is less than those buffers.
//   - LoRA needs no more memory than full fine-tuning. LoRA drops the
//     gradients and optimizer states of the frozen weights, but PEFT saves,
//     for each adapted module, its own copy of the module's input for
//     lora_A — cast to the adapters' dtype (fp32 by default), or passed
//     through dropout — where the frozen layer saves one input shared by
//     the projections that read it (huggingface/peft
//     src/peft/tuners/lora/layer.py Linear.forward; docs/MODEL.md
//     §4.3.6). With an optimizer of little state (SGD, Adafactor) and
//     many adapted modules, the copies outweigh what LoRA saves. And when
//     the peak comes before backward (the loss phase of a large
//     vocabulary), full fine-tuning holds no gradients yet: with an
//     optimizer of no state, LoRA's adapters are then all the difference.
//
// When a job is such an exception, its result says so, with the figure
// of the job the rule compares it with (exceptions_test.go states the
// rules and checks their exceptions over the catalog).

// noteExceptions adds a warning to r, the result of a training job on m,
// when the job needs more memory per GPU than the job a rule says bounds
// it. *twin is the Estimator of those jobs, made on first use (an
// Estimator keeps its own, so that it allocates nothing).
func noteExceptions(m *model.Model, job *Job, r *Result, twin **Estimator) {
	zero3 := r.Parallel != nil && r.Parallel.Engine == EngineDeepSpeed && r.Parallel.ZeRO == 3 && !offloaded(job.OffloadParams)
	lora := job.Method == MethodLoRA
	if !zero3 && !lora {
		return
	}
	if *twin == nil {
		*twin = NewEstimator(m)
	}
	e := *twin
	if zero3 {
		e.scratch = *job
		e.scratch.ZeRO = 2
		if p, err := e.Peak(&e.scratch); err == nil && p.DeviceBytes < r.PerGPU.DevicePeakBytes {
			r.Warnings = append(r.Warnings, fmt.Sprintf("ZeRO-3 needs %s more per GPU here than ZeRO-2 would (%s against %s): over %d GPUs, sharding the weights saves less than what ZeRO-3 adds, its gradient partitions and reduce bucket allocated up front and live in every phase and the gathered module plus prefetch bucket (deepspeed stage3.py _setup_for_real_optimizer, fetch_sub_module); ZeRO-2, or more GPUs, needs less",
				units.FormatIEC(r.PerGPU.DevicePeakBytes-p.DeviceBytes), units.FormatIEC(r.PerGPU.DevicePeakBytes), units.FormatIEC(p.DeviceBytes), r.Parallel.ShardGroup))
		}
	}
	if lora {
		e.scratch = *job
		t := &e.scratch
		t.Method = MethodFull
		t.LoRARank, t.LoRAAlpha, t.LoRATargets, t.LoRADropout = 0, 0, nil, 0
		t.PEFTVariant, t.AdapterDtype, t.Trainable, t.TrainableParams = "", "", nil, 0
		if p, err := e.Peak(t); err == nil && p.DeviceBytes < r.PerGPU.DevicePeakBytes {
			r.Warnings = append(r.Warnings, loraNote(r, p))
		}
	}
}

// loraNote says why LoRA (r) needs more than full fine-tuning (full).
// When what LoRA adds at its peak, its adapters and their optimizer
// states, covers the difference, the peak comes before full
// fine-tuning's gradients exist (the loss phase, with a large
// vocabulary); otherwise it is PEFT's per-module input copies.
func loraNote(r *Result, full Peaks) string {
	more := units.FormatIEC(r.PerGPU.DevicePeakBytes - full.DeviceBytes)
	lora, fft := units.FormatIEC(r.PerGPU.DevicePeakBytes), units.FormatIEC(full.DeviceBytes)
	var adapters units.Bytes
	for _, c := range r.PerGPU.Components {
		if c.Name == "adapter_weights" || c.Name == "optimizer_states" { // LoRA's optimizer states are the adapters'
			adapters = units.Add(adapters, c.Bytes)
		}
	}
	switch {
	case r.PerGPU.AllocatedPeakBytes-full.AllocatedBytes > adapters:
	case r.PerGPU.PeakPhase == PhaseForward || r.PerGPU.PeakPhase == PhaseLoss:
		return fmt.Sprintf("LoRA needs %s more per GPU here than full fine-tuning would (%s against %s): the peak comes in the %s phase, before backward, when full fine-tuning holds no gradients yet and its optimizer little or no state, so LoRA's adapters and their optimizer states come on top",
			more, lora, fft, r.PerGPU.PeakPhase)
	default:
		return fmt.Sprintf("LoRA needs %s more per GPU here than full fine-tuning would (%s against %s): its adapters and their optimizer states outweigh the gradients and optimizer states full fine-tuning adds at its peak",
			more, lora, fft)
	}
	return fmt.Sprintf("LoRA needs %s more per GPU here than full fine-tuning would (%s against %s): PEFT saves, for each adapted module, its own copy of the module's input for lora_A (cast to the adapters' dtype, or through dropout), and here those copies outweigh the gradients and optimizer states LoRA saves (peft tuners/lora/layer.py Linear.forward); fewer target modules, lora_dropout 0 or gradient checkpointing lower it",
		more, lora, fft)
}

// offloaded reports whether an offload setting moves something off the GPU.
func offloaded(device string) bool { return device != "" && device != "none" }
