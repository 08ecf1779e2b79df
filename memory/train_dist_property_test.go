package memory

import (
	"fmt"
	"testing"

	"github.com/gpumem/gpumem/units"
)

// TestShardDegreesNeverRaiseMemory: with everything else fixed, a larger
// data-parallel sharding group, tensor, pipeline, context or expert
// parallel degree never raises the per-GPU memory of the most loaded rank.
// From degree 2 on the device peak is compared too (going from 1 to 2
// adds a communicator).
func TestShardDegreesNeverRaiseMemory(t *testing.T) {
	dense := catalogModel(t, "meta-llama/Llama-3.1-70B")
	moe := catalogModel(t, "mistralai/Mixtral-8x7B-v0.1")
	base := Job{SeqLen: 4096, GradCheckpoint: "full", Optimizer: "adamw_torch_fused", GradAccum: 8}
	with := func(f func(*Job)) Job { j := base; f(&j); return j }
	tests := []struct {
		name    string
		job     Job
		moe     bool
		degrees []int
		set     func(j *Job, n int)
	}{
		{"zero1 dp", with(func(j *Job) { j.Engine, j.ZeRO = "deepspeed", 1 }), false, []int{1, 2, 4, 8, 64}, func(j *Job, n int) { j.NumGPUs = n }},
		{"zero2 dp", with(func(j *Job) { j.Engine, j.ZeRO = "deepspeed", 2 }), false, []int{1, 2, 4, 8, 64}, func(j *Job, n int) { j.NumGPUs = n }},
		{"zero3 dp", with(func(j *Job) { j.Engine, j.ZeRO = "deepspeed", 3 }), false, []int{1, 2, 4, 8, 64}, func(j *Job, n int) { j.NumGPUs = n }},
		{"fsdp dp", with(func(j *Job) { j.Engine = "fsdp" }), false, []int{1, 2, 8, 64, 512}, func(j *Job, n int) { j.NumGPUs = n }},
		{"fsdp2 dp", with(func(j *Job) { j.Engine, j.Framework = "fsdp2", "torchtitan" }), false, []int{1, 2, 8, 64}, func(j *Job, n int) { j.NumGPUs = n }},
		{"megatron tp", with(func(j *Job) { j.Engine, j.ZeRO, j.Framework, j.DP = "megatron", 1, "megatron", 8 }), false, []int{1, 2, 4, 8},
			func(j *Job, n int) { j.TP, j.NumGPUs = n, 8*n }},
		{"megatron tp+sp", with(func(j *Job) { j.Engine, j.Framework, j.DP, j.SP = "megatron", "megatron", 2, true }), false, []int{2, 4, 8},
			func(j *Job, n int) { j.TP, j.NumGPUs = n, 2*n }},
		{"megatron pp", with(func(j *Job) { j.Engine, j.Framework, j.DP, j.TP = "megatron", "megatron", 2, 8 }), false, []int{1, 2, 4, 8, 16},
			func(j *Job, n int) { j.PP, j.NumGPUs = n, 16*n }},
		{"fsdp2 cp", with(func(j *Job) { j.Engine, j.Framework, j.DP, j.SeqLen = "fsdp2", "torchtitan", 4, 32768 }), false, []int{1, 2, 4, 8},
			func(j *Job, n int) { j.CP, j.NumGPUs, j.AllowLong = n, 4*n, true }},
		{"megatron cp", with(func(j *Job) { j.Engine, j.Framework, j.DP, j.TP, j.SeqLen = "megatron", "megatron", 2, 8, 32768 }), false, []int{1, 2, 4},
			func(j *Job, n int) { j.CP, j.NumGPUs, j.AllowLong = n, 16*n, true }},
		{"ep", with(func(j *Job) { j.Engine, j.Framework, j.ZeRO, j.DP = "megatron", "megatron", 1, 8 }), true, []int{1, 2, 4, 8},
			func(j *Job, n int) { j.EP, j.NumGPUs = n, 8 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := dense
			if tt.moe {
				m = moe
			}
			prevAlloc, prevDevice := units.MaxBytes, units.MaxBytes
			for _, n := range tt.degrees {
				j := tt.job
				tt.set(&j, n)
				r := estimateOK(t, m, j)
				checkParts(t, r)
				a, d := r.PerGPU.AllocatedPeakBytes, r.PerGPU.DevicePeakBytes
				if a > prevAlloc {
					t.Errorf("degree %d: allocated %.2f GiB above %.2f GiB at the smaller degree", n, gib(a), gib(prevAlloc))
				}
				if n > 2 && d > prevDevice {
					t.Errorf("degree %d: device %.2f GiB above %.2f GiB at the smaller degree", n, gib(d), gib(prevDevice))
				}
				prevAlloc, prevDevice = a, d
			}
		})
	}
}

// modelStatesOf sums weights, master, gradients and optimizer state of a
// result at the step phase, where all of them are alive.
func modelStatesOf(t *testing.T, r Result) units.Bytes {
	t.Helper()
	var b units.Bytes
	for _, name := range []string{"weights", "adapter_weights", "master_weights", "gradients", "optimizer_states"} {
		b += part(r, name)
	}
	return b
}

