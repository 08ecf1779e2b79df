package plan

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// EstimateFunc estimates one job. Searches call it many times with
// variations of a base job; it must be a pure function of the job.
type EstimateFunc func(memory.Job) (memory.Result, error)

// WithContext returns est bound to ctx: once ctx is done, each call
// returns ctx's error without estimating, so any search running on it
// ends at its next estimate (a few microseconds) instead of finishing.
// Callers check ctx after a search: its answer is then not the job's.
func WithContext(ctx context.Context, est EstimateFunc) EstimateFunc {
	return func(j memory.Job) (memory.Result, error) {
		if err := ctx.Err(); err != nil {
			return memory.Result{}, err
		}
		return est(j)
	}
}

// For returns the estimator of model m: [memory.Estimate] bound to m. It
// is safe for concurrent use, and its results are the caller's. It keeps
// a pool of [memory.Estimator]s, so the model's inventory is tabulated
// once rather than on every call (the searches call it many times).
func For(m *model.Model) EstimateFunc {
	pool := &sync.Pool{New: func() any { return memory.NewEstimator(m) }}
	return func(j memory.Job) (memory.Result, error) {
		e := pool.Get().(*memory.Estimator)
		defer pool.Put(e)
		r, err := e.Estimate(&j)
		if err != nil {
			return memory.Result{}, err
		}
		return r.Clone(), nil
	}
}

// ForWorker returns an estimator of model m for one goroutine: a
// [memory.Estimator] that reuses its memory, so a training estimate
// allocates nothing. A result it returns shares memory with the next one:
// use it before the next call, or keep [memory.Result.Clone]. It is not
// safe for concurrent use: give one to each worker ([SearchWith]).
func ForWorker(m *model.Model) EstimateFunc {
	e := memory.NewEstimator(m)
	var job memory.Job // the estimator reads the job through a pointer: one copy, reused
	return func(j memory.Job) (memory.Result, error) {
		job = j
		r, err := e.Estimate(&job)
		if err != nil {
			return memory.Result{}, err
		}
		return *r, nil
	}
}

// ErrNoFit reports that even the smallest value searched does not fit.
var ErrNoFit = errors.New("does not fit")

// Var is a job variable an inverse search varies.
type Var string

// Variables. Each maps to the job field of the job's mode.
const (
	// MicroBatch is the per-device batch: Job.MicroBatch when training,
	// Job.Batch for inference, Job.MaxNumSeqs when serving.
	MicroBatch Var = "micro_batch"
	// SeqLen is the sequence length: Job.SeqLen when training,
	// Job.PromptLen for inference (GenLen stays), Job.MaxModelLen when serving.
	SeqLen Var = "seq_len"
)

// field returns the job field v stands for in job's mode.
func (v Var) field(j *memory.Job) (*int, error) {
	mode := j.Mode
	switch v {
	case MicroBatch:
		switch mode {
		case "", memory.Train:
			return &j.MicroBatch, nil
		case memory.Inference:
			return &j.Batch, nil
		case memory.Serving:
			return &j.MaxNumSeqs, nil
		}
	case SeqLen:
		switch mode {
		case "", memory.Train:
			return &j.SeqLen, nil
		case memory.Inference:
			return &j.PromptLen, nil
		case memory.Serving:
			return &j.MaxModelLen, nil
		}
	default:
		return nil, fmt.Errorf("search: unknown variable %q (want %s or %s)", v, MicroBatch, SeqLen)
	}
	return nil, fmt.Errorf("search: unknown mode %q", mode)
}

// Key returns the memory.Job key v stands for in mode, for messages:
// "per_device_batch", "batch", "max_num_seqs", "seq_len", "prompt_len"
// or "max_model_len".
func (v Var) Key(mode memory.Mode) string {
	keys := map[Var][3]string{
		MicroBatch: {"per_device_batch", "batch", "max_num_seqs"},
		SeqLen:     {"seq_len", "prompt_len", "max_model_len"},
	}
	f, ok := keys[v]
	if !ok {
		return string(v)
	}
	switch mode {
	case memory.Inference:
		return f[1]
	case memory.Serving:
		return f[2]
	}
	return f[0]
}

