package memory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// GPU is a GPU kind: its architecture generation (which selects library
// workspace sizes) and its memory.
type GPU struct {
	// Name is the canonical name, e.g. "H100-SXM".
	Name string `json:"name"`
	// Arch is the generation: volta, turing, ampere, ada, hopper, blackwell.
	Arch string `json:"arch"`
	// SM is the compute capability times ten (90 for Hopper).
	SM int `json:"sm"`
	// Memory is the usable memory torch.cuda.mem_get_info reports as total.
	Memory units.Bytes `json:"memory_bytes"`
}

// gpus is the GPU table. Memory is the nominal size; for the 80 GB parts
// torch reports 79.65 GiB (MODEL.md §10), for 40/48/24 GB parts the
// nominal GiB minus a few hundred MiB of ECC/reserved pages.
var gpus = []GPU{
	{Name: "V100-16GB", Arch: "volta", SM: 70, Memory: 16 * units.GiB},
	{Name: "V100-32GB", Arch: "volta", SM: 70, Memory: 32 * units.GiB},
	{Name: "T4", Arch: "turing", SM: 75, Memory: 15 * units.GiB},
	{Name: "A10G", Arch: "ampere", SM: 86, Memory: 22 * units.GiB},
	{Name: "A10", Arch: "ampere", SM: 86, Memory: 22 * units.GiB},
	{Name: "A100-40GB", Arch: "ampere", SM: 80, Memory: 40 * units.GiB},
	{Name: "A100-80GB", Arch: "ampere", SM: 80, Memory: 79*units.GiB + 650*units.MiB},
	{Name: "A6000", Arch: "ampere", SM: 86, Memory: 48 * units.GiB},
	{Name: "RTX3090", Arch: "ampere", SM: 86, Memory: 24 * units.GiB},
	{Name: "RTX4090", Arch: "ada", SM: 89, Memory: 24 * units.GiB},
	{Name: "L4", Arch: "ada", SM: 89, Memory: 22 * units.GiB},
	{Name: "L40S", Arch: "ada", SM: 89, Memory: 45 * units.GiB},
	{Name: "H100-SXM", Arch: "hopper", SM: 90, Memory: 79*units.GiB + 650*units.MiB},
	{Name: "H100-PCIe", Arch: "hopper", SM: 90, Memory: 79*units.GiB + 650*units.MiB},
	{Name: "H100-96GB", Arch: "hopper", SM: 90, Memory: 94 * units.GiB},
	{Name: "H200", Arch: "hopper", SM: 90, Memory: 140 * units.GiB},
	{Name: "B200", Arch: "blackwell", SM: 100, Memory: 178 * units.GiB},
	{Name: "RTX5090", Arch: "blackwell", SM: 120, Memory: 31 * units.GiB},
}

// gpuKeys maps normalised spellings to entries of gpus, most specific first.
var gpuKeys = []struct{ key, name string }{
	{"v10032", "V100-32GB"}, {"v100", "V100-16GB"}, {"t4", "T4"},
	{"a10g", "A10G"}, {"a100sxm480", "A100-80GB"}, {"a10080", "A100-80GB"}, {"a10040", "A100-40GB"}, {"a100", "A100-80GB"},
	{"a6000", "A6000"}, {"a10", "A10"}, {"3090", "RTX3090"}, {"4090", "RTX4090"},
	{"l40s", "L40S"}, {"l40", "L40S"}, {"l4", "L4"},
	{"h10096", "H100-96GB"}, {"h100pcie", "H100-PCIe"}, {"h100", "H100-SXM"}, {"h200", "H200"}, {"gh200", "H200"},
	{"b200", "B200"}, {"5090", "RTX5090"},
}

// GPUs lists the known GPU kinds.
func GPUs() []GPU { return slices.Clone(gpus) }

// LookupGPU finds a GPU kind by a loose name ("NVIDIA H100 80GB HBM3",
// "a100-40gb", "L40S"). It reports false for an unknown name.
func LookupGPU(name string) (GPU, bool) {
	if strings.TrimSpace(name) == "" {
		return GPU{}, false
	}
	n := normGPU(name)
	if n == "" {
		return GPU{}, false
	}
	for _, k := range gpuKeys {
		if strings.Contains(n, k.key) {
			for _, g := range gpus {
				if g.Name == k.name {
					return g, true
				}
			}
		}
	}
	return GPU{}, false
}

