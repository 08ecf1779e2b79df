package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// component returns the bytes of the named component at level.
func component(r memory.Result, name, level string) (units.Bytes, bool) {
	for _, c := range r.PerGPU.Components {
		if c.Name == name && c.Level == level {
			return c.Bytes, true
		}
	}
	return 0, false
}

// TestEstimateGPUFromCatalog checks that --gpu reaches the estimator
// through the catalog: boards the estimator has no table for are known,
// with their compute capability (workspace) and CUDA total (capacity).
func TestEstimateGPUFromCatalog(t *testing.T) {
	tests := []struct {
		gpu  string
		name string
		cc   int
		ws   units.Bytes
	}{
		{"MI300X", "MI300X", 0, 8*units.MiB + 128*units.KiB},
		{"h20", "H20", 90, 32 * units.MiB},
		{"GB200", "GB200", 100, 32 * units.MiB},
		{"a40", "A40", 86, 8*units.MiB + 128*units.KiB},
		{"NVIDIA H100 80GB HBM3", "H100-SXM", 90, 32 * units.MiB},
	}
	for _, tt := range tests {
		t.Run(tt.gpu, func(t *testing.T) {
			r := estimateJSON(t, "llama2-7b", "--seq-len", "512", "--gpu", tt.gpu)
			g, err := gpu.Lookup(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if r.Job.GPU != tt.name || r.Job.GPUComputeCapability != tt.cc || r.Job.GPUMemory != g.CUDATotal() {
				t.Errorf("job GPU %q cc %d memory %d, want %q %d %d", r.Job.GPU, r.Job.GPUComputeCapability, r.Job.GPUMemory, tt.name, tt.cc, g.CUDATotal())
			}
			if ws, _ := component(r, "workspace", "device"); ws != tt.ws {
				t.Errorf("workspace %d, want %d", ws, tt.ws)
			}
			for _, w := range r.Warnings {
				if strings.Contains(w, "gpu") && strings.Contains(w, tt.gpu) {
					t.Errorf("warning about a catalog GPU: %q", w)
				}
			}
		})
	}
	// --gpu-memory wins over the board's memory; the compute capability stays.
	r := estimateJSON(t, "llama2-7b", "--seq-len", "512", "--gpu", "h100", "--gpu-memory", "40GiB")
	if r.Job.GPUMemory != 40*units.GiB || r.Job.GPUComputeCapability != 90 {
		t.Errorf("--gpu h100 --gpu-memory 40GiB: memory %d cc %d", r.Job.GPUMemory, r.Job.GPUComputeCapability)
	}
	// Serving budgets from the catalog's CUDA total: no --gpu-memory needed for an MI300X.
	r = estimateJSON(t, "llama3-8b", "--mode", "serving", "--gpu", "mi300x", "--max-model-len", "4096")
	mi, _ := gpu.Lookup("MI300X")
	if r.Serving == nil || r.Serving.GPUMemoryBytes != mi.CUDATotal() {
		t.Errorf("serving on MI300X: %+v, want the catalog's %d", r.Serving, mi.CUDATotal())
	}
}

func TestEstimateGPUsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "site.yaml")
	site := "gpus:\n  - name: Lab-H\n    vendor: nvidia\n    memory: 60GiB\n    compute_capability: \"9.0\"\n    memory_source: our nodes\n"
	if err := os.WriteFile(path, []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	r := estimateJSON(t, "llama3-8b", "--mode", "serving", "--gpu", "lab-h", "--gpus-file", path, "--max-model-len", "4096")
	if r.Job.GPU != "Lab-H" || r.Job.GPUComputeCapability != 90 || r.Serving == nil || r.Serving.GPUMemoryBytes != 60*units.GiB {
		t.Errorf("user board: job %q cc %d, serving %+v", r.Job.GPU, r.Job.GPUComputeCapability, r.Serving)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpu", "voodoo5"}, "--gpu"},
		{[]string{"--gpu", "a100"}, "ambiguous"},
		{[]string{"--gpu", "lab-h"}, "unknown GPU"}, // not in the built-in catalog
		{[]string{"--gpu", "h100", "--gpus-file", filepath.Join(dir, "missing.yaml")}, "--gpus-file"},
	} {
		_, errOut, code := runCommand(t, append([]string{"estimate", "llama2-7b", "--seq-len", "512"}, tt.args...)...)
		if code != ExitUsage && code != ExitError || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error naming %q", tt.args, code, errOut, tt.want)
		}
	}
}
