package web

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/gpumem/gpumem/jobfile"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
)

// Error is the JSON body of every failed API request.
type Error struct {
	// Message says what was wrong and what was expected.
	Message string `json:"error"`
	// Field is the request key the problem is about (a query or JSON
	// key such as "seq_len"), empty when the request as a whole is wrong.
	Field string `json:"field,omitempty"`
	// Problems lists every problem of a POST body, as gpumem validate
	// lists those of a job file; Message lists them too.
	Problems []jobfile.Problem `json:"problems,omitempty"`

	status int
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// badRequest returns a 400 error about field.
func badRequest(field, format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...), Field: field, status: http.StatusBadRequest}
}

// writeError answers with err as JSON. Errors that are not *Error become a
// 400 whose field is guessed from the message.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Message: err.Error(), Field: fieldOf(err), status: http.StatusBadRequest}
	}
	if e.status == 0 {
		e.status = http.StatusBadRequest
	}
	s.writeJSON(w, e.status, e)
}

// flagRE finds the first command-line flag an estimator error names.
var flagRE = regexp.MustCompile(`--([a-z0-9][a-z0-9-]*)`)

// flagKeys maps the CLI flags whose JSON key is not the flag with
// underscores for dashes.
var flagKeys = map[string]string{
	"batch-size":      "batch",
	"compile":         "torch_compile",
	"virtual-stages":  "virtual_pipeline_stages",
	"gpu-memory":      "gpu_memory_bytes",
	"set":             "constants",
	"flashattn":       "attn",
	"lora":            "method",
	"qlora":           "method",
	"tensor-parallel": "tp",
}

// fieldOf names the request key an estimator error is about. The
// estimators speak in CLI flags ("--tp 3 does not divide ..."), which map
// onto the API's JSON keys.
func fieldOf(err error) string {
	msg := err.Error()
	if errors.Is(err, model.ErrNotFound) || errors.Is(err, model.ErrUnsupportedArchitecture) {
		return "model"
	}
	var ce *model.ConfigError
	if errors.As(err, &ce) {
		return "model"
	}
	switch {
	case strings.Contains(msg, "max_position_embeddings"):
		return "seq_len"
	case strings.HasPrefix(msg, "constants:"):
		return "constants"
	}
	m := flagRE.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	if k, ok := flagKeys[m[1]]; ok {
		return k
	}
	k := strings.ReplaceAll(m[1], "-", "_")
	if _, ok := memory.LookupJobKey(k); ok {
		return k
	}
	return ""
}
