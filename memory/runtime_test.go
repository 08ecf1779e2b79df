package memory

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/units"
)

func TestRuntimeOverheads(t *testing.T) {
	tests := []struct {
		name     string
		job      Job
		frag     float64
		ctx, ws  units.Bytes
		warnings bool
	}{
		{"training default", Job{}, 0.06, 500 * units.MiB, 8*units.MiB + 128*units.KiB, false},
		{"hopper workspace", Job{GPU: "H100-SXM", GPUComputeCapability: 90, GPUMemory: 80 * units.GiB}, 0.06, 500 * units.MiB, 32 * units.MiB, false},
		{"inference", Job{Mode: Inference, GPU: "A100-80GB", GPUComputeCapability: 80, GPUMemory: 80 * units.GiB}, 0.02, 500 * units.MiB, 8*units.MiB + 128*units.KiB, false},
		{"torch1", Job{Software: []string{"torch1"}, GPU: "V100-16GB", GPUComputeCapability: 70, GPUMemory: 16 * units.GiB}, 0.15, 1343 * units.MiB, 8*units.MiB + 128*units.KiB, false},
		{"override", Job{Constants: map[string]float64{"fragmentation": 0.1, "cuda_context_mib": 1000}}, 0.1, 1000 * units.MiB, 8*units.MiB + 128*units.KiB, false},
		{"unknown gpu", Job{GPU: "tpu"}, 0.06, 500 * units.MiB, 8*units.MiB + 128*units.KiB, true},
		{"compute capability 9.0", Job{GPU: "H20", GPUComputeCapability: 90, GPUMemory: 95 * units.GiB}, 0.06, 500 * units.MiB, 32 * units.MiB, false},
		{"compute capability wins over the name", Job{GPU: "H100-SXM", GPUComputeCapability: 80}, 0.06, 500 * units.MiB, 8*units.MiB + 128*units.KiB, false},
		{"non-NVIDIA board from the catalog", Job{GPU: "MI300X", GPUMemory: 192 * units.GiB}, 0.06, 500 * units.MiB, 8*units.MiB + 128*units.KiB, false},
		{"catalog board, name only", Job{GPU: "MI300X"}, 0.06, 500 * units.MiB, 8*units.MiB + 128*units.KiB, true},
		{"hopper by name only: no guess from the name", Job{GPU: "H100-SXM"}, 0.06, 500 * units.MiB, 8*units.MiB + 128*units.KiB, true},
		{"zero-3", Job{Engine: "deepspeed", ZeRO: 3}, 0.15, 500 * units.MiB, 8*units.MiB + 128*units.KiB, false},
		{"zero-2", Job{Engine: "deepspeed", ZeRO: 2}, 0.06, 500 * units.MiB, 8*units.MiB + 128*units.KiB, false},
		{"fsdp2", Job{Engine: "fsdp2"}, 0.15, 500 * units.MiB, 8*units.MiB + 128*units.KiB, false},
		{"fsdp shard_grad_op", Job{Engine: "fsdp", FSDPStrategy: "shard_grad_op"}, 0.06, 500 * units.MiB, 8*units.MiB + 128*units.KiB, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := RuntimeOverheads(tt.job)
			if err != nil {
				t.Fatal(err)
			}
			if o.Fragmentation != tt.frag || o.CUDAContext != tt.ctx || o.Workspace != tt.ws {
				t.Errorf("got frag %v ctx %d ws %d, want %v %d %d", o.Fragmentation, o.CUDAContext, o.Workspace, tt.frag, tt.ctx, tt.ws)
			}
			if got, ok := ConstantValue(tt.job.Constants, o.FragmentationName); ok != nil || got != o.Fragmentation {
				t.Errorf("FragmentationName %q = %v, fragmentation %v", o.FragmentationName, got, o.Fragmentation)
			}
			if (o.Warning != "") != tt.warnings {
				t.Errorf("warning %q, want present=%v", o.Warning, tt.warnings)
			}
			alloc := 10 * units.GiB
			res := o.Reserved(alloc)
			dev := o.Device(res)
			if res < alloc || dev < res {
				t.Errorf("peaks out of order: %d %d %d", alloc, res, dev)
			}
			var sum units.Bytes
			for _, c := range o.Components(alloc) {
				sum += c.Bytes
			}
			if sum != dev-alloc {
				t.Errorf("overhead rows sum to %d, want device-allocated %d", sum, dev-alloc)
			}
		})
	}
	if _, err := RuntimeOverheads(Job{Constants: map[string]float64{"fragmentaton": 0.1}}); err == nil || !strings.Contains(err.Error(), "fragmentaton") {
		t.Errorf("unknown constant: err = %v, want one naming it", err)
	}
	if o, _ := RuntimeOverheads(Job{}); o.Reserved(units.MaxBytes) != units.MaxBytes || o.Device(units.MaxBytes) != units.MaxBytes {
		t.Error("overheads must saturate")
	}
}

