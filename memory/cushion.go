package memory

import (
	"errors"
	"maps"
	"strings"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// FragmentationConstant names the constant of [Constants] that governs
// job's fragmentation, the fraction its reserved peak exceeds the
// allocated one by: training, inference, torch 1.x and sharded jobs each
// have their own (see [RuntimeOverheads]).
func FragmentationConstant(job Job) (string, error) {
	const probe = 0.123456789
	for _, info := range Constants() {
		if !strings.HasPrefix(info.Name, "fragmentation") {
			continue
		}
		t := job
		t.Constants = map[string]float64{info.Name: probe}
		o, err := RuntimeOverheads(t)
		if err == nil && o.Fragmentation == probe {
			return info.Name, nil
		}
	}
	return "", errors.New("no fragmentation constant governs this job")
}

// SetReservedCushion returns job with its fragmentation constant
// ([FragmentationConstant]) set so that the reserved peak on m is the
// allocated peak plus cushion, the way calculators take an allocator
// cushion in GiB. The allocated peak does not depend on the constant, so
// one estimate gives it and the fraction is cushion / allocated. A
// serving job has no fragmentation term, and a job that sets the
// constant itself cannot take a cushion too.
func SetReservedCushion(m *model.Model, job Job, cushion units.Bytes) (Job, error) {
	if job.Mode == Serving {
		return job, FieldErrorf("mode", "a serving estimate has no fragmentation term (vLLM sizes its KV pool from the memory left under {gpu_memory_utilization})")
	}
	name, err := FragmentationConstant(job)
	if err != nil {
		return job, err
	}
	if _, ok := job.Constants[name]; ok {
		return job, FieldErrorf("constants", "{constants=%s} and a reserved cushion disagree; give one", name)
	}
	first, err := Estimate(m, job)
	if err != nil {
		return job, err
	}
	alloc := first.PerGPU.AllocatedPeakBytes
	if alloc <= 0 {
		return job, errors.New("the estimate has no allocated peak to relate a reserved cushion to")
	}
	out := job
	out.Constants = make(map[string]float64, len(job.Constants)+1)
	maps.Copy(out.Constants, job.Constants)
	out.Constants[name] = float64(cushion) / float64(alloc)
	return out, nil
}
