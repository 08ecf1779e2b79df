package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// DefaultRequestTimeout bounds the work of one request: resolving a Hub
// model (whose requests are bounded one by one too, with retries) and
// estimating. It is shorter than [WriteTimeout], so the handler still
// has time to answer with a JSON error when it passes, instead of the
// server closing the connection on the client.
const DefaultRequestTimeout = 20 * time.Second

// errRequestDeadline is the cause of a request context that reached its
// deadline.
var errRequestDeadline = errors.New("the request's deadline passed")

// deadline gives each request's context a deadline of
// Options.RequestTimeout. A handler that begins its answer after the
// deadline has passed (its Hub requests cancelled, it returns their
// error) answers 504 with a JSON error instead, whatever it was about to
// write.
func (s *Server) deadline(next http.Handler) http.Handler {
	d := s.opts.RequestTimeout
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeoutCause(r.Context(), d, errRequestDeadline)
		defer cancel()
		next.ServeHTTP(&deadlineWriter{ResponseWriter: w, s: s, ctx: ctx, timeout: d}, r.WithContext(ctx))
	})
}

// deadlineWriter replaces an answer begun after the request's deadline
// by a 504 JSON error.
type deadlineWriter struct {
	http.ResponseWriter
	s       *Server
	ctx     context.Context
	timeout time.Duration
	started bool // the status line is decided
	expired bool // ... and it is the 504: the handler's writes are dropped
}

func (w *deadlineWriter) WriteHeader(code int) {
	if w.started {
		if !w.expired {
			w.ResponseWriter.WriteHeader(code) // let net/http report the superfluous call
		}
		return
	}
	w.started = true
	if errors.Is(context.Cause(w.ctx), errRequestDeadline) {
		w.expired = true
		w.s.writeJSON(w.ResponseWriter, http.StatusGatewayTimeout, &Error{Message: fmt.Sprintf(
			"the request did not finish within the server's %s deadline (a Hub model resolved too slowly?); try again, or name a catalog model", w.timeout)})
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	if w.expired {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
