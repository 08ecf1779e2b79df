package calibrate

import (
	"errors"
	"math"
	"testing"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// modelEstimator estimates every run on one catalog model.
func modelEstimator(t *testing.T, name string) Estimator {
	t.Helper()
	m, err := model.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return func(_ Run, job memory.Job) (memory.PerGPU, error) {
		r, err := memory.Estimate(m, job)
		return r.PerGPU, err
	}
}

// The fit's linear model of how constants move the estimate (predict)
// agrees with the real estimator. With the estimator's own derivative it
// holds for every job; from the activation rows alone it holds only where
// the whole row scales (not with gradient checkpointing, whose checkpoints
// are layer inputs the scale does not touch).
func TestPredictMatchesEstimator(t *testing.T) {
	est := modelEstimator(t, "smollm2-135m")
	tests := []struct {
		job        memory.Job
		rowsScaled bool
	}{
		// Jobs carry their GPU's facts as the front ends fill them from the
		// catalog (the estimator reads none).
		{memory.Job{SeqLen: 2048, MicroBatch: 4, GPU: "H100-SXM", GPUComputeCapability: 90, GPUMemory: 81559 * units.MiB}, true},
		{memory.Job{SeqLen: 1024, MicroBatch: 2, Method: "lora", GPU: "A100-SXM-80GB", GPUComputeCapability: 80, GPUMemory: 81920 * units.MiB}, true},
		{memory.Job{SeqLen: 4096, MicroBatch: 1, GradCheckpoint: "full", GPU: "L40S", GPUComputeCapability: 89, GPUMemory: 46068 * units.MiB}, false},
	}
	v := values{scale: 1.25, hasScale: true, frag: map[string]float64{"fragmentation": 0.1}, device: true, misc: float64(200 * units.MiB)}
	for _, tt := range tests {
		base, err := est(Run{}, tt.job)
		if err != nil {
			t.Fatal(err)
		}
		job := tt.job
		job.Constants = v.constants()
		after, err := est(Run{}, job)
		if err != nil {
			t.Fatal(err)
		}
		if after.PeakPhase != base.PeakPhase {
			t.Fatalf("%s: peak moved from %s to %s; pick a job whose peak phase stays", tt.job.Method, base.PeakPhase, after.PeakPhase)
		}
		want := [3]units.Bytes{after.AllocatedPeakBytes, after.ReservedPeakBytes, after.DevicePeakBytes}
		for _, withEstimator := range []bool{true, false} {
			if !withEstimator && !tt.rowsScaled {
				continue
			}
			opts := FitOptions{}.withDefaults()
			if withEstimator {
				opts.Estimator = est
			}
			obs, err := observe([]Run{{Job: tt.job, Estimate: base}}, opts)
			if err != nil {
				t.Fatal(err)
			}
			got := predict(obs[0], v)
			for l, name := range levels {
				if d := math.Abs(got[l] - float64(want[l])); d > float64(units.MiB) {
					t.Errorf("%+v estimator %v, %s: fit predicts %s, the estimator gives %s", tt.job, withEstimator, name, units.Bytes(got[l]), want[l])
				}
			}
		}
	}
}

// partialEstimator is an estimator in which only 70 % of the activation
// row responds to activation_scale, as with checkpoints.
func partialEstimator(run Run, job memory.Job) (memory.PerGPU, error) {
	if run.ID == "broken" {
		return memory.PerGPU{}, errors.New("model not found")
	}
	s, err := memory.ConstantValue(job.Constants, ActivationScale)
	if err != nil {
		return memory.PerGPU{}, err
	}
	ov, err := memory.RuntimeOverheads(job)
	if err != nil {
		return memory.PerGPU{}, err
	}
	w, a := run.Estimate.Components[0].Bytes, run.Estimate.Components[1].Bytes
	alloc := w + units.FromFloat(0.3*float64(a)+0.7*float64(a)*s)
	res := ov.Reserved(alloc)
	return memory.PerGPU{AllocatedPeakBytes: alloc, ReservedPeakBytes: res, DevicePeakBytes: ov.Device(res), PeakPhase: "loss"}, nil
}

func TestFitWithEstimator(t *testing.T) {
	runs := syntheticRuns(t, 6, memory.Train, truth{scale: 1, frag: 0.08, overhead: 800}, 11)
	// Measured: only 70 % of the activations are 1.4 × larger.
	for i := range runs {
		w, a := runs[i].Estimate.Components[0].Bytes, runs[i].Estimate.Components[1].Bytes
		alloc := float64(w) + 0.3*float64(a) + 0.7*1.4*float64(a)
		runs[i].Measured.AllocatedPeakBytes = units.Bytes(alloc)
		runs[i].Measured.ReservedPeakBytes = units.Bytes(alloc * 1.08)
		runs[i].Measured.DevicePeakBytes = units.Bytes(alloc*1.08) + 800*units.MiB
	}
	naive, err := Fit(runs, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := naive.Constants[ActivationScale]; math.Abs(s-1.4) < 0.05 {
		t.Fatalf("without the estimator the fit assumes the whole row scales and should miss 1.4, got %v", s)
	}
	p, err := Fit(runs, FitOptions{Estimator: partialEstimator})
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Constants[ActivationScale]; math.Abs(s-1.4) > 1e-6 {
		t.Errorf("activation_scale = %v, want 1.4", s)
	}
	if p.Fit.Reestimated != 6 {
		t.Errorf("reestimated %d runs, want 6", p.Fit.Reestimated)
	}
	for _, l := range p.Fit.Levels {
		if l.MaxAbsAfterPct > 0.1 {
			t.Errorf("%s: %.2f %% left after a fit through the estimator", l.Level, l.MaxAbsAfterPct)
		}
	}
	// A run the estimator fails on falls back to the recorded estimate.
	runs[0].ID = "broken"
	p, err = Fit(runs, FitOptions{Estimator: partialEstimator})
	if err != nil || p.Fit.Reestimated != 5 {
		t.Fatalf("with one broken run: %v, reestimated %d", err, p.Fit.Reestimated)
	}
}
