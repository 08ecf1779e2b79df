package memory

import (
	"fmt"
	"testing"

	"github.com/gpumem/gpumem/units"
)

// propertyJobs is a spread of jobs the invariants are checked on.
func propertyJobs() []Job {
	no := false
	return []Job{
		{},
		{Dtype: "fp32"},
		{Dtype: "fp32", ComputeDtype: "fp32", Attention: "eager"},
		{Optimizer: "adamw_torch_fused", GradAccum: 4},
		{Optimizer: "paged_adamw_8bit", Method: "lora", LoRATargets: []string{"all-linear"}},
		{Method: "qlora", LoRADropout: 0.1, Software: []string{"bnb<0.43.2"}},
		{Method: "lora", PEFTVariant: "dora", Packed: &no},
		{Method: "frozen", Trainable: []string{"top:4"}},
		{Framework: "torchtune", FusedLoss: "chunked", Compile: true},
		{Framework: "litgpt", Method: "lora", LoRADropout: 0.05},
		{FusedLoss: "liger", Optimizer: "adafactor"},
		{Optimizer: "muon", Framework: "megatron", MasterWeights: "fp32"},
		{ActivationOffload: true, OptimizerInBwd: true, Framework: "torchtune"},
		{Software: []string{"torch1"}, Dtype: "fp16", ComputeDtype: "fp16"},
		{Engine: "deepspeed", ZeRO: 3, NumGPUs: 8, OffloadOptimizer: "cpu"},
		{Engine: "fsdp2", NumGPUs: 16, CP: 2, GradCheckpoint: "full"},
		{Engine: "fsdp", FSDPStrategy: "shard_grad_op", NumGPUs: 4, Method: "lora"},
		{NumGPUs: 4, GradAccum: 2},
		{Engine: "megatron", ZeRO: 1, NumGPUs: 8, TP: 2, PP: 2, SP: true, GradAccum: 8},
	}
}

var propertyModels = []string{"meta-llama/Llama-2-7b-hf", "Qwen/Qwen3-30B-A3B", "google-bert/bert-large-uncased", "deepseek-ai/DeepSeek-V2-Lite", "Qwen/Qwen2-VL-7B-Instruct", "google-t5/t5-base"}

// checkParts asserts the structural invariants of one result.
func checkParts(t *testing.T, r Result) {
	t.Helper()
	p := r.PerGPU
	var alloc, reserved, device units.Bytes
	for _, c := range p.Components {
		if c.Bytes < 0 {
			t.Errorf("%s negative: %d", c.Name, c.Bytes)
		}
		if c.Bytes > p.DevicePeakBytes {
			t.Errorf("%s (%d) exceeds the device peak %d", c.Name, c.Bytes, p.DevicePeakBytes)
		}
		switch c.Level {
		case "allocated":
			alloc = units.Add(alloc, c.Bytes)
		case "reserved":
			reserved = units.Add(reserved, c.Bytes)
		case "device":
			device = units.Add(device, c.Bytes)
		default:
			t.Errorf("%s has level %q", c.Name, c.Level)
		}
		if c.Formula == "" || c.Source == "" {
			t.Errorf("%s lacks a formula or source", c.Name)
		}
	}
	if alloc != p.AllocatedPeakBytes {
		t.Errorf("allocated parts sum to %d, peak is %d", alloc, p.AllocatedPeakBytes)
	}
	if units.Add(alloc, reserved) != p.ReservedPeakBytes {
		t.Errorf("allocated + reserved parts = %d, reserved peak %d", alloc+reserved, p.ReservedPeakBytes)
	}
	if units.Add(units.Add(alloc, reserved), device) != p.DevicePeakBytes {
		t.Errorf("all parts = %d, device peak %d", alloc+reserved+device, p.DevicePeakBytes)
	}
	if !(p.AllocatedPeakBytes <= p.ReservedPeakBytes && p.ReservedPeakBytes <= p.DevicePeakBytes) {
		t.Errorf("peaks out of order: %d %d %d", p.AllocatedPeakBytes, p.ReservedPeakBytes, p.DevicePeakBytes)
	}
	var maxPhase units.Bytes
	found := false
	for _, ph := range p.Phases {
		maxPhase = max(maxPhase, ph.Bytes)
		if ph.Name == p.PeakPhase {
			found = ph.Bytes == p.AllocatedPeakBytes
		}
	}
	if maxPhase != p.AllocatedPeakBytes || !found {
		t.Errorf("peak phase %s: allocated %d, largest phase %d", p.PeakPhase, p.AllocatedPeakBytes, maxPhase)
	}
}

