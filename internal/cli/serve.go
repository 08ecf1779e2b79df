package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/web"
	"github.com/gpumem/gpumem/model"
)

type serveOptions struct {
	Addr       string
	AllowPaths bool
	Offline    bool
	LogFormat  string
	GPUsFile   string
	AccessLog  int
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
--allow-local-paths is given. Answers are compact JSON; add ?pretty to any request for
the indented JSON the commands print. Errors are logged to stderr, and requests too
with --access-log. The server stops gracefully on SIGINT or SIGTERM.`,
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
	opts := web.Options{Resolve: serveResolver(f, o), GPUs: cat, Logger: logger, AccessLog: o.AccessLog}
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

// serveResolver resolves request models the way gpumem estimate resolves
// --model, refusing local paths unless allowed.
func serveResolver(f *Factory, o *serveOptions) web.ResolveFunc {
	ho := hubOptions{Offline: o.Offline}
	return func(ctx context.Context, ref string) (*model.Model, error) {
		if !o.AllowPaths && mayReadLocal(ref) {
			if _, err := model.Lookup(ref); err != nil {
				if _, statErr := os.Stat(ref); !looksLikeLocalPath(ref) && statErr != nil {
					return nil, err // a name the catalog lacks: its error names the closest
				}
				return nil, fmt.Errorf("%q: %w", ref, errLocalPath)
			}
		}
		return resolveModelWith(ctx, f, ref, ho)
	}
}

// mayReadLocal reports whether resolving ref could read a file on this
// machine: it is not of the Hub's org/name form, looks like a path, or
// names something that exists here ("models/config.json" is both).
func mayReadLocal(ref string) bool {
	if !looksLikeHubID(ref) || strings.ContainsAny(ref, `\~`) || strings.HasPrefix(ref, ".") || strings.HasSuffix(ref, ".json") {
		return true
	}
	name, _, _ := strings.Cut(ref, "@")
	_, err := os.Stat(name)
	return err == nil
}
