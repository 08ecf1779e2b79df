package hub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"

	"github.com/gpumem/gpumem/internal/fsutil"
)

// maxSmallFile bounds files read whole into memory (configs, indexes).
// The largest safetensors indexes of 600B-parameter models are ~10 MiB.
const maxSmallFile = 64 << 20

// Fetched is a file read from the Hub or from the cache.
type Fetched struct {
	// Ref is the requested repository and revision.
	Ref Ref
	// Commit is the commit hash the revision resolved to; "" when unknown.
	Commit string
	// Name is the file's path in the repository.
	Name string
	// Data is the file's content.
	Data []byte
	// Path is the file in the local cache, "" when it was not cached.
	Path string
	// FromCache is true when no request was made, or when the Hub could
	// not be reached and the cached copy was used instead.
	FromCache bool
	// Warning notes a non-fatal problem (a cache write that failed, a
	// cached copy used because the Hub was unreachable).
	Warning string
}

// Get returns one file of ref, fetched from the Hub and written to the
// cache, or read from the cache when offline, when ref names a commit
// already cached, or when the Hub cannot be reached. A branch or tag is
// always checked with the Hub when online, as transformers does, so a
// moved branch is noticed.
func (c *Client) Get(ctx context.Context, ref Ref, file string) (*Fetched, error) {
	if err := validateRequest(ref, file); err != nil {
		return nil, err
	}
	rev := ref.rev()
	cache := Cache{Dir: c.cfg.CacheDir}
	if c.cacheFirst(rev) {
		if f, err := c.fromCache(ref, file); cacheAnswered(err) {
			return f, err
		}
	}
	if c.cfg.Offline {
		return nil, fmt.Errorf("%s: %s: %w (cache %q); run once without HF_HUB_OFFLINE to fill it", ref, file, ErrOffline, c.cfg.CacheDir)
	}
	resp, err := c.send(ctx, request{op: "download", repo: ref.Repo, file: file, method: http.MethodGet,
		url: c.resolveURL(ref.Repo, rev, file), follow: true, maxBody: maxSmallFile})
	if err != nil {
		return c.afterError(ref, file, err)
	}
	f := &Fetched{Ref: ref, Name: file, Data: resp.body, Commit: commitOf(resp, rev)}
	c.cfg.Progress.Update("download "+file, int64(len(f.Data)), int64(len(f.Data)))
	if c.cfg.CacheDir != "" && f.Commit != "" {
		etag := normalizeEtag(resp.hubHeader("X-Linked-Etag"), resp.hubHeader("ETag"))
		path, err := cache.Store(ref.Repo, rev, f.Commit, file, etag, f.Data)
		if err != nil {
			f.Warning = fmt.Sprintf("could not write the Hub cache: %v", err)
		} else {
			f.Path = path
		}
	}
	return f, nil
}

// validateRequest checks the repository, revision and file name of a
// request for one file.
func validateRequest(ref Ref, file string) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	return ValidateFile(file)
}

// cacheFirst reports whether a request for rev asks the cache before the
// Hub: when offline, or when rev is a commit, whose files never change.
func (c *Client) cacheFirst(rev string) bool {
	return c.cfg.CacheDir != "" && (c.cfg.Offline || IsCommit(rev))
}

// cacheAnswered reports whether a cache lookup settles a request: a hit,
// a file recorded as missing, or an error other than a miss.
func cacheAnswered(err error) bool {
	return err == nil || !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotFound)
}

// fromCache reads a file of ref from the cache.
func (c *Client) fromCache(ref Ref, file string) (*Fetched, error) {
	cache := Cache{Dir: c.cfg.CacheDir}
	path, commit, err := cache.Lookup(ref.Repo, ref.rev(), file)
	if err != nil {
		return nil, err
	}
	data, err := fsutil.ReadFile(path, maxSmallFile)
	if err != nil {
		return nil, err
	}
	return &Fetched{Ref: ref, Commit: commit, Name: file, Data: data, Path: path, FromCache: true}, nil
}

// afterError records a missing file in the cache, or falls back to the
// cached copy when the Hub could not be reached.
func (c *Client) afterError(ref Ref, file string, err error) (*Fetched, error) {
	var se *StatusError
	isStatus := errors.As(err, &se)
	if c.cfg.CacheDir == "" {
		return nil, err
	}
	if isStatus && se.entry && IsCommit(se.Commit) {
		// Best effort: a failed marker only costs a request next time.
		_ = Cache{Dir: c.cfg.CacheDir}.StoreMissing(ref.Repo, ref.rev(), se.Commit, file)
		return nil, err
	}
	if isStatus && !retryable(se.Status) {
		return nil, err
	}
	f, cerr := c.fromCache(ref, file)
	if cerr != nil {
		return nil, err
	}
	f.Warning = fmt.Sprintf("using the cached copy: %v", err)
	return f, nil
}

// commitOf returns the commit hash the Hub resolved the revision to.
func commitOf(resp *response, rev string) string {
	if h := resp.hubHeader("X-Repo-Commit"); IsCommit(h) {
		return h
	}
	if IsCommit(rev) {
		return rev
	}
	return ""
}

// normalizeEtag strips the weak marker and quotes from the first
// non-empty etag (huggingface_hub: file_download.py, _normalize_etag).
func normalizeEtag(etags ...string) string {
	for _, e := range etags {
		e = strings.Trim(strings.TrimPrefix(e, "W/"), `"`)
		if e != "" {
			return e
		}
	}
	return ""
}
