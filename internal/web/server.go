package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/report"
)

//go:embed static
var staticFiles embed.FS

// DefaultMaxBodyBytes is the largest request body the API reads: a job
// is a few hundred bytes, so 64 KiB leaves room without inviting abuse.
const DefaultMaxBodyBytes = 64 << 10

// Server timeouts (see [NewHTTPServer]). Estimates take microseconds, so
// the limits guard against slow clients, not slow work.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 10 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 120 * time.Second
	ShutdownTimeout   = 10 * time.Second
)

// maxCachedModels bounds the resolved-model cache.
const maxCachedModels = 256

// ResolveFunc turns a model reference from a request (a catalog id or
// alias, a Hub id, a path) into a model description.
type ResolveFunc func(ctx context.Context, ref string) (*model.Model, error)

// Options configure a [Server]. The zero value serves the embedded model
// and GPU catalogs only.
type Options struct {
	// Resolve resolves the model of a request. Nil means catalog ids and
	// aliases only ([model.Lookup]); the command line passes its own
	// resolver so Hub ids work as they do for gpumem estimate.
	Resolve ResolveFunc
	// GPUs is the GPU catalog (nil: [gpu.Default]).
	GPUs *gpu.Catalog
	// Logger receives access and error logs (nil: discard).
	Logger *slog.Logger
	// MaxBodyBytes limits request bodies (0: [DefaultMaxBodyBytes]).
	MaxBodyBytes int64
	// RequestTimeout bounds the work of one request (0:
	// [DefaultRequestTimeout]); it must be shorter than [WriteTimeout] so
	// that the answer is a JSON error rather than a closed connection.
	RequestTimeout time.Duration
	// AccessLog samples the access log: 0 (the default) logs no request,
	// 1 logs every request, n one request in n. A log line per request
	// cost the server about 7 % of its CPU under load; errors are logged
	// either way.
	AccessLog int
	// PlanCacheSize bounds the /api/plan answers kept for repeated
	// requests (0: [DefaultPlanCacheSize]; negative: none).
	PlanCacheSize int
	// AllowedHosts, when not empty, lists the host names (without port)
	// requests may address; others get 403. A server on a loopback
	// address sets it to the loopback names so that a web site whose name
	// resolves to 127.0.0.1 (DNS rebinding) cannot read the API.
	AllowedHosts []string
}

// Server answers the API and serves the page. Create it with [New]; it is
// safe for concurrent use.
type Server struct {
	opts    Options
	log     *slog.Logger
	handler http.Handler

	mu     sync.RWMutex
	models map[string]*model.Model // catalog models by reference

	plans   *lru[planKey, cachedPlan] // answers of /api/plan, nil when off
	logSeen atomic.Uint64             // requests seen by the access log
}

// New returns a server with opts.
func New(opts Options) *Server {
	if opts.GPUs == nil {
		opts.GPUs = gpu.Default()
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	s := &Server{opts: opts, log: opts.Logger, models: map[string]*model.Model{}}
	switch {
	case opts.PlanCacheSize == 0:
		s.plans = newLRU[planKey, cachedPlan](DefaultPlanCacheSize)
	case opts.PlanCacheSize > 0:
		s.plans = newLRU[planKey, cachedPlan](opts.PlanCacheSize)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.handler = s.routes()
	return s
}

// Handler returns the HTTP handler of all routes with the middleware
// applied (security headers, the access log when enabled, panic recovery,
// same-origin checks, the pretty query key).
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	api := []struct {
		path    string
		methods []string
		h       http.HandlerFunc
	}{
		{"/api/estimate", []string{"GET", "POST"}, s.handleEstimate},
		{"/api/params", []string{"GET"}, s.handleParams},
		{"/api/models", []string{"GET"}, s.handleModels},
		{"/api/gpus", []string{"GET"}, s.handleGPUs},
		{"/api/optimizers", []string{"GET"}, s.handleOptimizers},
		{"/api/plan", []string{"GET", "POST"}, s.handlePlan},
	}
	for _, a := range api {
		for _, m := range a.methods {
			mux.HandleFunc(m+" "+a.path, a.h)
		}
		mux.Handle(a.path, methodNotAllowed(s, a.methods))
	}
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		s.writeJSON(w, http.StatusNotFound, &Error{Message: fmt.Sprintf("no API route %s", r.URL.Path)})
	})
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(static)
	notAllowed := methodNotAllowed(s, []string{"GET", "HEAD"})
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			notAllowed.ServeHTTP(w, r)
			return
		}
		if !validPagePath(r.URL.Path) {
			s.writeJSON(w, http.StatusBadRequest, &Error{Message: fmt.Sprintf("invalid path %q: want a file of the page, such as /", r.URL.Path)})
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeJSON(w, http.StatusForbidden, &Error{Message: "cross-origin requests are not allowed; use the page served by this server"})
	}))
	// Outermost first: every request is logged, including those a panic ended.
	h := s.recoverPanics(securityHeaders(s.prettyParam(s.checkHost(cop.Handler(s.deadline(mux))))))
	if s.opts.AccessLog > 0 {
		h = s.accessLog(h)
	}
	return h
}

// validPagePath reports whether p can name a file of the embedded page:
// valid UTF-8 whose cleaned form is a valid fs path. The file server
// answers 500 to the others (GET /%ff), which are the client's mistake.
func validPagePath(p string) bool {
	rel := strings.TrimPrefix(path.Clean("/"+p), "/")
	return utf8.ValidString(p) && (rel == "" || fs.ValidPath(rel))
}

func methodNotAllowed(s *Server, methods []string) http.Handler {
	allow := strings.Join(methods, ", ")
	if strings.Contains(allow, "GET") && !strings.Contains(allow, "HEAD") {
		allow = strings.Replace(allow, "GET", "GET, HEAD", 1)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		s.writeJSON(w, http.StatusMethodNotAllowed, &Error{Message: fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow)})
	})
}

// writeJSON writes v with status and a final newline: compact, or indented
// when the request asked for ?pretty, which gives exactly what the CLI's
// --format json prints (report.WriteJSON). Results are encoded by
// report's generated encoder, into a pooled buffer.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	bp := jsonBufs.Get().(*[]byte)
	body, err := report.AppendJSON((*bp)[:0], v, wantsPretty(w))
	if err != nil {
		s.log.Error("encode response", "err", err)
		status = http.StatusInternalServerError
		body = append(body[:0], `{"error": "internal server error"}`...)
	}
	writeRawJSON(w, status, append(body, '\n'))
	if cap(body) <= maxPooledJSON {
		*bp = body[:0]
		jsonBufs.Put(bp)
	}
}

// writeRawJSON writes body, JSON ending in a newline, with status.
func writeRawJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// jsonBufs holds response buffers for reuse; a buffer grown past
// maxPooledJSON by a rare large answer is left to the collector.
var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

const maxPooledJSON = 1 << 20

var jsonContentType = []string{"application/json; charset=utf-8"}

// NewHTTPServer returns an http.Server for h with the package's timeouts.
func NewHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// Serve serves s on ln until ctx ends, then shuts down gracefully: it stops
// accepting connections and waits up to [ShutdownTimeout] for requests in
// flight. It returns nil after a shutdown caused by ctx.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := NewHTTPServer(s.Handler(), s.log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "addr", ln.Addr().String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
