package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/hub"
	"github.com/gpumem/gpumem/internal/fsutil"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/modelref"
)

// hubOptions are the Hub settings a command may take as flags; the
// environment supplies the rest (see hubConfig).
type hubOptions struct {
	// Revision is --revision: a branch, tag or commit ("" = main, or the
	// revision written as org/name@revision).
	Revision string
	// Offline is --offline: use only the local Hub cache, as HF_HUB_OFFLINE=1.
	Offline bool
}

// addHubFlags declares --revision and --offline on fs.
func addHubFlags(fs *pflag.FlagSet, o *hubOptions) {
	fs.StringVar(&o.Revision, "revision", "", "Hub revision: branch, tag or commit hash (default main)")
	fs.BoolVar(&o.Offline, "offline", false, "use only the local Hugging Face cache, never the network (as HF_HUB_OFFLINE=1)")
}

// resolveModel turns a --model value into a model description: a catalog
// id or alias, a path to a config.json, a path to a model folder, or a
// Hub id ("org/name" or "org/name@revision") fetched from the Hub or the
// local Hugging Face cache. Package modelref decides which, and stands in
// for a release or a path it cannot read with a note in the model's
// warnings.
func resolveModel(ctx context.Context, f *Factory, ref string) (*model.Model, error) {
	return resolveModelWith(ctx, f, ref, hubOptions{})
}

// resolveModelWith is resolveModel with Hub flags.
func resolveModelWith(ctx context.Context, f *Factory, ref string, ho hubOptions) (*model.Model, error) {
	src, err := resolveSource(ctx, f, ref, ho, modelref.Options{LocalPaths: true})
	if err != nil {
		return nil, err
	}
	return src.Model, nil
}

// resolveSource resolves ref with the Hub of the environment and flags
// (built only when a Hub id needs it) and o's other options, and words
// the errors for the command line.
func resolveSource(ctx context.Context, f *Factory, ref string, ho hubOptions, o modelref.Options) (*modelref.Source, error) {
	if ref == "" {
		return nil, usageErrorf("no model given: pass --model (a catalog id or alias such as llama3-8b, a Hub id, or a path to config.json); 'gpumem models' lists the catalog")
	}
	if isGGUF(ref) {
		return nil, ggufModelError(ref)
	}
	o.Hub, o.Revision = &lazyHub{f: f, ho: ho}, ho.Revision
	src, err := modelref.Resolve(ctx, ref, o)
	if err != nil {
		if o.LocalPaths && hasGGUFMagic(ref) {
			return nil, ggufModelError(ref)
		}
		if errors.Is(err, fs.ErrNotExist) && strings.Contains(strings.ToLower(ref), "gguf") {
			return nil, fmt.Errorf("%w (for a repository of GGUF files, 'gpumem inspect %s' estimates one as llama.cpp runs it)", refError(ref, err), ref)
		}
		return nil, refError(ref, err)
	}
	return src, nil
}

// ggufModelError points a GGUF model given to a command that reads
// config.json models to 'gpumem inspect', which estimates GGUF files.
func ggufModelError(ref string) error {
	return usageErrorf("%s is a GGUF file, which this command does not read (it estimates models described by a config.json); "+
		"'gpumem inspect %s' estimates it as llama.cpp runs it, with llama.cpp's flags (-c, -ngl, -ctk, -ctv, -fa, -np, -ub)", ref, ref)
}

// hasGGUFMagic reports whether ref is a local file that starts with the
// GGUF magic, whatever its name.
func hasGGUFMagic(ref string) bool {
	// fsutil.Open refuses devices and FIFOs before opening them: opening
	// a FIFO would block until a writer came.
	f, err := fsutil.Open(ref)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == "GGUF"
}

// refError adds what to do next on the command line to a resolver
// error: a malformed reference is a usage error.
func refError(ref string, err error) error {
	if errors.Is(err, hub.ErrInvalidRef) {
		return usageErrorf("--model %q: %w", ref, err)
	}
	return hubError(err)
}

// hubError adds what to do next to the Hub's sentinel errors.
func hubError(err error) error {
	switch {
	case errors.Is(err, hub.ErrOffline):
		return fmt.Errorf("%w (unset HF_HUB_OFFLINE and drop --offline to fetch it)", err)
	case errors.Is(err, hub.ErrUnauthorized):
		return fmt.Errorf("%w (create a read token at https://huggingface.co/settings/tokens)", err)
	}
	return err
}

// lazyHub builds the Hub client on first use, so that catalog models and
// local files never read the Hub settings.
type lazyHub struct {
	f    *Factory
	ho   hubOptions
	once sync.Once
	c    *hub.Client
	err  error
}

