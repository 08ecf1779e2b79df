package memory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// GPU is the GPU a job runs on as the estimator sees it: the facts a
// front end copied into the [Job] from the GPU catalog (package gpu) —
// Job.GPU, Job.GPUComputeCapability and Job.GPUMemory.
type GPU struct {
	// Name is the catalog name, e.g. "H100-SXM" (informational).
	Name string `json:"name"`
	// Arch is the generation (volta ... blackwell). The job carries no
	// architecture, so the estimator leaves it empty; the field stays for
	// readers of older JSON.
	Arch string `json:"arch,omitempty"`
	// SM is the compute capability times ten (90 for Hopper); 0 if unknown.
	SM int `json:"sm"`
	// Memory is the total the job plans against; 0 if unknown.
	Memory units.Bytes `json:"memory_bytes"`
}

// jobGPU returns the GPU job runs on as the estimator sees it: the
// facts the job gives (see gpuWarning when it gives none).
func jobGPU(job *Job) GPU {
	return GPU{Name: job.GPU, SM: job.GPUComputeCapability, Memory: job.GPUMemory}
}

// gpuWarning is the warning of a job that names a GPU but gives none of
// its facts (Job.GPUComputeCapability, Job.GPUMemory): the estimator
// reads no catalog, so it then falls back to the pre-Hopper cuBLAS
// workspace and no memory limit rather than guessing from the name. It
// is too large to be inlined: the hot callers test job.GPU first, as
// most jobs name no GPU.
func gpuWarning(job *Job) string {
	if job.GPU == "" || job.GPUComputeCapability > 0 || job.GPUMemory > 0 {
		return ""
	}
	return fmt.Sprintf("gpu %q: the job gives neither its compute capability nor its memory "+
		"(gpu_compute_capability, gpu_memory_bytes; front ends fill them from the GPU catalog): "+
		"using the pre-Hopper cuBLAS workspace and no memory limit", job.GPU)
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
	// GPU is the GPU the workspace was chosen for, as jobGPU reads it
	// from the job (zero if the job names none).
	GPU GPU `json:"gpu"`
	// Legacy is true for a torch 1.x stack (eager module loading).
	Legacy bool `json:"legacy,omitempty"`
	// Warning is set when the job names a GPU but gives none of its facts.
	Warning string `json:"warning,omitempty"`
	// StreamCache is the memory the caching allocator holds in the pools
	// of FSDP's communication streams beyond what the allocated peak
	// counts: blocks freed on those streams are reused only there
	// (MODEL.md §10; see [Overheads.Reserved]). Zero for other engines.
	StreamCache units.Bytes `json:"stream_cache_bytes,omitempty"`
	// GatherPool and ReducePool are the pools StreamCache comes from: the
	// all-gather outputs and the reduce-scatter buffers with the sharded
	// gradients, in bytes.
	GatherPool units.Bytes `json:"gather_pool_bytes,omitempty"`
	ReducePool units.Bytes `json:"reduce_pool_bytes,omitempty"`
	// SegmentSlack is the memory of the weights' segments that no block
	// holds: remainders split off when each weight took a fresh segment,
	// too small for the next (alloc_model.go). Zero when not derived.
	SegmentSlack units.Bytes `json:"segment_slack_bytes,omitempty"`
}

// RuntimeOverheads returns the overheads of job's process, honouring
// Job.Constants overrides, Job.Software (torch1) and the job's GPU
// (Job.GPUComputeCapability selects the workspace size). Training
// jobs use the training fragmentation, inference and serving jobs the
// inference one. Without the model it has no FSDP stream pools
// (StreamCache is zero and sharded jobs get fragmentation_sharded).
func RuntimeOverheads(job Job) (Overheads, error) {
	c, err := resolveConstants(job.Constants)
	if err != nil {
		return Overheads{}, err
	}
	return runtimeOverheads(&job, &c), nil
}

