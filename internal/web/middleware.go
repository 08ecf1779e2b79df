package web

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

// contentSecurityPolicy lets the page load scripts, styles, images and
// data from its own origin only: no inline scripts, no CDNs, no framing.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets the headers every response carries. No
// Access-Control-Allow-Origin is ever sent, so browsers keep the API
// same-origin.
func securityHeaders(next http.Handler) http.Handler {
	// The keys are canonical and the value slices are never modified, so
	// every response shares them instead of allocating its own.
	headers := http.Header{
		"Content-Security-Policy":      {contentSecurityPolicy},
		"X-Content-Type-Options":       {"nosniff"},
		"X-Frame-Options":              {"DENY"},
		"Referrer-Policy":              {"no-referrer"},
		"Cross-Origin-Opener-Policy":   {"same-origin"},
		"Cross-Origin-Resource-Policy": {"same-origin"},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for k, v := range headers {
			h[k] = v
		}
		next.ServeHTTP(w, r)
	})
}

// statusWriter records the status and size of a response for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// accessLog logs one structured line per request.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if !s.log.Enabled(r.Context(), slog.LevelInfo) {
			return
		}
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", sw.status),
			slog.Int("bytes", sw.bytes),
			slog.Duration("duration", time.Since(start)),
			slog.String("remote", r.RemoteAddr))
	})
}

// recoverPanics turns a panic in a handler into a 500 with a generic
// message; the panic value and stack go to the log, never to the client.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			s.writeJSON(w, http.StatusInternalServerError, &Error{Message: "internal server error"})
		}()
		next.ServeHTTP(w, r)
	})
}