// normGPU lower-cases a GPU name and drops vendor words and separators.
func normGPU(s string) string {
	s = strings.ToLower(s)
	for _, w := range []string{"nvidia", "geforce", "tesla", "rtx", "hbm3", "hbm2e", "hbm2", "gb", " ", "-", "_"} {
		s = strings.ReplaceAll(s, w, "")
	}
	return s
}

// Overheads is the device memory of one process outside the live tensors
// that [Estimate] counts one by one: caching-allocator fragmentation, the
// CUDA context and library workspaces (MODEL.md §10).
type Overheads struct {
	// Fragmentation is the fraction reserved exceeds allocated by:
	// reserved = allocated × (1 + Fragmentation).
	Fragmentation float64 `json:"fragmentation"`
	// FragmentationName is the constant Fragmentation was read from
	// (fragmentation, fragmentation_inference, fragmentation_torch1,
	// fragmentation_sharded), for calibration.
	FragmentationName string `json:"fragmentation_name"`
	// CUDAContext is the CUDA context (kernels, driver state), outside the allocator.
	CUDAContext units.Bytes `json:"cuda_context_bytes"`
	// Workspace is the cuBLAS/cuBLASLt workspace of the compute stream.
	Workspace units.Bytes `json:"workspace_bytes"`
	// Misc is other non-PyTorch device memory of the process.
	Misc units.Bytes `json:"misc_bytes"`
	// GPU is the GPU kind the workspace was chosen for (zero if unknown).
	GPU GPU `json:"gpu"`
	// Legacy is true for a torch 1.x stack (eager module loading).
	Legacy bool `json:"legacy,omitempty"`
	// Warning is set when the job's GPU name is not known.
	Warning string `json:"warning,omitempty"`
}

// RuntimeOverheads returns the overheads of job's process, honouring
// Job.Constants overrides, Job.Software (torch1) and Job.GPU. Training
// jobs use the training fragmentation, inference and serving jobs the
// inference one.
func RuntimeOverheads(job Job) (Overheads, error) {
	c, err := resolveConstants(job.Constants)
	if err != nil {
		return Overheads{}, err
	}
	return runtimeOverheads(job, &c), nil
}

// runtimeOverheads is [RuntimeOverheads] with resolved constants.
func runtimeOverheads(job Job, c *constants) Overheads {
	o := Overheads{Legacy: hasSoftware(job.Software, "torch1")}
	id := cFragmentation
	switch {
	case job.Mode == Inference || job.Mode == Serving:
		id = cFragmentationInference
	case o.Legacy:
		id = cFragmentationLegacy
	case shardsParams(job):
		id = cFragmentationSharded
	}
	o.Fragmentation, o.FragmentationName = c[id], constantTable[id].Name
	ctx := c[cCUDAContextMiB]
	if o.Legacy {
		ctx = c[cCUDAContextEagerMiB]
	}
	o.CUDAContext = units.FromFloat(ctx * float64(units.MiB))
	ws := c[cWorkspaceMiB]
	if g, ok := LookupGPU(job.GPU); ok {
		o.GPU = g
		if g.SM >= 90 {
			ws = c[cWorkspaceSM90MiB]
		}
	} else if job.GPU != "" {
		o.Warning = fmt.Sprintf("gpu %q is not known: using the pre-Hopper cuBLAS workspace size", job.GPU)
	}
	o.Workspace = units.FromFloat(ws * float64(units.MiB))
	o.Misc = units.FromFloat(c[cMiscOverheadMiB] * float64(units.MiB))
	return o
}

// Reserved returns the reserved peak for an allocated peak:
// allocated × (1 + Fragmentation) (MODEL.md §10 estimator rule).
func (o Overheads) Reserved(allocated units.Bytes) units.Bytes {
	return units.Add(allocated, units.FromFloat(float64(allocated)*o.Fragmentation))
}