// client builds the client once.
func (l *lazyHub) client() (*hub.Client, error) {
	l.once.Do(func() { l.c, l.err = newHubClient(l.f, l.ho) })
	return l.c, l.err
}

// FetchConfig fetches a model's config files with the client.
func (l *lazyHub) FetchConfig(ctx context.Context, ref hub.Ref) (*hub.Snapshot, error) {
	c, err := l.client()
	if err != nil {
		return nil, err
	}
	return c.FetchConfig(ctx, ref)
}

// Get fetches one file whole with the client.
func (l *lazyHub) Get(ctx context.Context, ref hub.Ref, file string) (*hub.Fetched, error) {
	c, err := l.client()
	if err != nil {
		return nil, err
	}
	return c.Get(ctx, ref, file)
}

// Open opens one file for Range reads with the client.
func (l *lazyHub) Open(ctx context.Context, ref hub.Ref, file string) (hub.File, error) {
	c, err := l.client()
	if err != nil {
		return nil, err
	}
	return c.Open(ctx, ref, file)
}

// newHubClient builds a Hub client from the environment and flags.
func newHubClient(f *Factory, ho hubOptions) (*hub.Client, error) {
	cfg, err := hubConfig(f.Getenv)
	if err != nil {
		return nil, err
	}
	cfg.Offline = cfg.Offline || ho.Offline
	cfg.HTTPClient = f.HTTPClient
	cfg.Progress = newProgress(f.IO.ErrOut, f.IO.ErrTTY)
	return hub.New(cfg)
}

// hubConfig reads the Hugging Face environment variables the way
// huggingface_hub does (huggingface_hub: constants.py): HF_ENDPOINT,
// HF_TOKEN (else the file at HF_TOKEN_PATH, default $HF_HOME/token),
// HF_HOME (default $XDG_CACHE_HOME/huggingface, else
// ~/.cache/huggingface), HF_HUB_CACHE (default $HF_HOME/hub),
// HF_HUB_OFFLINE and HF_HUB_DOWNLOAD_TIMEOUT (seconds per request).
func hubConfig(getenv func(string) string) (hub.Config, error) {
	home := firstEnv(getenv, "HF_HOME")
	if home == "" {
		cache := getenv("XDG_CACHE_HOME")
		if cache == "" {
			user := firstEnv(getenv, "HOME", "USERPROFILE")
			if user != "" {
				cache = filepath.Join(user, ".cache")
			}
		}
		if cache != "" {
			home = filepath.Join(cache, "huggingface")
		}
	}
	cfg := hub.Config{
		Endpoint: getenv("HF_ENDPOINT"),
		Token:    hub.Secret(strings.TrimSpace(firstEnv(getenv, "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"))),
		CacheDir: firstEnv(getenv, "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"),
		Offline:  isTrue(getenv("HF_HUB_OFFLINE")),
	}
	if v := getenv("HF_HUB_DOWNLOAD_TIMEOUT"); v != "" {
		secs, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(secs > 0 && secs <= 3600) { // false for NaN too
			return cfg, fmt.Errorf("HF_HUB_DOWNLOAD_TIMEOUT=%q: want a number of seconds between 0 and 3600", v)
		}
		cfg.Timeout = time.Duration(secs * float64(time.Second))
	}
	if cfg.CacheDir == "" && home != "" {
		cfg.CacheDir = hub.CacheDirFor(home)
	}
	if cfg.Token == "" {
		path := getenv("HF_TOKEN_PATH")
		if path == "" && home != "" {
			path = hub.TokenFile(home)
		}
		if path != "" {
			tok, err := hub.ReadTokenFile(path)
			if err != nil {
				return cfg, err
			}
			cfg.Token = tok
		}
	}
	return cfg, nil
}

func firstEnv(getenv func(string) string, keys ...string) string {
	for _, k := range keys {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// isTrue reads a boolean environment value as huggingface_hub's
// _is_true does: 1, ON, YES, TRUE in any case.
func isTrue(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

// progress draws one status line on a terminal's stderr; when stderr is
// piped it stays silent, so logs and scripts see only results.
type progress struct {
	mu  sync.Mutex
	w   io.Writer
	tty bool
}

func newProgress(w io.Writer, tty bool) hub.Progress {
	if w == nil {
		w = io.Discard
	}
	return &progress{w: w, tty: tty}
}

// Update redraws the status line; the line is cleared when a task ends.
func (p *progress) Update(task string, done, total int64) {
	if !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case total > 0 && done >= total:
		fmt.Fprint(p.w, "\r\033[K")
	case total > 0:
		fmt.Fprintf(p.w, "\r\033[K%s %d/%d", task, done, total)
	default:
		fmt.Fprintf(p.w, "\r\033[K%s %d", task, done)
	}
}
