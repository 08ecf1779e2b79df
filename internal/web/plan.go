package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/report"
	"github.com/gpumem/gpumem/units"
)

const (
	// maxGPUsSearched is the largest GPU count searched for the fewest
	// GPUs that fit, gpumem fit's default --max-gpus.
	maxGPUsSearched = 64
	// maxPlanGPUs bounds the GPU kinds one plan request may name.
	maxPlanGPUs = 64
)

// PlanReport is the answer of /api/plan: for each GPU kind, whether the
// job fits and what would fit. Each entry has the fields gpumem fit
// --format json prints for one GPU, without the full estimate.
type PlanReport struct {
	Model string `json:"model"`
	// Job is the job as checked, without a GPU (each entry sets its own).
	Job  memory.Job `json:"job"`
	GPUs []GPUPlan  `json:"gpus"`
	// Warnings are the model's warnings and those of the estimates on
	// every GPU, each once.
	Warnings []string `json:"warnings,omitempty"`
}

// GPUPlan is how a job does on one GPU kind: the fields of
// [plan.Assessment] (what gpumem fit --gpu X --format json prints) without
// the full estimate, which /api/estimate gives.
type GPUPlan struct {
	GPU gpu.GPU `json:"gpu"`
	// Fit compares the job's device peak on this GPU with its memory.
	Fit plan.Fit `json:"fit"`
	// MaxBatch is the largest per-device batch (max_num_seqs when
	// serving) that fits.
	MaxBatch *plan.Answer `json:"max_batch"`
	// MaxSeqLen is the longest sequence (prompt when inferring,
	// max_model_len when serving) that fits.
	MaxSeqLen *plan.Answer `json:"max_seq_len"`
	// MinGPUs is the fewest GPUs of this kind that fit (tensor parallel
	// for inference and serving).
	MinGPUs *plan.Answer `json:"min_gpus"`
	// Suggestions are single changes that lower a tight or failing
	// training job's peak on this GPU, lowest first (gpumem fit lists
	// them too).
	Suggestions []plan.Suggestion `json:"suggestions,omitempty"`
	// Warning notes a format the GPU does not compute in natively.
	Warning string `json:"warning,omitempty"`
	// Error is the estimator's error on this GPU kind, if any.
	Error string `json:"error,omitempty"`
}

func (s *Server) handlePlan(w http.ResponseWriter, r *http.Request) {
	in, err := s.readInput(w, r, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(in.gpus) > maxPlanGPUs {
		s.writeError(w, r, badRequest("gpus", "gpus: at most %d GPU kinds, got %d", maxPlanGPUs, len(in.gpus)))
		return
	}
	gs, err := s.selectGPUs(in.gpus, in.job.GPUMemory)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	m := in.model
	job := in.job
	job.GPU, job.GPUMemory, job.GPUComputeCapability = "", 0, 0
	key, cacheable := s.planKey(m, job, gs)
	if cacheable {
		if c, ok := s.plans.get(key); ok {
			if wantsPretty(w) {
				s.writeJSON(w, http.StatusOK, c.report)
			} else {
				writeRawJSON(w, http.StatusOK, c.compact)
			}
			return
		}
	}
	// The searches stop at their next estimate once the request ends (the
	// client went away or its deadline passed).
	ctx := r.Context()
	est := plan.WithContext(ctx, plan.For(m))
	rep := &PlanReport{Model: m.ID, Job: job, GPUs: make([]GPUPlan, 0, len(gs))}
	ws := [][]string{in.warnings}
	var firstErr error
	for _, g := range gs {
		p, warnings, err := planOne(est, job, g)
		if ctx.Err() != nil {
			s.writeError(w, r, &Error{Message: fmt.Sprintf("the request ended before the plan was complete: %v", context.Cause(ctx)),
				status: http.StatusServiceUnavailable})
			return
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		rep.GPUs = append(rep.GPUs, p)
		ws = append(ws, warnings)
	}
	rep.Warnings = report.Warnings(ws...)
	if firstErr != nil && allFailed(rep.GPUs) {
		// The job itself is wrong, not its fit on some GPU.
		s.writeError(w, r, firstErr)
		return
	}
	if cacheable {
		// The compact answer is kept encoded: a plan's JSON (every GPU with
		// its searches and suggestions) costs more to encode than to look up.
		if compact, err := report.AppendJSON(nil, rep, false); err == nil {
			s.plans.add(key, cachedPlan{report: rep, compact: append(compact, '\n')})
		}
	}
	s.writeJSON(w, http.StatusOK, rep)
}

// DefaultPlanCacheSize is the number of /api/plan answers a server keeps:
// a plan costs milliseconds of CPU (every GPU kind, three searches each),
// and the page asks again for the same job as a user goes back and forth.
const DefaultPlanCacheSize = 256

// cachedPlan is a kept answer of /api/plan: the report, and its compact
// JSON with the final newline.
type cachedPlan struct {
	report  *PlanReport
	compact []byte
}

// planKey is what a plan depends on: the model, the job and the GPUs.
type planKey struct {
	model     *model.Model
	job, gpus string
}

// planKey returns the cache key of a plan request, and whether its answer
// may be cached: only for models the server keeps (the catalog's, which
// never change), so a model read from a file or the Hub is planned anew.
func (s *Server) planKey(m *model.Model, job memory.Job, gs []gpu.GPU) (planKey, bool) {
	if s.plans == nil || !s.keepsModel(m) {
		return planKey{}, false
	}
	j, err := json.Marshal(job)
	if err != nil {
		return planKey{}, false
	}
	g, err := json.Marshal(gs)
	if err != nil {
		return planKey{}, false
	}
	return planKey{model: m, job: string(j), gpus: string(g)}, true
}

// keepsModel reports whether m is one of the catalog models the server
// has parsed and keeps.
func (s *Server) keepsModel(m *model.Model) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, k := range s.models {
		if k == m {
			return true
		}
	}
	return false
}

func allFailed(ps []GPUPlan) bool {
	for _, p := range ps {
		if p.Error == "" {
			return false
		}
	}
	return true
}

// planOne assesses job on g as gpumem fit does for one GPU, and returns
// the estimate's warnings.
func planOne(est plan.EstimateFunc, job memory.Job, g gpu.GPU) (GPUPlan, []string, error) {
	a, err := plan.Assess(est, job, g, maxGPUsSearched)
	if err != nil {
		return GPUPlan{GPU: g, Error: err.Error()}, nil, err
	}
	return GPUPlan{GPU: a.GPU, Fit: a.Fit, MaxBatch: a.MaxBatch, MaxSeqLen: a.MaxSeqLen, MinGPUs: a.MinGPUs,
		Suggestions: a.Suggestions, Warning: a.Warning}, a.Warnings, nil
}

// selectGPUs looks up names in the catalog; none means every GPU. A GPU
// memory size describes a board, as gpumem fit's --gpu-memory does: the
// memory of the one named GPU, or a custom board when none is named.
func (s *Server) selectGPUs(names []string, mem units.Bytes) ([]gpu.GPU, error) {
	gs, err := s.opts.GPUs.Select(names, mem, "gpu_memory_bytes")
	var ne *gpu.NameError
	switch {
	case errors.As(err, &ne):
		return nil, badRequest("gpus", "gpus[%s]: %v", strconv.Itoa(ne.Index), ne.Err)
	case err != nil:
		return nil, badRequest("gpu_memory_bytes", "gpu_memory_bytes: %v in gpus", err)
	}
	return gs, nil
}
