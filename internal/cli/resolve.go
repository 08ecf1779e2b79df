package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/hub"
	"github.com/gpumem/gpumem/model"
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
// local Hugging Face cache.
func resolveModel(ctx context.Context, f *Factory, ref string) (*model.Model, error) {
	return resolveModelWith(ctx, f, ref, hubOptions{})
}

// resolveModelWith is resolveModel with Hub flags.
func resolveModelWith(ctx context.Context, f *Factory, ref string, ho hubOptions) (*model.Model, error) {
	if ref == "" {
		return nil, usageErrorf("no model given: pass --model (a catalog id or alias such as llama3-8b, a Hub id, or a path to config.json); 'gpumem models' lists the catalog")
	}
	if ho.Revision == "" {
		m, err := model.Load(ref)
		if err == nil || !errors.Is(err, model.ErrNotFound) || !looksLikeHubID(ref) {
			return m, err
		}
	}
	hr, err := parseHubRef(ref, ho)
	if err != nil {
		return nil, err
	}
	c, err := newHubClient(f, ho)
	if err != nil {
		return nil, err
	}
	snap, err := c.FetchConfig(ctx, hr)
	if err != nil {
		return nil, catalogHint(hubError(err), hr.Repo)
	}
	m, err := model.ParseFS(snap, ".")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", hr, err)
	}
	m.ID = hr.String()
	m.Warnings = append(m.Warnings, snap.Warnings...)
	return m, nil
}

// looksLikeHubID reports whether ref has the "org/name" form of a Hub id.
func looksLikeHubID(ref string) bool {
	name, _, _ := strings.Cut(ref, "@")
	return strings.Count(name, "/") == 1
}

// parseHubRef parses ref as a Hub id, applying --revision.
func parseHubRef(ref string, ho hubOptions) (hub.Ref, error) {
	hr, err := hub.ParseRef(ref)
	if err != nil {
		return hub.Ref{}, usageErrorf("--model %q: %w", ref, err)
	}
	if ho.Revision != "" {
		if hr.Revision != "" && hr.Revision != ho.Revision {
			return hub.Ref{}, usageErrorf("revision given twice: %q in --model and --revision %q", hr.Revision, ho.Revision)
		}
		if err := hub.ValidateRevision(ho.Revision); err != nil {
			return hub.Ref{}, usageErrorf("--revision: %w", err)
		}
		hr.Revision = ho.Revision
	}
	return hr, nil
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

// catalogHint names the catalog models closest to a Hub id that could
// not be fetched (the Hub unreachable, or no such model): an -Instruct
// or -chat variant usually shares its base model's architecture.
func catalogHint(err error, repo string) error {
	if !errors.Is(err, hub.ErrUnreachable) && !errors.Is(err, hub.ErrNotFound) {
		return err
	}
	near := model.Suggest(repo, 3)
	if len(near) == 0 {
		return fmt.Errorf("%w; pass a path to its config.json or model folder instead", err)
	}
	return fmt.Errorf("%w; the embedded catalog's closest: %s (or pass a path to its config.json or model folder)", err, strings.Join(near, ", "))
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
