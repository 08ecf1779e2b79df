package memory

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/units"
)

// TestLoadingPaths checks the loading phase of each stack against the
// arithmetic of its source, on Llama-2-7B (6,738,415,616 parameters,
// fp16 checkpoint, a 32000 × 4096 embedding as its largest tensor and its
// largest module; FSDP's root unit — embedding, final norm and head —
// of 262,148,096 parameters is larger than a decoder layer's 202,383,360).
func TestLoadingPaths(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	const (
		params = 6738415616
		emb    = 32000 * 4096
		root   = 2*emb + 4096
	)
	yes, no := true, false
	b := func(x float64) units.Bytes { return units.FromFloat(x) }
	for _, tc := range []struct {
		name           string
		job            Job
		path           string
		alloc          func(r Result) units.Bytes // the GPU's tensors while loading
		proc, node     units.Bytes                // host RAM per process and per node
		allocAboveStep bool                       // the loading peak is above the training weights' row
	}{
		{name: "from_pretrained then .to(cuda)", job: Job{SeqLen: 512}, path: LoadHostThenGPU,
			alloc: weightsRow, proc: b(2 * params), node: b(2 * params)},
		{name: "low_cpu_mem_usage=false", job: Job{SeqLen: 512, LowCPUMemUsage: &no}, path: LoadHostThenGPU,
			alloc: weightsRow, proc: b(4 * params), node: b(4 * params)},
		{name: "device_map", job: Job{SeqLen: 512, DeviceMap: "auto"}, path: LoadDeviceMap,
			alloc: weightsRow, proc: b(2 * emb), node: b(2 * emb)},
		{name: "QLoRA quantizes on load", job: Job{SeqLen: 512, Method: "qlora"}, path: LoadQuantized,
			alloc: func(r Result) units.Bytes { return weightsRow(r) + b(2*emb) }, proc: b(2 * emb), node: b(2 * emb), allocAboveStep: true},
		{name: "DDP: every process builds the model", job: Job{SeqLen: 512, NumGPUs: 4}, path: LoadHostThenGPU,
			alloc: weightsRow, proc: b(2 * params), node: b(4 * 2 * params)},
		{name: "ZeRO-3 under zero.Init", job: Job{SeqLen: 512, Engine: "deepspeed", ZeRO: 3, NumGPUs: 8}, path: LoadZeroInit,
			alloc: func(r Result) units.Bytes { return b(2*params/8.0 + 2*emb) },
			proc:  b(2 * params), node: b(8 * 2 * params), allocAboveStep: true},
		{name: "ZeRO-3 without zero.Init", job: Job{SeqLen: 512, Engine: "deepspeed", ZeRO: 3, NumGPUs: 8, ZeroInit: &no}, path: LoadNoZeroInit,
			alloc: func(r Result) units.Bytes { return b(2 * params) }, proc: b(2 * params), node: b(8 * 2 * params), allocAboveStep: true},
		{name: "FSDP, every rank reads", job: Job{SeqLen: 512, Engine: "fsdp", NumGPUs: 8, MasterWeights: "none"}, path: LoadFSDP,
			alloc: func(r Result) units.Bytes { return weightsRow(r) + b(2*root) }, proc: b(2 * params), node: b(8 * 2 * params), allocAboveStep: true},
		{name: "FSDP cpu_ram_efficient_loading", job: Job{SeqLen: 512, Engine: "fsdp", NumGPUs: 8, MasterWeights: "none", CPURAMEfficientLoading: &yes},
			path: LoadFSDPRank0, alloc: func(r Result) units.Bytes { return weightsRow(r) + b(2*root) }, proc: b(2 * params), node: b(2 * params), allocAboveStep: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := estimateOK(t, m, tc.job)
			l := r.Loading
			if l == nil {
				t.Fatal("no loading phase")
			}
			if l.Path != tc.path {
				t.Errorf("path %q, want %q", l.Path, tc.path)
			}
			if want := tc.alloc(r); !near(l.AllocatedBytes, want) {
				t.Errorf("GPU while loading %d, want %d", l.AllocatedBytes, want)
			}
			if l.DeviceBytes != l.AllocatedBytes+row(r, "cuda_context")+row(r, "misc") {
				t.Errorf("device %d ≠ allocated %d + CUDA context + misc", l.DeviceBytes, l.AllocatedBytes)
			}
			if !near(l.HostProcessBytes, tc.proc) || !near(l.HostBytes, tc.node) {
				t.Errorf("host %d per process, %d per node; want %d, %d", l.HostProcessBytes, l.HostBytes, tc.proc, tc.node)
			}
			if got := l.AllocatedBytes > weightsRow(r); got != tc.allocAboveStep {
				t.Errorf("loading %d above the training weights %d: %v, want %v", l.AllocatedBytes, weightsRow(r), got, tc.allocAboveStep)
			}
			if l.Formula == "" || l.Source == "" {
				t.Errorf("formula %q, source %q: want both", l.Formula, l.Source)
			}
		})
	}
}