// Device returns the nvidia-smi figure for a reserved peak: reserved plus
// CUDA context, workspace and other non-PyTorch memory (MODEL.md §10).
func (o Overheads) Device(reserved units.Bytes) units.Bytes {
	return units.Add(units.Add(units.Add(reserved, o.CUDAContext), o.Workspace), o.Misc)
}

// Components returns the reserved- and device-level rows of the breakdown
// for an allocated peak, in the order fragmentation, cuda_context,
// workspace, misc (misc only when non-zero).
func (o Overheads) Components(allocated units.Bytes) []Component {
	out := make([]Component, 0, 4)
	return o.appendComponents(out, allocated)
}

// appendComponents appends the rows of [Overheads.Components] to dst,
// with formulas showing their inputs.
func (o Overheads) appendComponents(dst []Component, allocated units.Bytes) []Component {
	return o.appendRows(dst, allocated, true)
}

// appendRows appends the overhead rows to dst. Without explain the
// formulas are fixed templates, so no string is built.
func (o Overheads) appendRows(dst []Component, allocated units.Bytes, explain bool) []Component {
	frag := o.Reserved(allocated) - allocated
	ctxSrc := "MODEL.md §10: pytorch/pytorch PR #86509 (lazy module loading); constant cuda_context_mib"
	ctxFormula := "cuda_context_mib"
	if o.Legacy {
		ctxSrc = "MODEL.md §15.5/§15.16: torch 1.x eager module loading; constant cuda_context_eager_mib"
		ctxFormula = "cuda_context_eager_mib"
	}
	fragFormula := "allocated peak × fragmentation"
	wsFormula := "one cuBLAS workspace for the compute stream (workspace_mib, workspace_sm90_mib)"
	miscFormula := "misc_overhead_mib"
	if explain {
		fragFormula = fmt.Sprintf("allocated peak %s × fragmentation %.3g", units.FormatIEC(allocated), o.Fragmentation)
		ctxFormula += " = " + units.FormatIEC(o.CUDAContext)
		wsFormula = "one cuBLAS workspace for the compute stream = " + units.FormatIEC(o.Workspace)
		miscFormula += " = " + units.FormatIEC(o.Misc)
	}
	dst = append(dst,
		Component{Name: "fragmentation", Bytes: frag, Level: "reserved", Phase: "persistent",
			Formula: fragFormula, Source: "MODEL.md §10 (caching allocator, PYTORCH_CUDA_ALLOC_CONF notes), §15.5"},
		Component{Name: "cuda_context", Bytes: o.CUDAContext, Level: "device", Phase: "persistent",
			Formula: ctxFormula, Source: ctxSrc},
		Component{Name: "workspace", Bytes: o.Workspace, Level: "device", Phase: "persistent",
			Formula: wsFormula, Source: "pytorch/pytorch:aten/src/ATen/cuda/CublasHandlePool.cpp (MODEL.md §10)"},
	)
	if o.Misc > 0 {
		dst = append(dst, Component{Name: "misc", Bytes: o.Misc, Level: "device", Phase: "persistent",
			Formula: miscFormula, Source: "constant misc_overhead_mib (calibration)"})
	}
	return dst
}

// hasSoftware reports whether the job names the given software era.
func hasSoftware(sw []string, name string) bool {
	for _, s := range sw {
		if strings.EqualFold(strings.TrimSpace(s), name) {
			return true
		}
	}
	return false
}

// shardsParams reports whether a training job shards its parameters
// (DeepSpeed ZeRO-3, FSDP/FSDP2 full or hybrid sharding).
func shardsParams(job Job) bool {
	e := strings.ToLower(job.Engine)
	switch {
	case e == "deepspeed" || e == "ds" || strings.HasPrefix(e, "zero"):
		return job.ZeRO >= 3
	case strings.Contains(e, "fsdp") || strings.Contains(e, "torchtitan") || e == "fully_shard":
		st := strings.ToLower(job.FSDPStrategy)
		return st == "" || st == "full_shard" || st == "hybrid_shard"
	}
	return false
}