func TestTrainingInvariants(t *testing.T) {
	for _, id := range propertyModels {
		m := catalogModel(t, id)
		for i, job := range propertyJobs() {
			t.Run(fmt.Sprintf("%s/%d", id, i), func(t *testing.T) {
				job.SeqLen, job.AllowLong = 512, true
				if job.Method == "frozen" && m.Text.Layers < 4 {
					job.Trainable = []string{"top:1"}
				}
				r, err := Estimate(m, job)
				if err != nil {
					// Some recipes do not apply to every model (e.g. LoRA
					// targets absent); they must say so, not panic.
					if job.Method == "" {
						t.Fatalf("full training failed: %v", err)
					}
					return
				}
				checkParts(t, r)
				base := r.PerGPU.AllocatedPeakBytes
				bigger := func(mut func(*Job), what string) {
					j := job
					mut(&j)
					r2, err := Estimate(m, j)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					if r2.PerGPU.AllocatedPeakBytes < base {
						t.Errorf("%s lowered the peak: %d < %d", what, r2.PerGPU.AllocatedPeakBytes, base)
					}
				}
				bigger(func(j *Job) { j.SeqLen *= 2 }, "doubling seq-len")
				bigger(func(j *Job) { j.MicroBatch = 3 }, "batch 3")
				if job.GradCheckpoint == "" {
					j := job
					j.GradCheckpoint = "full"
					// The one exception allowed: when the last layer's backward is
					// the peak, the checkpointed input of that layer stays alive
					// next to its recomputed activations (at most 4·h bytes per
					// token), a tensor the un-checkpointed layer does not keep.
					slack := units.Bytes(4 * m.Text.Hidden * j.SeqLen * max(j.MicroBatch, 1))
					if r2 := estimateOK(t, m, j); r2.PerGPU.AllocatedPeakBytes > base+slack {
						t.Errorf("checkpointing raised the peak: %d > %d", r2.PerGPU.AllocatedPeakBytes, base)
					}
				}
				if job.Attention != "eager" {
					j := job
					j.Attention = "eager"
					if r2 := estimateOK(t, m, j); r2.PerGPU.AllocatedPeakBytes < base {
						t.Errorf("eager below sdpa/flash: %d < %d", r2.PerGPU.AllocatedPeakBytes, base)
					}
				}
			})
		}
	}
}

func TestTrainingSaturates(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.1-405B")
	for _, job := range []Job{
		{SeqLen: 131072, MicroBatch: 1 << 20, Attention: "eager", Dtype: "fp32", AllowLong: true},
		{SeqLen: 131072, MicroBatch: 64, GradAccum: 1 << 30, Method: "lora", LoRARank: 128, AllowLong: true},
		{SeqLen: 1 << 30, MicroBatch: 1 << 30, AllowLong: true, Optimizer: "shampoo"},
	} {
		r := estimateOK(t, m, job)
		checkParts(t, r)
		if r.PerGPU.AllocatedPeakBytes <= 0 || r.PerGPU.DevicePeakBytes <= 0 {
			t.Errorf("non-positive peak for %+v: %+v", job, r.PerGPU)
		}
	}
}

func TestFlashNeverAboveEager(t *testing.T) {
	for _, id := range propertyModels {
		m := catalogModel(t, id)
		for _, s := range []int{128, 512, 2048} {
			flash := estimateOK(t, m, Job{SeqLen: s, Attention: "flash", AllowLong: true})
			eager := estimateOK(t, m, Job{SeqLen: s, Attention: "eager", AllowLong: true})
			if flash.PerGPU.AllocatedPeakBytes > eager.PerGPU.AllocatedPeakBytes {
				t.Errorf("%s s=%d: flash %d > eager %d", id, s, flash.PerGPU.AllocatedPeakBytes, eager.PerGPU.AllocatedPeakBytes)
			}
		}
	}
}

func BenchmarkEstimateTraining(b *testing.B) {
	m := catalogModel(b, "meta-llama/Llama-2-7b-hf")
	job := Job{SeqLen: 4096, MicroBatch: 2, GradCheckpoint: "full", Attention: "flash"}
	if _, err := Estimate(m, job); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Estimate(m, job); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzEstimateTraining(f *testing.F) {
	m := catalogModel(f, "HuggingFaceTB/SmolLM2-135M-Instruct")
	f.Add("bf16", "adamw_torch", "sdpa", "full", "", "hf", "lora", 16, 2, 1, 512, 0, 1, 0.0)
	f.Add("fp32", "adafactor", "eager", "every-3", "liger", "torchtune", "qlora", 8, 1, 4, 2048, 3, 8, 0.1)
	f.Add("nf4", "paged_adamw_8bit", "flash", "selective", "chunked", "litgpt", "frozen", 0, 4, 2, 128, 2, 2, 0.05)
	f.Add("int8", "muon", "eager", "none", "chunked-compiled", "megatron", "full", 64, 0, 0, 0, 1, 0, 0.0)
	f.Fuzz(func(t *testing.T, dtype, opt, attn, ckpt, loss, fw, method string, rank, batch, accum, seq, zero, gpus int, drop float64) {
		job := Job{Dtype: dtype, Optimizer: opt, Attention: attn, GradCheckpoint: ckpt, FusedLoss: loss, Framework: fw, Method: method,
			LoRARank: rank, MicroBatch: batch, GradAccum: accum, SeqLen: seq, LoRADropout: drop, AllowLong: true,
			Engine: "deepspeed", ZeRO: zero, NumGPUs: gpus, Trainable: []string{"top:2"}}
		if gpus == 0 {
			job.Engine = ""
		}
		r, err := Estimate(m, job)
		if err != nil {
			if err.Error() == "" {
				t.Error("empty error")
			}
			return
		}
		checkParts(t, r)
	})
}
