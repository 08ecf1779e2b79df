package plan

import (
	"errors"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

func TestResolveGPU(t *testing.T) {
	site, err := gpu.Default().Merge([]gpu.GPU{{Name: "Lab-X", Vendor: "nvidia", Memory: 30 * units.GiB, ComputeCapability: "9.0"}})
	if err != nil {
		t.Fatal(err)
	}
	h100, _ := gpu.Lookup("H100-SXM")
	if h100.CUDAMemory == 0 || h100.CUDAMemory >= h100.Memory {
		t.Fatalf("H100-SXM CUDA total %d, want one below nvidia-smi's %d", h100.CUDAMemory, h100.Memory)
	}
	tests := []struct {
		name    string
		cat     *gpu.Catalog
		job     memory.Job
		want    memory.Job // GPU fields only
		wantErr error
	}{
		{"no gpu", nil, memory.Job{SeqLen: 8}, memory.Job{}, nil},
		{"hopper with a CUDA total", nil, memory.Job{GPU: "NVIDIA H100 80GB HBM3"},
			memory.Job{GPU: "H100-SXM", GPUMemory: h100.CUDAMemory, GPUComputeCapability: 90}, nil},
		{"board the estimator's old table lacked", nil, memory.Job{GPU: "mi300x"},
			memory.Job{GPU: "MI300X", GPUMemory: 205822885888}, nil},
		{"blackwell", nil, memory.Job{GPU: "b200"}, memory.Job{GPU: "B200", GPUMemory: 183359 * units.MiB, GPUComputeCapability: 100}, nil},
		{"--gpu-memory wins", nil, memory.Job{GPU: "h100", GPUMemory: 60 * units.GiB},
			memory.Job{GPU: "H100-SXM", GPUMemory: 60 * units.GiB, GPUComputeCapability: 90}, nil},
		{"user catalog", site, memory.Job{GPU: "lab-x"}, memory.Job{GPU: "Lab-X", GPUMemory: 30 * units.GiB, GPUComputeCapability: 90}, nil},
		{"user board not in the built-ins", nil, memory.Job{GPU: "lab-x"}, memory.Job{}, gpu.ErrUnknown},
		{"ambiguous", nil, memory.Job{GPU: "a100"}, memory.Job{}, gpu.ErrAmbiguous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, g, err := ResolveGPU(tt.cat, tt.job)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got.GPU != tt.want.GPU || got.GPUMemory != tt.want.GPUMemory || got.GPUComputeCapability != tt.want.GPUComputeCapability {
				t.Errorf("job GPU %q memory %d cc %d, want %q %d %d", got.GPU, got.GPUMemory, got.GPUComputeCapability,
					tt.want.GPU, tt.want.GPUMemory, tt.want.GPUComputeCapability)
			}
			if g.Name != tt.want.GPU || got.SeqLen != tt.job.SeqLen {
				t.Errorf("board %q, seq len %d: want %q and the job's other fields kept", g.Name, got.SeqLen, tt.want.GPU)
			}
		})
	}
}

func TestOnGPUWorkspace(t *testing.T) {
	// The board's compute capability reaches the estimator: sm90 and up
	// get PyTorch's larger cuBLAS workspace (MODEL.md §10), with no
	// warning, for boards the estimator has no table entry for.
	for _, tt := range []struct {
		name string
		ws   units.Bytes
	}{{"H20", 32 * units.MiB}, {"GB200", 32 * units.MiB}, {"A40", 8*units.MiB + 128*units.KiB}, {"MI300X", 8*units.MiB + 128*units.KiB}} {
		g, err := gpu.Lookup(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		o, err := memory.RuntimeOverheads(OnGPU(memory.Job{}, g))
		if err != nil || o.Workspace != tt.ws || o.Warning != "" {
			t.Errorf("%s: workspace %d, warning %q, err %v; want %d and no warning", tt.name, o.Workspace, o.Warning, err, tt.ws)
		}
	}
}
