package calibrate

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// Names of the constants a fit sets ([memory.Constants] documents them).
const (
	ActivationScale = "activation_scale"
	MiscOverheadMiB = "misc_overhead_mib"
)

// DefaultMinRuns is the fewest runs a term is fitted from: with one run a
// term fits exactly and nothing is left to judge the fit by.
const DefaultMinRuns = 2

// FitOptions configure [Fit].
type FitOptions struct {
	// Name is the profile's name (default "<gpu> <stack>").
	Name string
	// MinRuns is the fewest runs per term (default [DefaultMinRuns]).
	MinRuns int
	// ActivationComponents are the estimate rows activation_scale
	// multiplies (default "activations": the saved per-layer activations).
	// They are used when Estimator is nil.
	ActivationComponents []string
	// Estimator, when set, re-estimates a run's job; Fit then measures how
	// the allocated peak responds to activation_scale by a finite
	// difference instead of assuming the activation rows scale whole, and
	// reports the error after the fit from real estimates with the fitted
	// constants. Runs it fails on fall back to the linear model.
	Estimator Estimator
}

// Estimator estimates job for the model of run (gpumem's estimator with
// the model the run names).
type Estimator func(run Run, job memory.Job) (memory.PerGPU, error)

// scaleStep is the relative step of the finite difference in activation_scale.
const scaleStep = 0.1

// FitStats describes a fit: the terms and the error before and after.
type FitStats struct {
	// Runs is the number of runs given.
	Runs int `json:"runs"`
	// Reestimated is how many runs were estimated anew with this gpumem
	// (the "before" figures then are today's estimates, not the recorded ones).
	Reestimated int `json:"reestimated,omitempty"`
	// Terms are the fitted constants.
	Terms []TermFit `json:"terms"`
	// Levels summarise the error at each level over the runs measuring it.
	Levels []LevelError `json:"levels"`
	// PerRun lists every run's error at each level it measured.
	PerRun []RunError `json:"per_run"`
}

// TermFit is one fitted constant.
type TermFit struct {
	Constant string `json:"constant"`
	// Value is the fitted value (after clamping to the constant's range).
	Value float64 `json:"value"`
	// Before is the value the runs were estimated with (their mean if they differ).
	Before float64 `json:"before"`
	// StdErr is the standard error of Value; nil when the runs leave no
	// degree of freedom to estimate it (one run per unknown).
	StdErr *float64 `json:"stderr"`
	// Runs is how many runs the term was fitted from.
	Runs int `json:"runs"`
	// Unit is the constant's unit.
	Unit string `json:"unit"`
	// Note explains a clamp or how the term was split.
	Note string `json:"note,omitempty"`
}

// LevelError is the error of one level (allocated, reserved, device) over
// the runs that measured it, in percent of the measured value.
type LevelError struct {
	Level string `json:"level"`
	Runs  int    `json:"runs"`
	// MeanAbsBeforePct and MeanAbsAfterPct are mean absolute errors with the
	// runs' constants and with the fitted ones; MeanAbsLOOPct predicts each
	// run from a fit to the other runs (leave-one-out), the fairer figure
	// when runs are few.
	MeanAbsBeforePct float64 `json:"mean_abs_before_pct"`
	MeanAbsAfterPct  float64 `json:"mean_abs_after_pct"`
	MeanAbsLOOPct    float64 `json:"mean_abs_loo_pct"`
	// MaxAbsBeforePct and MaxAbsAfterPct are the worst runs.
	MaxAbsBeforePct float64 `json:"max_abs_before_pct"`
	MaxAbsAfterPct  float64 `json:"max_abs_after_pct"`
	// BiasBeforePct and BiasAfterPct are mean signed errors (positive: over-estimate).
	BiasBeforePct float64 `json:"bias_before_pct"`
	BiasAfterPct  float64 `json:"bias_after_pct"`
}

