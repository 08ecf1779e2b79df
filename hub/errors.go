package hub

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
)

// Sentinel errors callers act on. Errors from this package wrap one of
// them (check with errors.Is) with the repository, file and HTTP status.
var (
	// ErrGated reports a gated or private model the request may not read:
	// the user has to accept the licence on the model page and pass a token.
	ErrGated = errors.New("gated or private model: accept the license on the model page and set HF_TOKEN")
	// ErrUnauthorized reports a token the Hub rejected (invalid or revoked).
	ErrUnauthorized = errors.New("the Hub rejected the token: check HF_TOKEN or the token file")
	// ErrNotFound reports a model, revision or file that does not exist.
	// A missing file also matches fs.ErrNotExist.
	ErrNotFound = errors.New("not found on the Hub")
	// ErrOffline reports that a file is needed from the Hub while offline
	// mode is on and the local cache does not hold it.
	ErrOffline = errors.New("offline mode is on and the file is not in the local cache")
	// ErrInvalidRef reports a malformed model id, revision or file name.
	ErrInvalidRef = errors.New("invalid model reference")
	// ErrUnreachable reports a request that got no answer: no network,
	// a name that does not resolve, a refused connection or a timeout.
	ErrUnreachable = errors.New("the Hub could not be reached")
)

// StatusError is an unsuccessful HTTP answer from the Hub or its CDN.
type StatusError struct {
	// Op is what was being done, e.g. "download config.json".
	Op string
	// Repo is the model id and File the file in it, when known.
	Repo, File string
	// Status is the HTTP status code.
	Status int
	// Code and Message are the Hub's X-Error-Code and X-Error-Message headers.
	Code, Message string
	// Endpoint is the Hub's base URL, for the model-page hint.
	Endpoint string
	// Commit is the Hub's X-Repo-Commit for the revision, when it sent one.
	Commit string
	// Kind is the sentinel this error wraps (ErrGated, ErrNotFound, ...), or nil.
	Kind error
	// entry is true when a file (not the repo or revision) is missing.
	entry bool
}

// Error describes the failure, with a hint for gated and missing models.
func (e *StatusError) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Repo != "" {
		fmt.Fprintf(&b, " %s", e.Repo)
	}
	if e.File != "" {
		fmt.Fprintf(&b, ": %s", e.File)
	}
	fmt.Fprintf(&b, ": HTTP %d %s", e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		fmt.Fprintf(&b, " (%s)", e.Message)
	}
	switch {
	case errors.Is(e.Kind, ErrGated):
		fmt.Fprintf(&b, ": gated or private model: accept the license on the model page (%s/%s) and set HF_TOKEN", e.Endpoint, e.Repo)
	case errors.Is(e.Kind, ErrUnauthorized):
		b.WriteString(": " + ErrUnauthorized.Error())
	case e.entry:
		b.WriteString(": no such file in this revision")
	case errors.Is(e.Kind, ErrNotFound):
		b.WriteString(": no such model or revision (check the id; private models also need HF_TOKEN)")
	}
	return b.String()
}

// Unwrap returns the sentinel, and fs.ErrNotExist for a missing file.
func (e *StatusError) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.entry {
		out = append(out, fs.ErrNotExist)
	}
	return out
}

// classify sets Kind from the status and the Hub's error headers, as
// huggingface_hub's hf_raise_for_status reads them (X-Error-Code
// GatedRepo, RepoNotFound, RevisionNotFound, EntryNotFound).
func (e *StatusError) classify(tokenSent bool) {
	switch {
	case e.Code == "GatedRepo":
		e.Kind = ErrGated
	case e.Code == "EntryNotFound":
		e.Kind, e.entry = ErrNotFound, true
	case e.Code == "RepoNotFound" || e.Code == "RevisionNotFound":
		// The Hub also answers 401 RepoNotFound to anonymous requests
		// for private repositories; the message says so.
		e.Kind = ErrNotFound
	case e.Status == http.StatusUnauthorized && tokenSent:
		e.Kind = ErrUnauthorized
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		e.Kind = ErrGated
	case e.Status == http.StatusNotFound:
		e.Kind = ErrNotFound
		e.entry = e.File != ""
	}
}

// retryable reports whether a status is worth another attempt.
func retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// redactedError hides a secret in the message of a wrapped error.
type redactedError struct {
	err    error
	secret string
}

func (e *redactedError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.secret, redacted)
}

func (e *redactedError) Unwrap() error { return e.err }

// redact makes sure err's message never shows the token.
func redact(err error, token Secret) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), string(token)) {
		return err
	}
	return &redactedError{err: err, secret: string(token)}
}