func TestJobGPUFacts(t *testing.T) {
	o, err := RuntimeOverheads(Job{GPU: "Gaudi3", GPUMemory: 128 * units.GiB, GPUComputeCapability: 0})
	if err != nil || o.GPU != (GPU{Name: "Gaudi3", Memory: 128 * units.GiB}) || o.Warning != "" {
		t.Errorf("overheads GPU %+v, warning %q, err %v; want the job's facts and no warning", o.GPU, o.Warning, err)
	}
	o, _ = RuntimeOverheads(Job{GPU: "Voodoo5"})
	if !strings.Contains(o.Warning, "Voodoo5") || !strings.Contains(o.Warning, "gpu_compute_capability") {
		t.Errorf("name-only warning %q, want it to name the GPU and the missing field", o.Warning)
	}
	for _, job := range []Job{{SeqLen: 512, GPU: "Voodoo5"}, {Mode: Inference, PromptLen: 100, GPU: "Voodoo5"}} {
		r, err := Estimate(testModel(llama2_7b), job)
		if err != nil || !strings.Contains(strings.Join(r.Warnings, "\n"), `gpu "Voodoo5"`) {
			t.Errorf("%s job naming an unseen GPU: warnings %q, err %v; want the GPU named", job.Mode, r.Warnings, err)
		}
	}
	for _, cc := range []int{-1, 200, 1 << 30} {
		if _, err := Estimate(testModel(llama2_7b), Job{SeqLen: 512, GPUComputeCapability: cc}); err == nil || !strings.Contains(err.Error(), "gpu_compute_capability") {
			t.Errorf("compute capability %d: err = %v, want one naming gpu_compute_capability", cc, err)
		}
	}
}

func TestOverheadsStreamCache(t *testing.T) {
	c, err := resolveConstants(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		job      Job
		wantFrag string
	}{
		{"fsdp2: the pools replace fragmentation_sharded", Job{Engine: "fsdp2"}, "fragmentation"},
		{"torch1 keeps its era constant", Job{Engine: "fsdp2", Software: []string{"torch1"}}, "fragmentation_torch1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := runtimeOverheads(&tt.job, &c)
			o.setStreamCache(3*float64(units.GiB), float64(units.GiB), 4*float64(units.GiB), &c)
			if o.FragmentationName != tt.wantFrag {
				t.Errorf("fragmentation %q, want %q", o.FragmentationName, tt.wantFrag)
			}
			alloc := 10 * units.GiB
			want := alloc + units.FromFloat(float64(alloc)*o.Fragmentation) + 3*units.GiB
			if got := o.Reserved(alloc); got != want {
				t.Errorf("reserved %d, want allocated + fragmentation + stream cache = %d", got, want)
			}
			rows := o.Components(alloc)
			if len(rows) != o.rowCount() {
				t.Errorf("%d rows, rowCount %d", len(rows), o.rowCount())
			}
			var sum, cache units.Bytes
			for _, r := range rows {
				sum += r.Bytes
				if r.Name == "stream_cache" {
					cache = r.Bytes
				}
			}
			if cache != 3*units.GiB {
				t.Errorf("stream_cache row %d, want 3 GiB", cache)
			}
			if dev := o.Device(o.Reserved(alloc)); sum != dev-alloc {
				t.Errorf("overhead rows sum to %d, want device-allocated %d", sum, dev-alloc)
			}
		})
	}
}