// RunError is one run's estimate of one level before and after the fit.
type RunError struct {
	Run       string      `json:"run"`
	Level     string      `json:"level"`
	Measured  units.Bytes `json:"measured_bytes"`
	Before    units.Bytes `json:"before_bytes"`
	After     units.Bytes `json:"after_bytes"`
	BeforePct float64     `json:"before_pct"`
	AfterPct  float64     `json:"after_pct"`
	LOOPct    float64     `json:"loo_pct"`
}

// ErrNothingToFit reports runs from which no term could be fitted.
var ErrNothingToFit = errors.New("no correction term could be fitted")

// Fit fits correction terms to runs of one GPU kind and software stack
// and returns them as a profile. Three terms are fitted, each by weighted
// least squares on the level of memory it governs (MODEL.md §10, §11):
//
//   - activation_scale, from the allocated peaks of training runs: measured
//     allocated = estimate + (scale − scale₀) × ∂allocated/∂scale, where the
//     derivative is the activation rows / scale₀, or a finite difference of
//     the estimator when FitOptions.Estimator is set;
//   - fragmentation (or its inference / torch-1 variant, as
//     [memory.RuntimeOverheads] picks it per run), from measured reserved
//     and allocated: reserved − allocated = fragmentation × allocated;
//   - the device constant, from measured device and reserved: device −
//     reserved = CUDA context + workspace + misc. It is written to
//     misc_overhead_mib (other non-PyTorch memory) when it exceeds the
//     context and workspace the model assumes, and lowers the context
//     constant otherwise.
//
// Relative residuals are minimised for the first two, so small and large
// runs weigh alike; the device constant is an absolute size.
func Fit(runs []Run, opts FitOptions) (Profile, error) {
	if len(runs) == 0 {
		return Profile{}, errors.New("calibrate: no runs")
	}
	if err := checkOneGroup(runs); err != nil {
		return Profile{}, fmt.Errorf("calibrate: %w", err)
	}
	opts = opts.withDefaults()
	obs, err := observe(runs, opts)
	if err != nil {
		return Profile{}, err
	}
	v, terms := fitTerms(obs, opts.MinRuns)
	if len(terms) == 0 {
		return Profile{}, fmt.Errorf("calibrate: %w from %d runs: each term needs %d runs measuring its levels (allocated with activations for activation_scale, allocated and reserved for fragmentation, reserved and device for the device constant)",
			ErrNothingToFit, len(runs), opts.MinRuns)
	}
	p := Profile{
		Schema:    ProfileSchema,
		Name:      opts.Name,
		Software:  runs[0].Software,
		Constants: v.constants(),
		Fit:       &FitStats{Runs: len(runs), Terms: terms},
	}
	kind := runs[0].Kind()
	if g, err := gpu.Lookup(kind); err == nil {
		p.GPU = g.Name
	} else {
		p.Notes = append(p.Notes, fmt.Sprintf("GPU %q is not a kind gpumem knows: the profile applies to any GPU", kind))
	}
	if p.Name == "" {
		p.Name = cmp.Or(kind, "unknown GPU") + ", " + runs[0].Stack()
	}
	for _, o := range obs {
		if o.reestimated {
			p.Fit.Reestimated++
		}
	}
	p.Fit.PerRun, p.Fit.Levels = evaluate(obs, v, opts.MinRuns, opts.Estimator)
	return p, nil
}

func (o FitOptions) withDefaults() FitOptions {
	if o.MinRuns <= 0 {
		o.MinRuns = DefaultMinRuns
	}
	if len(o.ActivationComponents) == 0 {
		o.ActivationComponents = []string{"activations"}
	}
	return o
}

// runObs is one run with what the fit needs from it, as float64 bytes.
type runObs struct {
	id                          string
	train                       bool
	estAlloc, estRes, estDev    float64
	measAlloc, measRes, measDev float64
	sens                        float64 // ∂ allocated peak / ∂ activation_scale, bytes
	s0                          float64 // activation_scale the run used
	run                         Run
	reestimated                 bool // estimates come from the estimator, not the runs file
	frag0                       float64
	fragName, ctxName           string
	ctx0, ws, misc0             float64
}

