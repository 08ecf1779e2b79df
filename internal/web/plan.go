package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/units"
)

// Search limits, the same as gpumem fit uses for its single-GPU report.
const (
	maxBatchSearched  = 4096
	maxSeqLenSearched = 1 << 22
	minSeqLenSearched = 16
	maxGPUsSearched   = 64
	// maxPlanGPUs bounds the GPU kinds one plan request may name.
	maxPlanGPUs = 64
)

// PlanRequest is the body of POST /api/plan: an [EstimateRequest] plus the
// GPU kinds to check.
type PlanRequest struct {
	Model string `json:"model"`
	// GPUs names the GPU kinds to check (any name or alias gpu.Lookup
	// accepts); empty means the whole catalog.
	GPUs []string `json:"gpus,omitempty"`
	memory.Job
}

// PlanReport is the answer of /api/plan: for each GPU kind, whether the
// job fits and what would fit. Each entry has the fields gpumem fit
// --format json prints for one GPU, without the full estimate.
type PlanReport struct {
	Model string `json:"model"`
	// Job is the job as checked, without a GPU (each entry sets its own).
	Job  memory.Job `json:"job"`
	GPUs []GPUPlan  `json:"gpus"`
}

// GPUPlan is how a job does on one GPU kind.
type GPUPlan struct {
	GPU gpu.GPU `json:"gpu"`
	// Fit compares the job's device peak on this GPU with its memory.
	Fit plan.Fit `json:"fit"`
	// MaxBatch is the largest per-device batch that fits.
	MaxBatch *SearchAnswer `json:"max_batch"`
	// MaxSeqLen is the longest sequence that fits.
	MaxSeqLen *SearchAnswer `json:"max_seq_len"`
	// MinGPUs is the fewest GPUs of this kind that fit (tensor parallel
	// for inference and serving).
	MinGPUs *SearchAnswer `json:"min_gpus"`
	// Error is the estimator's error on this GPU kind, if any.
	Error string `json:"error,omitempty"`
}

// SearchAnswer is one inverse-search answer, as gpumem fit prints it.
type SearchAnswer struct {
	// Value is the answer: the largest (or smallest) value that fits.
	Value int `json:"value"`
	// NeedBytes is the device peak at Value.
	NeedBytes units.Bytes `json:"need_bytes,omitempty"`
	// Limit is the search limit; Value == Limit means "at least".
	Limit int `json:"limit"`
	// Stop says why the next value does not fit.
	Stop  string `json:"stop,omitempty"`
	Error string `json:"error,omitempty"`
	// NoFit is true when even the smallest value does not fit.
	NoFit bool `json:"no_fit,omitempty"`
}

func newAnswer(found plan.Found, err error) *SearchAnswer {
	a := &SearchAnswer{Value: found.Value, Limit: found.Limit, Stop: found.Stop}
	if err != nil {
		a.Value, a.Error, a.NoFit = 0, err.Error(), errors.Is(err, plan.ErrNoFit)
		return a
	}
	a.NeedBytes = plan.Need(found.Result)
	return a
}

func (s *Server) planRequest(w http.ResponseWriter, r *http.Request) (PlanRequest, error) {
	var req PlanRequest
	if r.Method == http.MethodPost {
		if err := s.decodeBody(w, r, &req); err != nil {
			return req, err
		}
	} else {
		q := r.URL.Query()
		job, err := jobFromQuery(q, "model", "gpus")
		if err != nil {
			return req, err
		}
		req = PlanRequest{Model: q.Get("model"), Job: job}
		for _, v := range q["gpus"] {
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p != "" {
					req.GPUs = append(req.GPUs, p)
				}
			}
		}
	}
	if len(req.GPUs) > maxPlanGPUs {
		return req, badRequest("gpus", "gpus: at most %d GPU kinds, got %d", maxPlanGPUs, len(req.GPUs))
	}
	return req, validateJob(&req.Job)
}

func (s *Server) handlePlan(w http.ResponseWriter, r *http.Request) {
	req, err := s.planRequest(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	gs, err := s.selectGPUs(req.GPUs)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	m, err := s.model(r.Context(), req.Model)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	job := req.Job
	job.GPU, job.GPUMemory = "", 0
	est := plan.For(m)
	rep := PlanReport{Model: m.ID, Job: job, GPUs: make([]GPUPlan, 0, len(gs))}
	var firstErr error
	for _, g := range gs {
		p, err := planOne(est, job, g)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		rep.GPUs = append(rep.GPUs, p)
	}
	if firstErr != nil && allFailed(rep.GPUs) {
		// The job itself is wrong, not its fit on some GPU.
		s.writeError(w, r, firstErr)
		return
	}
	s.writeJSON(w, http.StatusOK, rep)
}

func allFailed(ps []GPUPlan) bool {
	for _, p := range ps {
		if p.Error == "" {
			return false
		}
	}
	return true
}

// planOne checks job on g and runs the inverse searches, calling the plan
// package as gpumem fit does for one GPU.
func planOne(est plan.EstimateFunc, job memory.Job, g gpu.GPU) (GPUPlan, error) {
	p := GPUPlan{GPU: g}
	res, err := est(plan.OnGPU(job, g))
	if err != nil {
		p.Error = err.Error()
		return p, err
	}
	p.Fit = plan.Check(res, g)
	p.MaxBatch = newAnswer(plan.MaxBatch(est, job, g, maxBatchSearched))
	p.MaxSeqLen = newAnswer(plan.MaxSeqLen(est, job, g, minSeqLenSearched, maxSeqLenSearched))
	if job.Mode == memory.Inference || job.Mode == memory.Serving {
		p.MinGPUs = newAnswer(plan.MinTP(est, job, g, maxGPUsSearched))
	} else {
		p.MinGPUs = newAnswer(plan.MinGPUs(est, job, g, maxGPUsSearched))
	}
	return p, nil
}

// selectGPUs looks up names in the catalog; none means every GPU.
func (s *Server) selectGPUs(names []string) ([]gpu.GPU, error) {
	if len(names) == 0 {
		return s.opts.GPUs.All(), nil
	}
	gs := make([]gpu.GPU, 0, len(names))
	for i, n := range names {
		g, err := s.opts.GPUs.Lookup(n)
		if err != nil {
			return nil, badRequest("gpus", "gpus[%s]: %v", strconv.Itoa(i), err)
		}
		gs = append(gs, g)
	}
	return gs, nil
}

// filterGPUs keeps the GPUs whose name, alias, vendor or architecture
// contains filter (case-insensitive), as gpumem gpus does.
func filterGPUs(all []gpu.GPU, filter string) []gpu.GPU {
	filter = strings.ToLower(filter)
	out := []gpu.GPU{}
	for _, g := range all {
		hay := strings.ToLower(strings.Join(append([]string{g.Name, g.Vendor, g.Arch}, g.Aliases...), " "))
		if filter == "" || strings.Contains(hay, filter) {
			out = append(out, g)
		}
	}
	return out
}