// runtimeOverheads is [RuntimeOverheads] with resolved constants.
func runtimeOverheads(job *Job, c *constants) Overheads {
	rs := rulesOf(job)
	o := Overheads{Legacy: rs.has(ruleTorchEagerModules)}
	id := cFragmentation
	switch {
	case job.Mode == Inference || job.Mode == Serving:
		id = cFragmentationInference
	case rs.has(ruleTorchFragmentation1x):
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
	o.GPU = jobGPU(job)
	if job.GPU != "" {
		o.Warning = gpuWarning(job)
	}
	if o.GPU.SM >= 90 {
		// PyTorch sizes the cuBLAS workspace larger from sm90 on (MODEL.md §10).
		ws = c[cWorkspaceSM90MiB]
	}
	o.Workspace = units.FromFloat(ws * float64(units.MiB))
	o.Misc = units.FromFloat(c[cMiscOverheadMiB] * float64(units.MiB))
	return o
}

// Reserved returns the reserved peak for an allocated peak:
// allocated × (1 + Fragmentation) + StreamCache + SegmentSlack (MODEL.md
// §10 estimator rule, with the parts the allocator's arithmetic derives). Reserved, Device and the row methods take a pointer: an inlined
// call on an Overheads value would still copy its eighteen words.
func (o *Overheads) Reserved(allocated units.Bytes) units.Bytes {
	return units.Add(units.Add(units.Add(allocated, o.fragmentation(allocated)), o.StreamCache), o.SegmentSlack)
}

// fragmentation is the fragmentation row of an allocated peak.
func (o *Overheads) fragmentation(allocated units.Bytes) units.Bytes {
	return units.FromFloat(float64(allocated) * o.Fragmentation)
}

// setStreamCache records the communication-stream pools of an FSDP job
// (cache, gather and reduce in bytes). The sharded fragmentation
// constant stood for exactly these pools; once they are counted, the
// compute stream fragments like any training run's, so
// fragmentation_sharded gives way to fragmentation (a torch 1.x stack
// keeps its era constant).
func (o *Overheads) setStreamCache(cache, gather, reduce float64, c *constants) {
	o.StreamCache = units.FromFloat(cache)
	o.GatherPool, o.ReducePool = units.FromFloat(gather), units.FromFloat(reduce)
	if o.FragmentationName == constantTable[cFragmentationSharded].Name {
		o.Fragmentation, o.FragmentationName = c[cFragmentation], constantTable[cFragmentation].Name
	}
}

// rowCount is the number of rows [Overheads.Components] returns.
func (o Overheads) rowCount() int {
	n := 3 // fragmentation, cuda_context, workspace
	if o.StreamCache > 0 {
		n++
	}
	if o.SegmentSlack > 0 {
		n++
	}
	if o.Misc > 0 {
		n++
	}
	return n
}

// releaseCached lowers the reserved rows of a breakdown by cut bytes, as
// the caching allocator does when a cudaMalloc fails: it frees the cached
// blocks no tensor uses and retries (pytorch/pytorch
// c10/cuda/CUDACachingAllocator.cpp release_cached_blocks). Whole free
// segments go first, which the communication streams' idle pools are, then
// the compute stream's fragmentation. No row goes below zero; it returns
// the bytes it could not release.
func releaseCached(comps []Component, cut units.Bytes) units.Bytes {
	for _, name := range [...]string{"stream_cache", "fragmentation"} {
		for i := range comps {
			if c := &comps[i]; c.Name == name && c.Level == "reserved" && cut > 0 {
				d := min(cut, c.Bytes)
				c.Bytes -= d
				cut -= d
			}
		}
	}
	return cut
}

// Device returns the nvidia-smi figure for a reserved peak: reserved plus
// CUDA context, workspace and other non-PyTorch memory (MODEL.md §10).
func (o *Overheads) Device(reserved units.Bytes) units.Bytes {
	return units.Add(units.Add(units.Add(reserved, o.CUDAContext), o.Workspace), o.Misc)
}

// Components returns the reserved- and device-level rows of the breakdown
// for an allocated peak, in the order fragmentation, stream_cache,
// segment_slack, cuda_context, workspace, misc (stream_cache,
// segment_slack and misc only when non-zero).
func (o Overheads) Components(allocated units.Bytes) []Component {
	out := make([]Component, 0, o.rowCount())
	return o.appendComponents(out, allocated)
}

// appendComponents appends the rows of [Overheads.Components] to dst,
// with formulas showing their inputs.
func (o Overheads) appendComponents(dst []Component, allocated units.Bytes) []Component {
	return o.appendRows(dst, allocated, true)
}

// overheadTexts are the formulas and the CUDA context source of the
// overhead rows.
type overheadTexts struct {
	frag, stream, slack, ctx, ctxSource, workspace, misc string
}

// Formulas without the job's inputs, for a lazy-loading and a torch 1.x
// (eager module loading) stack.
var (
	overheadTemplates = overheadTexts{
		frag:      "allocated peak × fragmentation (what the allocator leaves cached as the step's tensors come and go, not derived)",
		stream:    streamCacheFormula,
		slack:     segmentSlackFormula,
		ctx:       "cuda_context_mib",
		ctxSource: "MODEL.md §10: pytorch/pytorch PR #86509 (lazy module loading); constant cuda_context_mib",
		workspace: "one cuBLAS workspace for the compute stream (workspace_mib, workspace_sm90_mib)",
		misc:      "misc_overhead_mib",
	}
	legacyOverheadTemplates = func() overheadTexts {
		t := overheadTemplates
		t.ctx = "cuda_context_eager_mib"
		t.ctxSource = "MODEL.md §15.5/§15.16: torch 1.x eager module loading; constant cuda_context_eager_mib"
		return t
	}()
)

// explained returns the templates t with the inputs of o and allocated
// written into the formulas (--explain).
func (o *Overheads) explained(t *overheadTexts, allocated units.Bytes) overheadTexts {
	e := *t
	e.frag = fmt.Sprintf("allocated peak %s × fragmentation %.3g (%s; what the allocator leaves cached as the step's tensors come and go, not derived)",
		units.FormatIEC(allocated), o.Fragmentation, o.FragmentationName)
	if o.SegmentSlack > 0 {
		e.slack = segmentSlackFormula + " = " + units.FormatIEC(o.SegmentSlack)
	}
	if o.StreamCache > 0 {
		e.stream = fmt.Sprintf("all-gather pool %s + reduce-scatter pool %s − the part the allocated peak holds = %s",
			units.FormatIEC(o.GatherPool), units.FormatIEC(o.ReducePool), units.FormatIEC(o.StreamCache))
	}
	e.ctx += " = " + units.FormatIEC(o.CUDAContext)
	e.workspace = "one cuBLAS workspace for the compute stream = " + units.FormatIEC(o.Workspace)
	if o.Misc > 0 {
		e.misc += " = " + units.FormatIEC(o.Misc)
	}
	return e
}

// overheadRows are the overhead rows with their texts; appendRows fills
// in the bytes.
type overheadRows struct {
	frag, stream, slack, ctx, workspace, misc Component
}

// rows returns the overhead rows with the texts t.
func (t *overheadTexts) rows() overheadRows {
	return overheadRows{
		frag: Component{Name: "fragmentation", Level: "reserved", Phase: "persistent",
			Formula: t.frag, Source: "constants fragmentation* (MODEL.md §10 PYTORCH_CUDA_ALLOC_CONF notes, §15.5); the allocator's arithmetic is the allocator_rounding, segment_slack and stream_cache rows"},
		stream: Component{Name: "stream_cache", Level: "reserved", Phase: "persistent",
			Formula: t.stream, Source: streamCacheSource},
		slack: Component{Name: "segment_slack", Level: "reserved", Phase: "persistent",
			Formula: t.slack, Source: segmentSlackSource},
		ctx: Component{Name: "cuda_context", Level: "device", Phase: "persistent",
			Formula: t.ctx, Source: t.ctxSource},
		workspace: Component{Name: "workspace", Level: "device", Phase: "persistent",
			Formula: t.workspace, Source: "pytorch/pytorch:aten/src/ATen/cuda/CublasHandlePool.cpp (MODEL.md §10)"},
		misc: Component{Name: "misc", Level: "device", Phase: "persistent",
			Formula: t.misc, Source: "constant misc_overhead_mib (calibration)"},
	}
}

// The overhead rows of a lazy-loading and a torch 1.x stack, without the
// job's inputs in the formulas.
var (
	overheadRowTemplates       = overheadTemplates.rows()
	legacyOverheadRowTemplates = legacyOverheadTemplates.rows()
)

// appendRows appends the overhead rows to dst. Without explain the
// formulas are fixed templates, so no string is built.
func (o *Overheads) appendRows(dst []Component, allocated units.Bytes, explain bool) []Component {
	rows := &overheadRowTemplates
	if o.Legacy {
		rows = &legacyOverheadRowTemplates
	}
	if explain {
		t := &overheadTemplates
		if o.Legacy {
			t = &legacyOverheadTemplates
		}
		e := o.explained(t, allocated)
		r := e.rows()
		rows = &r
	}
	dst = appendRow(dst, &rows.frag, o.fragmentation(allocated))
	if o.StreamCache > 0 {
		dst = appendRow(dst, &rows.stream, o.StreamCache)
	}
	if o.SegmentSlack > 0 {
		dst = appendRow(dst, &rows.slack, o.SegmentSlack)
	}
	dst = appendRow(dst, &rows.ctx, o.CUDAContext)
	dst = appendRow(dst, &rows.workspace, o.Workspace)
	if o.Misc > 0 {
		dst = appendRow(dst, &rows.misc, o.Misc)
	}
	return dst
}

// appendRow appends c with b bytes to dst, copying c once, in place.
func appendRow(dst []Component, c *Component, b units.Bytes) []Component {
	n := len(dst)
	dst = slices.Grow(dst, 1)[:n+1]
	dst[n] = *c
	dst[n].Bytes = b
	return dst
}

// shardsParams reports whether a training job shards its parameters
// (DeepSpeed ZeRO-3, FSDP/FSDP2 full or hybrid sharding).
func shardsParams(job *Job) bool {
	switch job.Engine {
	case "", EngineDDP, EngineMegatron:
		// Lower-case already and none of the spellings below.
		return false
	}
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