// Found is the answer of an inverse search.
type Found struct {
	// Var is the variable searched and Value the answer: the largest
	// value (or, for [MinGPUs], the smallest GPU count) that fits.
	Var   Var `json:"var"`
	Value int `json:"value"`
	// Result is the estimate at Value.
	Result memory.Result `json:"result"`
	// Limit is the bound of the search; Value == Limit means the search
	// stopped at the bound, not at the memory.
	Limit int `json:"limit"`
	// Stop says why the next larger value was rejected ("" at the
	// limit): its device peak against the budget, or the estimator's error.
	Stop string `json:"stop,omitempty"`
	// Evaluations is the number of estimates the search made.
	Evaluations int `json:"evaluations"`

	stop error // Stop as an error, when the search kept one (see StopErr)
}

// StopErr returns why the next larger value was rejected as an error, for
// front ends that name the job settings it mentions in their own words
// ([memory.RenderError]); nil when Stop is empty or only a string.
func (f Found) StopErr() error { return f.stop }

// probe evaluates job with *field = n against budget.
type probe struct {
	est    EstimateFunc
	job    memory.Job
	v      Var
	budget units.Bytes
	evals  int
}

// at returns the estimate at n and, if it does not fit, why.
func (p *probe) at(n int) (memory.Result, error) {
	j := p.job
	f, err := p.v.field(&j)
	if err != nil {
		return memory.Result{}, err
	}
	*f = n
	p.evals++
	r, err := p.est(j)
	if err != nil {
		return r, err
	}
	if ok, why := within(r, p.budget); !ok {
		key := p.v.Key(p.job.Mode)
		return r, memory.FieldErrorf(key, "{"+key+"=%d}: %s", n, why)
	}
	return r, nil
}

// MaxFit returns the largest value of v in [lo, hi] at which job's per-GPU
// peak ([Need]) stays within budget. Memory grows with batch and sequence
// length, so the search gallops (lo, 2·lo, 4·lo, …) to the first value
// that does not fit and bisects below it: about 2·log2(hi/lo) estimates.
// An estimator error at a value counts as "does not fit" there (for
// example a sequence longer than the model allows); at lo it is returned.
func MaxFit(est EstimateFunc, job memory.Job, v Var, lo, hi int, budget units.Bytes) (Found, error) {
	if lo < 1 || hi < lo {
		return Found{}, fmt.Errorf("search %s: want 1 <= lo <= hi, got lo=%d hi=%d", v, lo, hi)
	}
	p := &probe{est: est, job: job, v: v, budget: budget}
	best, why := p.at(lo)
	if why != nil {
		key := v.Key(job.Mode)
		return Found{Var: v, Limit: hi, Evaluations: p.evals}, memory.FieldErrorf(key, "search {"+key+"}: %w: %v", ErrNoFit, why)
	}
	good, bad := lo, 0
	var stop error
	for n := lo; bad == 0 && good < hi; {
		n = double(n, hi)
		r, why := p.at(n)
		if why == nil {
			good, best = n, r
		} else {
			bad, stop = n, why
		}
	}
	for bad > 0 && bad-good > 1 {
		mid := good + (bad-good)/2
		r, why := p.at(mid)
		if why == nil {
			good, best = mid, r
		} else {
			bad, stop = mid, why
		}
	}
	f := Found{Var: v, Value: good, Result: best, Limit: hi, Evaluations: p.evals, stop: stop}
	if stop != nil {
		f.Stop = stop.Error()
	}
	return f, nil
}

// double returns 2·n capped at hi, without overflowing.
func double(n, hi int) int {
	if n > hi/2 {
		return hi
	}
	return 2 * n
}

// MaxBatch returns the largest per-device batch in [1, hi] that fits on g
// with the [Headroom] kept free.
func MaxBatch(est EstimateFunc, job memory.Job, g gpu.GPU, hi int) (Found, error) {
	return MaxFit(est, OnGPU(job, g), MicroBatch, 1, hi, Budget(g))
}

// MaxSeqLen returns the longest sequence in [lo, hi] tokens that fits on
// g with the [Headroom] kept free. Sequence lengths are searched in steps
// of 1; round the answer to the multiple your data pipeline uses.
func MaxSeqLen(est EstimateFunc, job memory.Job, g gpu.GPU, lo, hi int) (Found, error) {
	return MaxFit(est, OnGPU(job, g), SeqLen, lo, hi, Budget(g))
}

// GPUsVar names the GPU count in a [Found] from [MinGPUs].
const GPUsVar Var = "num_gpus"

