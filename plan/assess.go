package plan

import (
	"errors"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// Search limits of [Assess]: wide enough that hitting one means "at
// least this much", small enough that each search takes a few dozen
// estimates.
const (
	AssessMaxBatch  = 4096
	AssessMinSeqLen = 16
	AssessMaxSeqLen = 1 << 22
)

// Answer is an inverse-search answer in the form front ends print it.
type Answer struct {
	// Value is the answer: the largest (or, for GPU counts, smallest)
	// value that fits; 0 when none does.
	Value int `json:"value"`
	// NeedBytes is the per-GPU device peak at Value.
	NeedBytes units.Bytes `json:"need_bytes,omitempty"`
	// Limit is the search limit; Value == Limit means "at least".
	Limit int `json:"limit"`
	// Stop says why the next value does not fit.
	Stop string `json:"stop,omitempty"`
	// Error is the search's error, if it found nothing.
	Error string `json:"error,omitempty"`
	// NoFit is true when even the smallest value does not fit.
	NoFit bool `json:"no_fit,omitempty"`

	err, stop error // Error and Stop as errors, where kept (see Err, StopErr)
}

// Err returns the search's error, nil when it found an answer. Front ends
// that name job settings in their own words render it with
// [memory.RenderError] rather than print Error.
func (a *Answer) Err() error { return a.err }

// StopErr returns why the next value does not fit as an error, when the
// search kept one (see [Found.StopErr]).
func (a *Answer) StopErr() error { return a.stop }

// NewAnswer summarizes a search's result and error.
func NewAnswer(found Found, err error) *Answer {
	a := &Answer{Value: found.Value, Limit: found.Limit, Stop: found.Stop, stop: found.stop}
	if err != nil {
		a.Value, a.Error, a.NoFit, a.err = 0, err.Error(), errors.Is(err, ErrNoFit), err
		return a
	}
	a.NeedBytes = Need(found.Result)
	return a
}

// Assessment is how one job does on one GPU kind, and what would fit.
type Assessment struct {
	GPU gpu.GPU `json:"gpu"`
	// Fit compares the job's device peak on this GPU with its memory.
	Fit Fit `json:"fit"`
	// Result is the estimate of the job on this GPU.
	Result memory.Result `json:"result"`
	// MaxBatch is the largest per-device batch (max_num_seqs when
	// serving) that fits.
	MaxBatch *Answer `json:"max_batch"`
	// MaxSeqLen is the longest sequence (prompt when inferring,
	// max_model_len when serving) that fits.
	MaxSeqLen *Answer `json:"max_seq_len"`
	// MinGPUs is the fewest GPUs of this kind that fit: more data-parallel
	// GPUs for training, a larger tensor-parallel size for inference.
	MinGPUs *Answer `json:"min_gpus"`
	// Suggestions are single changes that lower the peak of a training
	// job that does not fit comfortably (verdict tight or does not fit),
	// lowest peak first ([Suggest]).
	Suggestions []Suggestion `json:"suggestions,omitempty"`
	// Warning notes a format the GPU does not compute in natively.
	Warning string `json:"warning,omitempty"`
	// Warnings are the estimate's warnings (Result.Warnings), repeated at
	// the top of the JSON; front ends put the model's warnings first.
	Warnings []string `json:"warnings,omitempty"`
}

// Assess estimates job on g, checks the fit, and runs the three inverse
// searches (batch, sequence length, GPU count up to maxGPUs). The error
// is the estimator's on the job as given; search failures are reported
// in their answers.
func Assess(est EstimateFunc, job memory.Job, g gpu.GPU, maxGPUs int) (Assessment, error) {
	res, err := est(OnGPU(job, g))
	if err != nil {
		return Assessment{GPU: g}, err
	}
	a := Assessment{GPU: g, Fit: Check(res, g), Result: res, Warning: FormatWarning(job, g), Warnings: res.Warnings}
	a.MaxBatch = NewAnswer(MaxBatch(est, job, g, AssessMaxBatch))
	a.MaxSeqLen = NewAnswer(MaxSeqLen(est, job, g, AssessMinSeqLen, AssessMaxSeqLen))
	if job.Mode == memory.Inference || job.Mode == memory.Serving {
		a.MinGPUs = NewAnswer(MinTP(est, job, g, maxGPUs))
	} else {
		a.MinGPUs = NewAnswer(MinGPUs(est, job, g, maxGPUs))
	}
	if a.Fit.Verdict != Fits {
		a.Suggestions = Suggest(est, job, g)
	}
	return a, nil
}
