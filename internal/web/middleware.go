package web

import (
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
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

// accessLog logs one structured line per request, or per n requests with
// Options.AccessLog set to n.
func (s *Server) accessLog(next http.Handler) http.Handler {
	every := uint64(max(s.opts.AccessLog, 1))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.logSeen.Add(1)%every != 0 {
			next.ServeHTTP(w, r)
			return
		}
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

// prettyWriter marks a response whose JSON is to be indented.
type prettyWriter struct{ http.ResponseWriter }

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *prettyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wantsPretty reports whether w, or a writer it wraps, is a prettyWriter.
func wantsPretty(w http.ResponseWriter) bool {
	for {
		switch x := w.(type) {
		case *prettyWriter:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return false
		}
	}
}

// prettyParam takes the query key pretty off a request, so that the
// routes, which reject keys they do not know, never see it: ?pretty,
// ?pretty=1 or ?pretty=true indents the JSON answer as the CLI prints
// it, ?pretty=0 or false leaves it compact (the default).
func (s *Server) prettyParam(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.RawQuery, "pretty") {
			next.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		vals, ok := q["pretty"]
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		switch v := strings.ToLower(vals[len(vals)-1]); v {
		case "", "1", "true":
			w = &prettyWriter{w}
		case "0", "false":
		default:
			s.writeError(w, r, badRequest("pretty", "pretty: want true, false, 1, 0 or no value, got %q", v))
			return
		}
		q.Del("pretty")
		u := *r.URL
		u.RawQuery = q.Encode()
		r = r.WithContext(r.Context()) // a shallow copy whose URL can change
		r.URL = &u
		next.ServeHTTP(w, r)
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

// LoopbackHosts are the names of the local machine a browser uses for a
// server on a loopback address.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// checkHost rejects requests whose Host header is not one of the allowed
// host names (any port), when a list is set.
func (s *Server) checkHost(next http.Handler) http.Handler {
	if len(s.opts.AllowedHosts) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		for _, a := range s.opts.AllowedHosts {
			if strings.EqualFold(host, a) {
				next.ServeHTTP(w, r)
				return
			}
		}
		s.writeJSON(w, http.StatusForbidden, &Error{Message: "host " + r.Host + " is not served here; open the page through " + strings.Join(s.opts.AllowedHosts, " or ")})
	})
}