// Shards reports whether adding GPUs spreads a training job's model
// states: DeepSpeed ZeRO 1-3, FSDP (but no_shard), FSDP2 and Megatron's
// distributed optimizer do; a single process, DDP and plain Megatron data
// parallelism keep a full copy per model-parallel group.
func Shards(job memory.Job) bool {
	switch job.Engine {
	case memory.EngineDeepSpeed, memory.EngineMegatron:
		return job.ZeRO >= 1
	case memory.EngineFSDP:
		return job.FSDPStrategy != "no_shard"
	case memory.EngineFSDP2:
		return true
	}
	return false
}

// MinGPUs returns the smallest number of GPUs of kind g, at most hi, on
// which job fits with the [Headroom] kept free. The count stays a
// multiple of the job's model-parallel size TP·PP·CP, and the data-parallel
// size follows from it. Sharded jobs (ZeRO, FSDP) need less memory per GPU
// as GPUs are added, so the search gallops upward and bisects; a job whose
// per-GPU memory does not shrink (plain DDP) returns [ErrNoFit] at once if
// it does not fit on the smallest count.
func MinGPUs(est EstimateFunc, job memory.Job, g gpu.GPU, hi int) (Found, error) {
	job = OnGPU(job, g)
	mp := max(job.TP, 1) * max(job.PP, 1) * max(job.CP, 1)
	if hi < mp {
		return Found{}, fmt.Errorf("search %s: limit %d is below the model-parallel size %d (tp·pp·cp)", GPUsVar, hi, mp)
	}
	budget := Budget(g)
	evals := 0
	at := func(k int) (memory.Result, bool, string) {
		j := job
		j.NumGPUs = k * mp
		if job.DP > 0 {
			j.DP = k
		}
		evals++
		r, err := est(j)
		if err != nil {
			return r, false, err.Error()
		}
		if ok, why := within(r, budget); !ok {
			return r, false, fmt.Sprintf("%d GPUs: %s", k*mp, why)
		}
		return r, true, ""
	}
	kmax := hi / mp
	r, ok, why := at(1)
	if ok {
		return Found{Var: GPUsVar, Value: mp, Result: r, Limit: hi, Evaluations: evals}, nil
	}
	bad, good, best, stop := 1, 0, memory.Result{}, why
	for k := 1; good == 0 && k < kmax; {
		k = double(k, kmax)
		r, ok, why := at(k)
		if ok {
			good, best = k, r
		} else {
			bad, stop = k, why
		}
	}
	if good == 0 {
		return Found{Var: GPUsVar, Limit: hi, Evaluations: evals}, fmt.Errorf("search %s: %w on up to %d x %s: %s", GPUsVar, ErrNoFit, kmax*mp, g.Name, stop)
	}
	for good-bad > 1 {
		mid := bad + (good-bad)/2
		r, ok, why := at(mid)
		if ok {
			good, best = mid, r
		} else {
			bad, stop = mid, why
		}
	}
	return Found{Var: GPUsVar, Value: good * mp, Result: best, Limit: hi, Stop: stop, Evaluations: evals}, nil
}

// Sweep estimates job at each of values of v, for charts. Values whose
// estimate fails (a sequence longer than the model allows) are left out;
// the error is returned only when no value could be estimated.
func Sweep(est EstimateFunc, job memory.Job, v Var, values []int) ([]int, []memory.Result, error) {
	var xs []int
	var rs []memory.Result
	var errs []error
	for _, n := range values {
		j := job
		f, err := v.field(&j)
		if err != nil {
			return nil, nil, err
		}
		*f = n
		r, err := est(j)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%d: %w", v, n, err))
			continue
		}
		xs, rs = append(xs, n), append(rs, r)
	}
	if len(xs) == 0 {
		return nil, nil, fmt.Errorf("sweep %s: no value could be estimated: %w", v, errors.Join(errs...))
	}
	return xs, rs, nil
}

// Pow2Range returns lo, 2·lo, 4·lo, … up to hi, and hi itself if it is
// not on the sequence: the x values of a sweep.
func Pow2Range(lo, hi int) []int {
	lo = max(lo, 1)
	var out []int
	for n := lo; n <= hi; n *= 2 {
		out = append(out, n)
		if n > hi/2 {
			break
		}
	}
	if len(out) > 0 && out[len(out)-1] != hi && hi > lo {
		out = append(out, hi)
	}
	return out
}
