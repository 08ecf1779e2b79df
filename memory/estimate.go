package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/model"
)

// Estimate returns the per-GPU memory of job on model m. It is a pure
// function of its arguments: it reads no files, flags or environment.
func Estimate(m *model.Model, job Job) (r Result, err error) {
	if m == nil {
		return Result{}, fmt.Errorf("estimate: no model")
	}
	if err := checkGPU(job.GPUComputeCapability); err != nil {
		return Result{}, err
	}
	// r is filled in place: a Result is large and is copied only once,
	// to the caller.
	switch job.Mode {
	case "", Train:
		// The training estimator attaches the band itself, allocated
		// with the phases.
		if err := estimateTraining(m, &job, &r); err != nil {
			return Result{}, err
		}
	case Inference, Serving:
		if r, err = estimateInference(m, job); err != nil {
			return r, err
		}
		withBand(&r)
	default:
		return Result{}, fmt.Errorf("estimate: unknown mode %q (want train, inference or serving)", job.Mode)
	}
	return r, nil
}

// maxComputeCapability bounds Job.GPUComputeCapability: CUDA's are major
// × 10 + minor with minor below 10, and majors are still below 20.
const maxComputeCapability = 199

// checkGPU rejects an impossible compute capability cc (Job.GPUComputeCapability).
func checkGPU(cc int) error {
	if cc < 0 || cc > maxComputeCapability {
		return fmt.Errorf("gpu_compute_capability %d: want the CUDA compute capability × 10 (e.g. 90 for 9.0), or 0 when unknown", cc)
	}
	return nil
}
