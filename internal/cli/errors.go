package cli

import (
	"errors"
	"fmt"
)

// Exit codes, as the standard flag package and most CLIs use them.
const (
	ExitOK    = 0 // success
	ExitError = 1 // the command ran and failed (bad file, model not found, ...)
	ExitUsage = 2 // the command line itself is wrong (unknown flag, bad value)
	// ExitNoFit is returned by commands asked to check a fit (--fail-if-no-fit)
	// when the job does not fit.
	ExitNoFit = 3
)

// UsageError is an error in how the command was invoked: an unknown flag,
// a value of the wrong form, a missing argument. It maps to exit code 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// usageErrorf returns a *UsageError with a formatted message.
func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ExitCodeError carries a specific exit code with an optional message.
type ExitCodeError struct {
	Code int
	Err  error
}

func (e *ExitCodeError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Err.Error()
}
func (e *ExitCodeError) Unwrap() error { return e.Err }

// exitCode maps an error returned by a command to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	var ce *ExitCodeError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ExitError
}
