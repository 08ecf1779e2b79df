package plan

import (
	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
)

// OnGPU returns job set up for GPU kind g, the one place a catalog board
// becomes job fields: the estimator reads no catalog (package memory
// stays free of it), so every front end passes the board's facts this
// way. Job.GPU gets the catalog name, Job.GPUComputeCapability the
// compute capability (the cuBLAS workspace grows from sm90 on) and
// Job.GPUMemory the total CUDA reports, [gpu.GPU.CUDATotal] (vLLM
// budgets a share of it; PyTorch's allocator cannot grow beyond it).
func OnGPU(job memory.Job, g gpu.GPU) memory.Job {
	job.GPU = g.Name
	job.GPUMemory = g.CUDATotal()
	job.GPUMemoryIsDriverTotal = g.CUDAMemory == 0
	job.GPUFormFactor = g.FormFactor
	job.GPUComputeCapability = g.SM()
	return job
}

// ResolveGPU looks job.GPU up in cat (the built-in catalog when nil) and
// returns the job set up for that board by [OnGPU], with the board. A
// GPUMemory the job already sets (--gpu-memory) wins over the catalog's.
// A job that names no GPU is returned as it is, with a zero GPU. An
// unknown or ambiguous name is an error wrapping [gpu.ErrUnknown] or
// [gpu.ErrAmbiguous]: the estimate would otherwise silently use another
// board's figures.
func ResolveGPU(cat *gpu.Catalog, job memory.Job) (memory.Job, gpu.GPU, error) {
	if job.GPU == "" {
		return job, gpu.GPU{}, nil
	}
	if cat == nil {
		cat = gpu.Default()
	}
	g, err := cat.Lookup(job.GPU)
	if err != nil {
		return job, gpu.GPU{}, err
	}
	mem := job.GPUMemory
	job = OnGPU(job, g)
	if mem > 0 {
		job.GPUMemory, job.GPUMemoryIsDriverTotal = mem, false
	}
	return job, g, nil
}