// row returns the component name at any level, or 0.
func row(r Result, name string) units.Bytes {
	for _, c := range r.PerGPU.Components {
		if c.Name == name {
			return c.Bytes
		}
	}
	return 0
}

// weightsRow is the weights row of the training breakdown.
func weightsRow(r Result) units.Bytes { return part(r, "weights") }

// near is true when a and b differ by at most a few bytes of rounding.
func near(a, b units.Bytes) bool { return a-b <= 4 && b-a <= 4 }

// TestLoadingZeroInitWithoutIsTheLargerPeak checks the mechanism users
// run out of memory on: a 70B model under ZeRO-3 fits eight 80 GB GPUs
// when built under zero.Init, and needs the whole model on every GPU
// while loading without it.
func TestLoadingZeroInitWithoutIsTheLargerPeak(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-70b-hf")
	no := false
	with := estimateOK(t, m, Job{SeqLen: 2048, Engine: "deepspeed", ZeRO: 3, NumGPUs: 8, GradCheckpoint: "full"})
	without := estimateOK(t, m, Job{SeqLen: 2048, Engine: "deepspeed", ZeRO: 3, NumGPUs: 8, GradCheckpoint: "full", ZeroInit: &no})
	if with.PerGPU.DevicePeakBytes != without.PerGPU.DevicePeakBytes {
		t.Errorf("zero_init changed the training peak: %d vs %d", with.PerGPU.DevicePeakBytes, without.PerGPU.DevicePeakBytes)
	}
	if with.Loading.DeviceBytes >= 80*units.GB || without.Loading.DeviceBytes <= 120*units.GiB {
		t.Errorf("loading with zero.Init %s, without %s: want under 80 GB and over 120 GiB (the whole bf16 model)",
			with.Loading.DeviceBytes, without.Loading.DeviceBytes)
	}
	if !with.Assumed.Has("zero_init") || without.Assumed.Has("zero_init") || *with.Job.ZeroInit != true {
		t.Errorf("zero_init: assumed %v / %v", with.Assumed.Keys(), without.Assumed.Keys())
	}
}

// TestLoadingSwitchesValidated checks the loading switches: a bad
// device_map is an error naming the key, and a switch the engine ignores
// draws a warning.
func TestLoadingSwitchesValidated(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	_, err := Estimate(m, Job{DeviceMap: "everywhere"})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Key != "device_map" || !strings.Contains(err.Error(), "everywhere") {
		t.Errorf("bad device_map: %v", err)
	}
	yes := true
	for _, tc := range []struct {
		job  Job
		warn string
	}{
		{Job{SeqLen: 512, ZeroInit: &yes}, "zero_init applies to DeepSpeed ZeRO-3 only"},
		{Job{SeqLen: 512, CPURAMEfficientLoading: &yes}, "cpu_ram_efficient_loading applies to FSDP only"},
		{Job{SeqLen: 512, Engine: "deepspeed", ZeRO: 3, NumGPUs: 2, DeviceMap: "auto"}, "device_map is not used"},
	} {
		r := estimateOK(t, m, tc.job)
		if !strings.Contains(strings.Join(r.Warnings, "\n"), tc.warn) {
			t.Errorf("%+v: warnings %q lack %q", tc.job, r.Warnings, tc.warn)
		}
	}
}

// FuzzLoadingSwitches feeds arbitrary device_map and decide_on values
// through an estimate: each is accepted, or refused with an error about
// its own key; an accepted one resolves to a job that estimates the same.
func FuzzLoadingSwitches(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"auto", "point"}, {"none", "upper"}, {"cuda:1", "band"}, {"7", "Expected"}, {"everywhere", "median"}, {"\x00", "\xff"}} {
		f.Add(s[0], s[1], true)
	}
	m := catalogModel(f, "Qwen/Qwen2.5-0.5B")
	f.Fuzz(func(t *testing.T, deviceMap, decide string, quantized bool) {
		job := Job{SeqLen: 128, DeviceMap: deviceMap, DecideOn: decide, GPUMemory: 24 * units.GiB}
		if quantized {
			job.Method = "qlora"
		}
		r, err := Estimate(m, job)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || (fe.Key != "device_map" && fe.Key != "decide_on") {
				t.Fatalf("device_map %q decide_on %q: %v, want an error about one of them", deviceMap, decide, err)
			}
			return
		}
		if d, err := ParseDecideOn(r.Job.DecideOn); err != nil || r.Loading == nil {
			t.Fatalf("resolved decide_on %q (%v), loading %v", r.Job.DecideOn, err, r.Loading)
		} else if d != DecideUpper && d != DecidePoint {
			t.Fatalf("decision %q", d)
		}
		r2, err := Estimate(m, r.Job)
		if err != nil || r2.Loading == nil || *r2.Loading != *r.Loading || r2.PerGPU.DevicePeakBytes != r.PerGPU.DevicePeakBytes {
			t.Fatalf("resolved job %+v: %v", r.Job, err)
		}
	})
}
