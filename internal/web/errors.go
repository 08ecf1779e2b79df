package web

import (
	"errors"
	"fmt"
	"net/http"

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
// 400 about the field the error names (see fieldOf).
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

// fieldOf names the request key an error is about: the job setting of a
// [memory.FieldError], "model" for a model that cannot be found or read,
// else "" (the request as a whole).
func fieldOf(err error) string {
	var fe *memory.FieldError
	if errors.As(err, &fe) {
		return fe.Key
	}
	var ce *model.ConfigError
	if errors.Is(err, model.ErrNotFound) || errors.Is(err, model.ErrUnsupportedArchitecture) || errors.As(err, &ce) {
		return "model"
	}
	return ""
}
