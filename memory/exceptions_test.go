package memory

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// peakPart returns the bytes of the named component at r's peak.
func peakPart(r *Result, name string) units.Bytes {
	for _, c := range r.PerGPU.Components {
		if c.Name == name {
			return c.Bytes
		}
	}
	return 0
}

// hasNote reports whether r warns with the given prefix.
func hasNote(r *Result, prefix string) bool {
	for _, w := range r.Warnings {
		if strings.HasPrefix(w, prefix) {
			return true
		}
	}
	return false
}

// TestZeRO3AtMostZeRO2 states a rule and its exception. Rule: DeepSpeed
// ZeRO-3 needs no more memory per GPU than ZeRO-2 on the same job.
// Exception: ZeRO-3 allocates its gradient partitions and reduce bucket
// up front, live in every phase, and gathers the module in use plus the
// prefetch bucket; when sharding the weights saves less than that — over
// two GPUs, for models small next to those buffers — ZeRO-3 needs more.
// Then, and only then, the result says so; and the excess is never more
// than what ZeRO-3 adds (its gradients and engine buffers at its peak,
// with the allocator's fragmentation on them).
func TestZeRO3AtMostZeRO2(t *testing.T) {
	exceptions := 0
	for _, e := range model.Catalog() {
		m, err := model.Lookup(e.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, gpus := range []int{2, 4, 8} {
			for _, opt := range []string{"adamw_torch", "sgd", "adafactor"} {
				for _, seq := range []int{512, 4096} {
					j3 := Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: gpus, Optimizer: opt, SeqLen: seq, AllowLong: true}
					j2 := j3
					j2.ZeRO = 2
					r3, err3 := Estimate(m, j3)
					r2, err2 := Estimate(m, j2)
					if err3 != nil || err2 != nil {
						continue
					}
					name := fmt.Sprintf("%s gpus=%d %s seq=%d", e.ID, gpus, opt, seq)
					over := r3.PerGPU.DevicePeakBytes > r2.PerGPU.DevicePeakBytes
					if over != hasNote(&r3, "ZeRO-3 needs") {
						t.Errorf("%s: ZeRO-3 %d, ZeRO-2 %d bytes, but note %v: %q", name, r3.PerGPU.DevicePeakBytes, r2.PerGPU.DevicePeakBytes, !over, r3.Warnings)
					}
					if !over {
						continue
					}
					exceptions++
					if gpus > 2 {
						t.Errorf("%s: ZeRO-3 above ZeRO-2 on more than two GPUs", name)
					}
					added := peakPart(&r3, "gradients") + peakPart(&r3, "comm_buffers")
					if excess := r3.PerGPU.AllocatedPeakBytes - r2.PerGPU.AllocatedPeakBytes; excess > added {
						t.Errorf("%s: ZeRO-3 exceeds ZeRO-2 by %d allocated bytes, more than its gradients and buffers (%d)", name, excess, added)
					}
				}
			}
		}
	}
	if exceptions == 0 {
		t.Error("no exception found: the test no longer covers the note")
	}
}

// TestLoRAAtMostFull states a rule and its exceptions. Rule: LoRA needs
// no more memory than full fine-tuning of the same model and job.
// Exceptions: PEFT saves, per adapted module, its own copy of the
// module's input (cast to the adapters' fp32, or through dropout), while
// the frozen layer shares one; with many adapted modules and an optimizer
// of little state, those copies outweigh the gradients and states LoRA
// saves. And at a peak before backward, where full fine-tuning holds no
// gradients yet, LoRA's adapters (and their optimizer states) are extra.
// Then, and only then, the result says so; and the excess of allocated
// memory is no more than those causes: the adapters with their optimizer
// states, plus the saved activations LoRA holds beyond full
// fine-tuning's.
func TestLoRAAtMostFull(t *testing.T) {
	exceptions := 0
	for _, e := range model.Catalog() {
		m, err := model.Lookup(e.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, opt := range []string{"adamw_torch", "sgd", "adafactor"} {
			for _, drop := range []float64{0, 0.1} {
				for _, targets := range [][]string{nil, {"all-linear"}} {
					for _, ckpt := range []string{"", "full"} {
						full := Job{Optimizer: opt, SeqLen: 1024, MicroBatch: 2, GradCheckpoint: ckpt, AllowLong: true}
						lora := full
						lora.Method, lora.LoRADropout, lora.LoRATargets = MethodLoRA, drop, targets
						rf, errF := Estimate(m, full)
						rl, errL := Estimate(m, lora)
						if errF != nil || errL != nil {
							continue
						}
						name := fmt.Sprintf("%s %s dropout=%g targets=%v ckpt=%q", e.ID, opt, drop, targets, ckpt)
						over := rl.PerGPU.DevicePeakBytes > rf.PerGPU.DevicePeakBytes
						if over != hasNote(&rl, "LoRA needs") {
							t.Errorf("%s: LoRA %d, full %d bytes, but note %v: %q", name, rl.PerGPU.DevicePeakBytes, rf.PerGPU.DevicePeakBytes, !over, rl.Warnings)
						}
						if !over {
							continue
						}
						exceptions++
						acts := func(r *Result) units.Bytes {
							return peakPart(r, "activations") + peakPart(r, "encoder_activations")
						}
						adapters := peakPart(&rl, "adapter_weights") + peakPart(&rl, "optimizer_states")
						causes := adapters + max(acts(&rl)-acts(&rf), 0)
						if excess := rl.PerGPU.AllocatedPeakBytes - rf.PerGPU.AllocatedPeakBytes; excess > causes {
							t.Errorf("%s: LoRA exceeds full fine-tuning by %d allocated bytes, more than its adapters and extra activations (%d)", name, excess, causes)
						}
					}
				}
			}
		}
	}
	if exceptions == 0 {
		t.Error("no exception found: the test no longer covers the note")
	}
}
