package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
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
		var twin *Estimator
		noteExceptions(m, &job, &r, &twin)
	case Inference, Serving:
		if r, err = estimateInference(m, job); err != nil {
			return r, err
		}
		withBand(&r)
	default:
		return Result{}, FieldErrorf("mode", "estimate: unknown mode %q (want train, inference or serving)", job.Mode)
	}
	noteCapped(&r)
	return r, nil
}

// noteCapped warns when a peak reached units.MaxBytes: sizes saturate
// there rather than wrap, so the figures shown are a floor, not the
// job's memory. Only absurd jobs get there (a batch or sequence of
// billions), which the warning asks the user to check.
func noteCapped(r *Result) {
	p := &r.PerGPU
	if p.AllocatedPeakBytes < units.MaxBytes && p.ReservedPeakBytes < units.MaxBytes && p.DevicePeakBytes < units.MaxBytes {
		return
	}
	r.Warnings = append(r.Warnings, "the estimate reaches "+units.FormatIEC(units.MaxBytes)+
		", the largest size gpumem counts: the peaks shown are capped there, not the job's memory (check the batch and sequence sizes)")
}

// maxComputeCapability bounds Job.GPUComputeCapability: CUDA's are major
// × 10 + minor with minor below 10, and majors are still below 20.
const maxComputeCapability = 199

// checkGPU rejects an impossible compute capability cc (Job.GPUComputeCapability).
func checkGPU(cc int) error {
	if cc < 0 || cc > maxComputeCapability {
		return FieldErrorf("gpu_compute_capability", "{gpu_compute_capability=%d}: want the CUDA compute capability × 10 (e.g. 90 for 9.0), or 0 when unknown", cc)
	}
	return nil
}
