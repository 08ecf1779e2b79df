package memory

import (
	"errors"
	"maps"
	"strings"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// FragmentationConstant names the constant of [Constants] that governs
// job's fragmentation on m, the fraction its reserved peak exceeds the
// allocated one by. Training, inference, torch 1.x and sharded jobs each
// have their own (see [RuntimeOverheads]), and an FSDP or ZeRO-3 job
// whose communication-stream pools are counted takes the training one
// for its compute stream, which only the estimate on the model knows: so
// the constant is found by estimating, as the one whose value moves the
// reserved peak.
func FragmentationConstant(m *model.Model, job Job) (string, error) {
	name, _, err := fragmentationOf(m, job)
	return name, err
}

// fragmentationOf is [FragmentationConstant] with the job's estimate.
func fragmentationOf(m *model.Model, job Job) (string, Result, error) {
	base, err := Estimate(m, job)
	if err != nil {
		return "", base, err
	}
	for _, info := range Constants() {
		if !strings.HasPrefix(info.Name, "fragmentation") {
			continue
		}
		probe := info.Max
		if v, ok := job.Constants[info.Name]; ok && v == probe || !ok && info.Default == probe {
			probe = info.Min
		}
		t := job
		t.Constants = make(map[string]float64, len(job.Constants)+1)
		maps.Copy(t.Constants, job.Constants)
		t.Constants[info.Name] = probe
		r, err := Estimate(m, t)
		if err == nil && r.PerGPU.ReservedPeakBytes != base.PerGPU.ReservedPeakBytes {
			return info.Name, base, nil
		}
	}
	return "", base, errors.New("no fragmentation constant governs this job (its allocated peak is 0)")
}

// SetReservedCushion returns job with its fragmentation constant
// ([FragmentationConstant]) set so that the reserved peak on m is the
// allocated peak plus cushion, the way calculators take an allocator
// cushion in GiB. The allocated peak does not depend on the constant, so
// one estimate gives it and the weights' segment slack, and the fraction
// is (cushion − segment slack) / allocated. A
// serving job has no fragmentation term, and a job that sets the
// constant itself cannot take a cushion too.
func SetReservedCushion(m *model.Model, job Job, cushion units.Bytes) (Job, error) {
	if job.Mode == Serving {
		return job, FieldErrorf("mode", "a serving estimate has no fragmentation term (vLLM sizes its KV pool from the memory left under {gpu_memory_utilization})")
	}
	name, first, err := fragmentationOf(m, job)
	if err != nil {
		return job, err
	}
	if _, ok := job.Constants[name]; ok {
		return job, FieldErrorf("constants", "{constants=%s} and a reserved cushion disagree; give one", name)
	}
	alloc := first.PerGPU.AllocatedPeakBytes
	// The weights' segment slack, which the estimate derives, is part of
	// what a calculator's cushion stands for: the fraction is the rest
	// (none when the slack alone is larger). Stream pools stay besides
	// the cushion, as before.
	var derived units.Bytes
	for _, c := range first.PerGPU.Components {
		if c.Name == "segment_slack" && c.Level == "reserved" {
			derived += c.Bytes
		}
	}
	out := job
	out.Constants = make(map[string]float64, len(job.Constants)+1)
	maps.Copy(out.Constants, job.Constants)
	out.Constants[name] = float64(max(0, cushion-derived)) / float64(alloc)
	return out, nil
}
