package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/web"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/modelref"
)

type serveOptions struct {
	Addr       string
	AllowPaths bool
	Offline    bool
	LogFormat  string
	GPUsFile   string
	// RequestTimeout is --request-timeout: each request's deadline.
	RequestTimeout time.Duration
	AccessLog      int
}

func newServeCmd(f *Factory, g *globalOptions) *cobra.Command {
	opts := &serveOptions{}
	cmd := &cobra.Command{
		Use:     "serve",
		GroupID: "estimate",
		Short:   "Serve the HTTP JSON API and the web page",
		Long: `Serve gpumem over HTTP: a JSON API whose answers are exactly what the commands print
with --format json, and a page to explore a job's memory in the browser (model picker,
every option, a breakdown chart, GPU fit and what fits). Everything is embedded; the
page works offline.

  GET  /api/estimate?model=llama3-8b&seq_len=4096   (or POST the job as JSON)
  GET  /api/params?model=llama3-8b
  GET  /api/models?filter=qwen
  GET  /api/gpus
  GET  /api/optimizers
  POST /api/plan                                    (fit, largest batch and sequence per GPU)

Models are catalog ids or aliases, and Hub ids resolved as 'gpumem estimate' does
(HF_TOKEN, HF_HOME, HF_HUB_OFFLINE). Paths on this machine are refused unless
--allow-local-paths is given. Each request has a deadline (--request-timeout); one
that passes it, waiting on a slow Hub, gets a 504 with a JSON error. Answers are compact
JSON; add ?pretty to any request for the indented JSON the commands print. Errors are
logged to stderr, and requests too with --access-log. The server stops gracefully on
SIGINT or SIGTERM.`,
		Example: `  gpumem serve
  gpumem serve --addr 127.0.0.1:9000
  curl -s 'http://127.0.0.1:8080/api/estimate?model=llama3-8b&seq_len=4096&method=lora'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return serveRun(cmd.Context(), f, opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Addr, "addr", "127.0.0.1:8080", "address to listen on, host:port (port 0 picks a free one)")
	fs.BoolVar(&opts.AllowPaths, "allow-local-paths", false, "let requests name config files and model folders on this machine")
	fs.BoolVar(&opts.Offline, "offline", false, "resolve Hub ids from the local Hugging Face cache only")
	fs.StringVar(&opts.LogFormat, "log-format", "text", "log format on stderr: text or json")
	fs.IntVar(&opts.AccessLog, "access-log", 0, "log one request in N to stderr (0: none, 1: every request)")
	fs.DurationVar(&opts.RequestTimeout, "request-timeout", web.DefaultRequestTimeout, "the longest one request may take (resolving a Hub model included); it must be below the server's "+web.WriteTimeout.String()+" write timeout")
	addGPUsFileFlag(fs, &opts.GPUsFile)
	return cmd
}

func serveRun(ctx context.Context, f *Factory, o *serveOptions) error {
	var h slog.Handler
	switch strings.ToLower(o.LogFormat) {
	case "text", "":
		h = slog.NewTextHandler(f.IO.ErrOut, nil)
	case "json":
		h = slog.NewJSONHandler(f.IO.ErrOut, nil)
	default:
		return usageErrorf("--log-format: unknown format %q (want text or json)", o.LogFormat)
	}
	if o.RequestTimeout <= 0 || o.RequestTimeout >= web.WriteTimeout {
		return usageErrorf("--request-timeout %s: want a duration above 0 and below the %s write timeout, so that a request past it still gets its error", o.RequestTimeout, web.WriteTimeout)
	}
	cat, err := loadGPUCatalog(o.GPUsFile)
	if err != nil {
		return err
	}
	logger := slog.New(h)
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("--addr: %w", err)}
	}
	if o.AccessLog < 0 {
		return usageErrorf("--access-log %d: want 0 (no access log), 1 (every request) or N (one request in N)", o.AccessLog)
	}
	opts := web.Options{Resolve: serveResolver(f, o), GPUs: cat, Logger: logger, RequestTimeout: o.RequestTimeout, AccessLog: o.AccessLog}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		opts.AllowedHosts = web.LoopbackHosts
	} else {
		logger.Warn("listening beyond this machine; the API has no authentication", "addr", ln.Addr().String())
	}
	logger.Info("serving", "url", "http://"+ln.Addr().String()+"/")
	return web.New(opts).Serve(ctx, ln)
}

// errLocalPath refuses paths on the server's machine by default: the page
// may be reached by others, and config files are the server's business.
var errLocalPath = errors.New("not a catalog model or Hub id; paths on the server are refused unless it runs with --allow-local-paths")

// serveResolver resolves request models as gpumem estimate resolves
// --model, with local paths refused unless allowed. modelref decides
// what is a path by its spelling alone when paths are refused, so the
// answer does not depend on what exists on the server's disk.
func serveResolver(f *Factory, o *serveOptions) web.ResolveFunc {
	ho := hubOptions{Offline: o.Offline}
	return func(ctx context.Context, ref string) (*model.Model, error) {
		src, err := modelref.Resolve(ctx, ref, modelref.Options{Hub: &lazyHub{f: f, ho: ho}, LocalPaths: o.AllowPaths})
		if errors.Is(err, modelref.ErrLocalPath) {
			return nil, errLocalPath
		}
		if err != nil {
			return nil, err
		}
		return src.Model, nil
	}
}
