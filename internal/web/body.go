package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gpumem/gpumem/internal/decoded"
	"github.com/gpumem/gpumem/jobfile"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
)

// A POST body is a job file in JSON, read by [jobfile.ParseJSON]: the
// keys, human sizes ("gpu_memory": "80GiB", "trainable_params": "1.2M"),
// size-only models ({"num_parameters": "7B"}), the engine-calculator
// layout and the checks of gpumem estimate --config and gpumem validate,
// by the same code. A body with problems gets one 400 listing all of
// them, as gpumem validate lists them.

// requestBody names a POST body in messages.
const requestBody = "request body"

// jobInput is the model and job of a request.
type jobInput struct {
	model *model.Model
	job   memory.Job
	// warnings go before the estimate's own, as gpumem estimate puts
	// them: the model's (a synthetic model's assumed shape, a stand-in
	// for a model that could not be read, defaults it took).
	warnings []string
	// gpus are the GPU kinds /api/plan checks.
	gpus []string
}

// readInput reads the model and job of a GET query or a POST body; plan
// says the request may name GPU kinds ("gpus").
func (s *Server) readInput(w http.ResponseWriter, r *http.Request, plan bool) (jobInput, error) {
	if r.Method == http.MethodPost {
		return s.bodyInput(w, r, plan)
	}
	var in jobInput
	q := r.URL.Query()
	extra := []string{"model"}
	if plan {
		extra = append(extra, "gpus")
		in.gpus = splitList(q["gpus"])
	}
	j, err := jobFromQuery(q, extra...)
	if err != nil {
		return in, err
	}
	if err := validateJob(&j); err != nil {
		return in, err
	}
	in.job = j
	if in.model, err = s.model(r.Context(), q.Get("model")); err != nil {
		return in, err
	}
	in.warnings = in.model.Warnings
	return in, nil
}

// bodyInput reads a POST body as a job file. Problems of the file, of
// its model and of "gpus" come back together in one error.
func (s *Server) bodyInput(w http.ResponseWriter, r *http.Request, plan bool) (jobInput, error) {
	var in jobInput
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		return in, readError(err)
	}
	if strings.TrimSpace(string(data)) == "" {
		return in, badRequest("", "%s: want a JSON object, got nothing", requestBody)
	}
	var extra []string
	if plan {
		extra = []string{"gpus"}
	}
	jf, taken, err := jobfile.ParseJSON(data, requestBody, extra...)
	var je *jobfile.Error
	switch {
	case errors.As(err, &je) && jf == nil:
		return in, problemsError(je.Problems) // not a JSON object
	case err != nil && je == nil:
		return in, badRequest("", "%s: %v", requestBody, err)
	}
	var problems []jobfile.Problem
	if je != nil {
		problems = je.Problems
	}
	var m *model.Model
	if !jobfile.Mentions(problems, "model") {
		var p *jobfile.Problem
		if m, p = s.fileModel(r.Context(), jf); p != nil {
			problems = append(problems, *p)
		}
	}
	if plan {
		gpus, p := gpuNames(taken["gpus"])
		if p != nil {
			problems = append(problems, *p)
		}
		in.gpus = gpus
	}
	if len(problems) > 0 {
		return in, problemsError(problems)
	}
	in.model, in.job, in.warnings = m, jf.Job, m.Warnings
	return in, nil
}

// fileModel resolves the model a job file gives: a reference, through
// the server's catalog and resolver, or a size, as a synthetic model.
func (s *Server) fileModel(ctx context.Context, jf *jobfile.File) (*model.Model, *jobfile.Problem) {
	switch {
	case jf.Shape != nil:
		m, err := jf.SyntheticModel()
		if err != nil {
			return nil, &jobfile.Problem{Key: "model", Message: err.Error()}
		}
		return m, nil
	case jf.Model == "":
		p := jobfile.MissingModel()
		return nil, &p
	}
	m, err := s.lookupModel(ctx, jf.Model)
	if err != nil {
		return nil, &jobfile.Problem{Key: "model", Message: err.Error()}
	}
	return m, nil
}

// gpuNames reads the "gpus" key of a plan body: an array of GPU names.
func gpuNames(v any) ([]string, *jobfile.Problem) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, &jobfile.Problem{Key: "gpus", Message: fmt.Sprintf("want an array of GPU names, got %s", decoded.Kind(v))}
	}
	names := make([]string, 0, len(list))
	for i, e := range list {
		name, ok := e.(string)
		if !ok {
			return nil, &jobfile.Problem{Key: fmt.Sprintf("gpus[%d]", i), Message: fmt.Sprintf("want a GPU name, got %s", decoded.Kind(e))}
		}
		if name = strings.TrimSpace(name); name != "" {
			names = append(names, name)
		}
	}
	return names, nil
}

// problemsError is the 400 of a body with problems: the message lists
// them as gpumem validate does, the field is the top-level key of the
// first, and the list itself is in Problems.
func problemsError(problems []jobfile.Problem) *Error {
	msg := (&jobfile.Error{File: requestBody, Problems: problems}).Error()
	return &Error{Message: msg, Field: topKey(problems[0].Key), Problems: problems, status: http.StatusBadRequest}
}

// topKey is the request key a problem's key path starts with:
// "constants" for "constants.fragmentaton", "gpus" for "gpus[2]".
func topKey(path string) string {
	if i := strings.IndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return path
}

// readError turns an error reading the body into a 413 (over the limit)
// or a 400.
func readError(err error) *Error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &Error{Message: fmt.Sprintf("request body larger than %d bytes", mbe.Limit), status: http.StatusRequestEntityTooLarge}
	}
	return badRequest("", "%s: %v", requestBody, err)
}

// splitList reads repeated or comma-separated query values.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
