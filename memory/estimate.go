package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/model"
)

// Estimate returns the per-GPU memory of job on model m. It is a pure
// function of its arguments: it reads no files, flags or environment.
func Estimate(m *model.Model, job Job) (Result, error) {
	if m == nil {
		return Result{}, fmt.Errorf("estimate: no model")
	}
	switch job.Mode {
	case "", Train:
		return withBand(estimateTraining(m, job))
	case Inference, Serving:
		return withBand(estimateInference(m, job))
	}
	return Result{}, fmt.Errorf("estimate: unknown mode %q (want train, inference or serving)", job.Mode)
}