func TestReleaseCached(t *testing.T) {
	rows := func() []Component {
		return []Component{{Name: "weights", Bytes: 10, Level: "allocated"},
			{Name: "fragmentation", Bytes: 4, Level: "reserved"}, {Name: "stream_cache", Bytes: 6, Level: "reserved"}}
	}
	tests := []struct {
		cut, stream, frag, left units.Bytes
	}{
		{3, 3, 4, 0},  // idle stream pools go first
		{8, 0, 2, 0},  // then the compute stream's fragmentation
		{15, 0, 0, 5}, // never below zero; the rest is reported
		{0, 6, 4, 0},
	}
	for _, tt := range tests {
		c := rows()
		left := releaseCached(c, tt.cut)
		if c[2].Bytes != tt.stream || c[1].Bytes != tt.frag || left != tt.left || c[0].Bytes != 10 {
			t.Errorf("cut %d: stream %d frag %d left %d weights %d, want %d %d %d 10", tt.cut, c[2].Bytes, c[1].Bytes, left, c[0].Bytes, tt.stream, tt.frag, tt.left)
		}
	}
}

// TestOverheadRowTexts checks the formulas and sources of the overhead
// rows, with and without the job's inputs written in (--explain), on a
// lazy-loading and a torch 1.x stack, with stream pools and misc memory.
func TestOverheadRowTexts(t *testing.T) {
	c, err := resolveConstants(map[string]float64{"misc_overhead_mib": 100})
	if err != nil {
		t.Fatal(err)
	}
	const (
		lazySrc   = "MODEL.md §10: pytorch/pytorch PR #86509 (lazy module loading); constant cuda_context_mib"
		legacySrc = "MODEL.md §15.5/§15.16: torch 1.x eager module loading; constant cuda_context_eager_mib"
		fragSrc   = "constants fragmentation* (MODEL.md §10 PYTORCH_CUDA_ALLOC_CONF notes, §15.5); the allocator's arithmetic is the allocator_rounding, segment_slack and stream_cache rows"
		fragWhat  = "what the allocator leaves cached as the step's tensors come and go, not derived"
	)
	tests := []struct {
		name    string
		job     Job
		explain bool
		want    []string // name: formula | source, in row order
	}{
		{"templates", Job{}, false, []string{
			"fragmentation: allocated peak × fragmentation (" + fragWhat + ") | " + fragSrc,
			"stream_cache: " + streamCacheFormula + " | " + streamCacheSource,
			"segment_slack: " + segmentSlackFormula + " | " + segmentSlackSource,
			"cuda_context: cuda_context_mib | " + lazySrc,
			"workspace: one cuBLAS workspace for the compute stream (workspace_mib, workspace_sm90_mib) | pytorch/pytorch:aten/src/ATen/cuda/CublasHandlePool.cpp (MODEL.md §10)",
			"misc: misc_overhead_mib | constant misc_overhead_mib (calibration)",
		}},
		{"torch1 templates", Job{Software: []string{"torch1"}}, false, []string{
			"fragmentation: allocated peak × fragmentation (" + fragWhat + ") | " + fragSrc,
			"stream_cache: " + streamCacheFormula + " | " + streamCacheSource,
			"segment_slack: " + segmentSlackFormula + " | " + segmentSlackSource,
			"cuda_context: cuda_context_eager_mib | " + legacySrc,
			"workspace: one cuBLAS workspace for the compute stream (workspace_mib, workspace_sm90_mib) | pytorch/pytorch:aten/src/ATen/cuda/CublasHandlePool.cpp (MODEL.md §10)",
			"misc: misc_overhead_mib | constant misc_overhead_mib (calibration)",
		}},
		{"explained", Job{}, true, []string{
			"fragmentation: allocated peak 10.00 GiB × fragmentation 0.06 (fragmentation; " + fragWhat + ") | " + fragSrc,
			"stream_cache: all-gather pool 1.00 GiB + reduce-scatter pool 4.00 GiB − the part the allocated peak holds = 3.00 GiB | " + streamCacheSource,
			"segment_slack: " + segmentSlackFormula + " = 128.00 MiB | " + segmentSlackSource,
			"cuda_context: cuda_context_mib = 500.00 MiB | " + lazySrc,
			"workspace: one cuBLAS workspace for the compute stream = 8.12 MiB | pytorch/pytorch:aten/src/ATen/cuda/CublasHandlePool.cpp (MODEL.md §10)",
			"misc: misc_overhead_mib = 100.00 MiB | constant misc_overhead_mib (calibration)",
		}},
		{"torch1 explained", Job{Software: []string{"torch1"}}, true, []string{
			"fragmentation: allocated peak 10.00 GiB × fragmentation 0.15 (fragmentation_torch1; " + fragWhat + ") | " + fragSrc,
			"stream_cache: all-gather pool 1.00 GiB + reduce-scatter pool 4.00 GiB − the part the allocated peak holds = 3.00 GiB | " + streamCacheSource,
			"segment_slack: " + segmentSlackFormula + " = 128.00 MiB | " + segmentSlackSource,
			"cuda_context: cuda_context_eager_mib = 1.31 GiB | " + legacySrc,
			"workspace: one cuBLAS workspace for the compute stream = 8.12 MiB | pytorch/pytorch:aten/src/ATen/cuda/CublasHandlePool.cpp (MODEL.md §10)",
			"misc: misc_overhead_mib = 100.00 MiB | constant misc_overhead_mib (calibration)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := runtimeOverheads(&tt.job, &c)
			o.setStreamCache(3*float64(units.GiB), float64(units.GiB), 4*float64(units.GiB), &c)
			o.SegmentSlack = 128 * units.MiB
			var got []string
			for _, r := range o.appendRows(nil, 10*units.GiB, tt.explain) {
				got = append(got, r.Name+": "+r.Formula+" | "+r.Source)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestShardsParams checks which engine spellings count as sharding the
// parameters (fragmentation_sharded), including the canonical names the
// function answers without lower-casing.
func TestShardsParams(t *testing.T) {
	tests := []struct {
		job  Job
		want bool
	}{
		{Job{}, false},
		{Job{Engine: "ddp"}, false},
		{Job{Engine: "megatron", ZeRO: 3}, false},
		{Job{Engine: "Megatron"}, false},
		{Job{Engine: "deepspeed", ZeRO: 3}, true},
		{Job{Engine: "DeepSpeed", ZeRO: 3}, true},
		{Job{Engine: "deepspeed", ZeRO: 2}, false},
		{Job{Engine: "ds", ZeRO: 3}, true},
		{Job{Engine: "zero3", ZeRO: 3}, true},
		{Job{Engine: "fsdp"}, true},
		{Job{Engine: "FSDP2", FSDPStrategy: "HYBRID_SHARD"}, true},
		{Job{Engine: "fsdp", FSDPStrategy: "shard_grad_op"}, false},
		{Job{Engine: "fsdp", FSDPStrategy: "no_shard"}, false},
		{Job{Engine: "torchtitan"}, true},
		{Job{Engine: "fully_shard", FSDPStrategy: "full_shard"}, true},
	}
	for _, tt := range tests {
		if got := shardsParams(&tt.job); got != tt.want {
			t.Errorf("shardsParams(engine %q, zero %d, strategy %q) = %v, want %v", tt.job.Engine, tt.job.ZeRO, tt.job.FSDPStrategy, got, tt.want)
		}
	}
}