// TestZeROStagesOrdered: ZeRO-3 <= ZeRO-2 <= ZeRO-1 <= ZeRO-0 in model
// states for every precision recipe and method, at every GPU count.
func TestZeROStagesOrdered(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	for _, base := range []Job{
		{Dtype: "bf16"},
		{Dtype: "fp16", Optimizer: "adamw_torch_fused"},
		{Dtype: "fp32", ComputeDtype: "bf16"},
		{Method: "lora", LoRATargets: []string{"all-linear"}},
		{Optimizer: "adamw_bnb_8bit"},
		{Dtype: "fp32", ComputeDtype: "fp32", Optimizer: "sgd_momentum"},
	} {
		for _, n := range []int{2, 8, 64} {
			prev := units.MaxBytes
			for zero := 0; zero <= 3; zero++ {
				j := base
				j.SeqLen, j.GradAccum, j.Engine, j.ZeRO, j.NumGPUs = 256, 2, "deepspeed", zero, n
				r := estimateOK(t, m, j)
				st := modelStatesOf(t, r)
				if st > prev {
					t.Errorf("%+v on %d GPUs: ZeRO-%d model states %.2f GiB above ZeRO-%d's %.2f GiB", base, n, zero, gib(st), zero-1, gib(prev))
				}
				prev = st
			}
		}
	}
}

// TestOffloadNeverRaisesGPU: offloading the optimizer or the parameters
// (CPU or NVMe) never raises any GPU peak, and what leaves the GPU shows
// up as host memory.
func TestOffloadNeverRaisesGPU(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-13b-hf")
	for _, engine := range []string{"deepspeed", "fsdp"} {
		for _, zero := range []int{1, 2, 3} {
			if engine == "fsdp" && zero != 3 {
				continue
			}
			base := Job{SeqLen: 2048, GradCheckpoint: "full", Engine: engine, ZeRO: zero, NumGPUs: 8, Nodes: 2}
			r0 := estimateOK(t, m, base)
			for _, off := range [][2]string{{"cpu", ""}, {"nvme", ""}, {"cpu", "cpu"}, {"nvme", "nvme"}, {"", "cpu"}} {
				if off[1] != "" && zero < 3 {
					continue
				}
				j := base
				j.OffloadOptimizer, j.OffloadParams = off[0], off[1]
				name := fmt.Sprintf("%s zero %d offload %v", engine, zero, off)
				r := estimateOK(t, m, j)
				checkParts(t, r)
				if r.PerGPU.AllocatedPeakBytes > r0.PerGPU.AllocatedPeakBytes || r.PerGPU.DevicePeakBytes > r0.PerGPU.DevicePeakBytes {
					t.Errorf("%s: GPU peak %.2f GiB above %.2f GiB without offload", name, gib(r.PerGPU.DevicePeakBytes), gib(r0.PerGPU.DevicePeakBytes))
				}
				if r.Host == nil || r.Host.CPUBytes+r.Host.NVMeBytes == 0 || r.Host.GPUsPerNode != 4 {
					t.Errorf("%s: host %+v, want the offloaded states of the node's 4 GPUs", name, r.Host)
				}
				if (off[0] == "nvme" || off[1] == "nvme") && r.Host != nil && r.Host.NVMeBytes == 0 {
					t.Errorf("%s: nothing on NVMe", name)
				}
			}
		}
	}
}

// FuzzEstimateDistributed throws layouts, engines, schedules and buffer
// sizes at the training model: it answers with an error or a result whose
// parts add up, never a panic, and every pipeline stage is accounted for.
func FuzzEstimateDistributed(f *testing.F) {
	m := catalogModel(f, "Qwen/Qwen3-30B-A3B")
	f.Add("deepspeed", 3, 16, 2, 1, 2, 1, 2, 0, "", "cpu", "cpu", int64(0), "full", 4)
	f.Add("megatron", 1, 64, 4, 4, 1, 4, 1, 2, "interleaved", "", "", int64(5e7), "selective", 8)
	f.Add("fsdp2", 0, 32, 1, 2, 4, 1, 1, 0, "gpipe", "", "", int64(1), "none", 2)
	f.Add("fsdp", 3, 8, 1, 1, 1, 1, 1, 0, "", "nvme", "nvme", int64(1e9), "full", 1)
	f.Add("ddp", 0, 3, 1, 3, 1, 1, 1, 0, "1f1b", "", "", int64(0), "every-2", 16)
	f.Fuzz(func(t *testing.T, engine string, zero, gpus, tp, pp, cp, ep, nodes, virtual int, schedule, offOpt, offParams string,
		bucket int64, ckpt string, accum int) {
		job := Job{SeqLen: 1024, Engine: engine, ZeRO: zero, NumGPUs: gpus, TP: tp, PP: pp, CP: cp, EP: ep, Nodes: nodes,
			VirtualStages: virtual, PipelineSchedule: schedule, OffloadOptimizer: offOpt, OffloadParams: offParams,
			ReduceBucketSize: bucket, PrefetchBucketSize: new(bucket), MaxLiveParameters: new(bucket), GradCheckpoint: ckpt, GradAccum: accum}
		if gpus > 4096 || tp > 64 || pp > 64 || cp > 64 || ep > 128 || nodes > 1024 || virtual > 64 || accum > 1024 {
			return // keep one run short; the bounds are not the model's
		}
		r, err := Estimate(m, job)
		if err != nil {
			if err.Error() == "" {
				t.Error("empty error")
			}
			return
		}
		checkParts(t, r)
		if r.Parallel != nil && r.Parallel.PP > 1 {
			layers := 0
			for _, st := range r.Stages {
				layers += st.Layers
				if st.InFlight < 1 {
					t.Errorf("stage %d: %.3g micro-batches in flight", st.Stage, st.InFlight)
				}
			}
			if layers != m.Text.Layers || len(r.Stages) != r.Parallel.PP {
				t.Errorf("%d stages hold %d layers, want %d stages and %d layers", len(r.Stages), layers, r.Parallel.PP, m.Text.Layers)
			}
		}
	})
}