func observe(runs []Run, opts FitOptions) ([]runObs, error) {
	out := make([]runObs, len(runs))
	for i, r := range runs {
		r = r.withGPUFacts()
		ov, err := memory.RuntimeOverheads(r.Job)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", r.name(i), err)
		}
		s0, err := memory.ConstantValue(r.Job.Constants, ActivationScale)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", r.name(i), err)
		}
		o := runObs{
			id: r.name(i), train: r.Job.Mode == "" || r.Job.Mode == memory.Train,
			estAlloc: float64(r.Estimate.AllocatedPeakBytes), estRes: float64(r.Estimate.ReservedPeakBytes), estDev: float64(r.Estimate.DevicePeakBytes),
			measAlloc: float64(r.Measured.AllocatedPeakBytes), measRes: float64(r.Measured.ReservedPeakBytes), measDev: float64(r.Measured.DevicePeakBytes),
			s0: s0, frag0: ov.Fragmentation, fragName: fragmentationName(r.Job, ov),
			ctxName: "cuda_context_mib", ctx0: float64(ov.CUDAContext), ws: float64(ov.Workspace), misc0: float64(ov.Misc),
		}
		if ov.Legacy {
			o.ctxName = "cuda_context_eager_mib"
		}
		o.sens, o.run = activationBytes(r.Estimate, opts.ActivationComponents)/s0, r
		if opts.Estimator != nil {
			o.reestimated = o.useEstimator(opts)
		}
		out[i] = o
	}
	return out, nil
}

// useEstimator re-estimates the run with today's estimator, so that the
// fit corrects the model as it is now rather than as it was when the run
// was recorded, and for a training run measures ∂ allocated /
// ∂ activation_scale by a one-sided difference (the allocated peak is
// linear in the scale while the peak phase stays the same). It reports
// whether the estimator succeeded.
func (o *runObs) useEstimator(opts FitOptions) bool {
	est := opts.Estimator
	base, err := est(o.run, o.run.Job)
	if err != nil {
		return false
	}
	o.estAlloc, o.estRes, o.estDev = float64(base.AllocatedPeakBytes), float64(base.ReservedPeakBytes), float64(base.DevicePeakBytes)
	o.sens = activationBytes(base, opts.ActivationComponents) / o.s0
	if !o.train {
		return true
	}
	job := withConstant(o.run.Job, ActivationScale, o.s0*(1+scaleStep))
	if moved, err := est(o.run, job); err == nil && moved.PeakPhase == base.PeakPhase {
		o.sens = float64(moved.AllocatedPeakBytes-base.AllocatedPeakBytes) / (o.s0 * scaleStep)
	}
	return true
}

// activationBytes sums the allocated rows activation_scale multiplies.
func activationBytes(est memory.PerGPU, names []string) float64 {
	var act float64
	for _, c := range est.Components {
		if c.Level == "allocated" && slices.Contains(names, c.Name) {
			act += float64(c.Bytes)
		}
	}
	return act
}

// withConstant returns job with one constant overridden (the job's map is copied).
func withConstant(job memory.Job, name string, v float64) memory.Job {
	c := make(map[string]float64, len(job.Constants)+1)
	for k, x := range job.Constants {
		c[k] = x
	}
	c[name] = v
	job.Constants = c
	return job
}

// fragmentationName is the constant [memory.RuntimeOverheads] used for the job.
func fragmentationName(job memory.Job, ov memory.Overheads) string {
	switch {
	case job.Mode == memory.Inference || job.Mode == memory.Serving:
		return "fragmentation_inference"
	case ov.Legacy:
		return "fragmentation_torch1"
	}
	return "fragmentation"
}
