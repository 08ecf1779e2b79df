package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/report"
)

// maxModelRef bounds the length of a model reference.
const maxModelRef = 512

func (s *Server) handleEstimate(w http.ResponseWriter, r *http.Request) {
	in, err := s.readInput(w, r, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	job, _, err := plan.ResolveGPU(s.opts.GPUs, in.job)
	if err != nil {
		s.writeError(w, r, badRequest("gpu", "gpu: %v", err))
		return
	}
	res, err := memory.Estimate(in.model, job)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res.Warnings = slices.Concat(in.warnings, res.Warnings)
	s.writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleParams(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := onlyKeys(q, "model"); err != nil {
		s.writeError(w, r, err)
		return
	}
	m, err := s.model(r.Context(), q.Get("model"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, report.NewParamsReport(m))
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := onlyKeys(q, "filter"); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, report.ModelRows(q.Get("filter")))
}

func (s *Server) handleGPUs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := onlyKeys(q, "filter"); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, gpu.Filter(s.opts.GPUs.All(), q.Get("filter")))
}

func (s *Server) handleOptimizers(w http.ResponseWriter, r *http.Request) {
	if err := onlyKeys(r.URL.Query()); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, memory.Optimizers())
}

// onlyKeys rejects query keys other than allowed.
func onlyKeys(q map[string][]string, allowed ...string) error {
	for k := range q {
		if !contains(allowed, k) {
			if len(allowed) == 0 {
				return badRequest(k, "unknown query key %q (this route takes none)", k)
			}
			return badRequest(k, "unknown query key %q (want %s)", k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// errNoModel is the error of an empty model reference.
var errNoModel = errors.New("missing")

// model resolves the model query key, with errors naming it.
func (s *Server) model(ctx context.Context, ref string) (*model.Model, error) {
	m, err := s.lookupModel(ctx, ref)
	switch {
	case errors.Is(err, errNoModel):
		return nil, badRequest("model", "model: missing; give a catalog id or alias such as llama3-8b (GET /api/models lists them)")
	case err != nil:
		return nil, badRequest("model", "model %v", err)
	}
	return m, nil
}

// lookupModel resolves ref; its errors say what is wrong with the
// reference without naming the key. Catalog models are parsed once and
// kept: estimates only read them, and the page asks for the same model
// on every change.
func (s *Server) lookupModel(ctx context.Context, ref string) (*model.Model, error) {
	ref = strings.TrimSpace(ref)
	switch {
	case ref == "":
		return nil, errNoModel
	case len(ref) > maxModelRef:
		return nil, fmt.Errorf("reference longer than %d characters", maxModelRef)
	}
	key := strings.ToLower(ref)
	s.mu.RLock()
	m, ok := s.models[key]
	s.mu.RUnlock()
	if ok {
		return m, nil
	}
	m, err := model.Lookup(ref)
	if err == nil {
		s.mu.Lock()
		if len(s.models) < maxCachedModels {
			s.models[key] = m
		}
		s.mu.Unlock()
		return m, nil
	}
	if s.opts.Resolve != nil && errors.Is(err, model.ErrNotFound) {
		m, err = s.opts.Resolve(ctx, ref)
	}
	if err != nil {
		return nil, fmt.Errorf("%q: %w", ref, err)
	}
	return m, nil
}
