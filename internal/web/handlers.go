package web

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/report"
)

// maxModelRef bounds the length of a model reference.
const maxModelRef = 512

// EstimateRequest is the body of POST /api/estimate: the model and the
// job's options at the top level, under the JSON names of [memory.Job].
type EstimateRequest struct {
	// Model is a catalog id or alias, or a Hub id when the server resolves them.
	Model string `json:"model"`
	memory.Job
}

var errEmptyBody = errors.New("empty body")

// decodeBody decodes the JSON body of r into dst, rejecting unknown keys,
// trailing data and bodies over the server's limit.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, dst any) error {
	r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, io.EOF) {
			err = errEmptyBody
		}
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return decodeError(err)
		}
		return badRequest("", "request body: want one JSON object, got more data after it")
	}
	return nil
}

// jobRequest reads a request's model and job: a POST body decoded into
// body (an [EstimateRequest] or a [PlanRequest]), or a GET query, whose
// keys are the job's plus "model" and extra. model and job point into
// body. It returns the GET query (nil for a POST) for the extra keys.
func (s *Server) jobRequest(w http.ResponseWriter, r *http.Request, body any, model *string, job *memory.Job, extra ...string) (url.Values, error) {
	if r.Method == http.MethodPost {
		if err := s.decodeBody(w, r, body); err != nil {
			return nil, err
		}
		return nil, validateJob(job)
	}
	q := r.URL.Query()
	j, err := jobFromQuery(q, append([]string{"model"}, extra...)...)
	if err != nil {
		return q, err
	}
	*model, *job = q.Get("model"), j
	return q, validateJob(job)
}

// estimateRequest reads the model and job of a GET or POST request.
func (s *Server) estimateRequest(w http.ResponseWriter, r *http.Request) (EstimateRequest, error) {
	var req EstimateRequest
	_, err := s.jobRequest(w, r, &req, &req.Model, &req.Job)
	return req, err
}

func (s *Server) handleEstimate(w http.ResponseWriter, r *http.Request) {
	req, err := s.estimateRequest(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	m, err := s.model(r.Context(), req.Model)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	job, _, err := plan.ResolveGPU(s.opts.GPUs, req.Job)
	if err != nil {
		s.writeError(w, r, badRequest("gpu", "gpu: %v", err))
		return
	}
	res, err := memory.Estimate(m, job)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
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

// model resolves ref. Catalog models are parsed once and kept: estimates
// only read them, and the page asks for the same model on every change.
func (s *Server) model(ctx context.Context, ref string) (*model.Model, error) {
	ref = strings.TrimSpace(ref)
	switch {
	case ref == "":
		return nil, badRequest("model", "model: missing; give a catalog id or alias such as llama3-8b (GET /api/models lists them)")
	case len(ref) > maxModelRef:
		return nil, badRequest("model", "model: reference longer than %d characters", maxModelRef)
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
		return nil, badRequest("model", "model %q: %v", ref, err)
	}
	return m, nil
}
