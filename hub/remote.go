package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"

	"github.com/gpumem/gpumem/internal/fsutil"
)

// File is a file opened for random access: a local file in the cache,
// or a file on the Hub whose reads are HTTP Range requests.
type File interface {
	io.ReaderAt
	io.Closer
	// Size is the file's length in bytes.
	Size() int64
}

// maxRelativeRedirects bounds the same-host redirects followed when
// opening a file (a renamed repository answers 307 to its new name).
const maxRelativeRedirects = 5

// maxRead bounds one ReadAt, so a caller cannot make one Range request
// ask for gigabytes of weights by mistake.
const maxRead = 256 << 20

// Open opens one file of ref for random access without downloading it.
// A file already in the cache (for example weights transformers
// downloaded) is opened locally; otherwise reads are HTTP Range requests,
// sent to the CDN location the Hub redirects large files to (without the
// token, which only the Hub's host receives). Reads use ctx.
func (c *Client) Open(ctx context.Context, ref Ref, file string) (File, error) {
	if err := validateRequest(ref, file); err != nil {
		return nil, err
	}
	rev := ref.rev()
	cache := Cache{Dir: c.cfg.CacheDir}
	if c.cacheFirst(rev) {
		if f, err := c.openCached(cache, ref.Repo, rev, file); cacheAnswered(err) {
			return f, err
		}
	}
	if c.cfg.Offline {
		return nil, fmt.Errorf("%s: %s: %w (cache %q)", ref, file, ErrOffline, c.cfg.CacheDir)
	}
	rf, err := c.head(ctx, ref, file)
	if err != nil {
		return nil, err
	}
	if c.cfg.CacheDir != "" && rf.commit != "" {
		if f, err := c.openCached(cache, ref.Repo, rf.commit, file); err == nil {
			return f, nil
		}
	}
	return rf, nil
}

// openCached opens a cached file as a local [File].
func (c *Client) openCached(cache Cache, repo, rev, file string) (File, error) {
	path, _, err := cache.Lookup(repo, rev, file)
	if err != nil {
		return nil, err
	}
	f, err := fsutil.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &localFile{File: f, size: st.Size()}, nil
}

type localFile struct {
	*os.File
	size int64
}

func (f *localFile) Size() int64 { return f.size }

// head finds where a file's bytes are served and how large it is, with a
// HEAD request that does not follow the CDN redirect (huggingface_hub:
// file_download.py, get_hf_file_metadata, reads X-Repo-Commit and
// X-Linked-Size the same way).
func (c *Client) head(ctx context.Context, ref Ref, file string) (*RemoteFile, error) {
	resolve := c.resolveURL(ref.Repo, ref.rev(), file)
	u := resolve
	for range maxRelativeRedirects {
		resp, err := c.send(ctx, request{op: "open", repo: ref.Repo, file: file, method: http.MethodHead, url: u})
		if err != nil {
			return nil, err
		}
		rf := &RemoteFile{c: c, ctx: ctx, repo: ref.Repo, name: file, url: resolve, resolve: resolve,
			commit: commitOf(resp, ref.rev()), size: resp.length}
		if n, err := strconv.ParseInt(resp.header.Get("X-Linked-Size"), 10, 64); err == nil && n >= 0 {
			rf.size = n
		}
		if resp.status >= 300 {
			next, err := c.redirect(u, resp.header.Get("Location"))
			if err != nil {
				return nil, fmt.Errorf("open %s: %s: %w", ref.Repo, file, err)
			}
			if next.Host == c.host {
				u = next.String()
				continue
			}
			rf.url = next.String()
		}
		if rf.size < 0 {
			return nil, fmt.Errorf("open %s: %s: the server did not give the file size", ref.Repo, file)
		}
		return rf, nil
	}
	return nil, fmt.Errorf("open %s: %s: more than %d redirects on the Hub", ref.Repo, file, maxRelativeRedirects)
}

// redirect resolves a Location header against the current URL.
func (c *Client) redirect(current, location string) (*url.URL, error) {
	if location == "" {
		return nil, errors.New("redirect without a Location")
	}
	base, err := url.Parse(current)
	if err != nil {
		return nil, err
	}
	loc, err := base.Parse(location)
	if err != nil || (loc.Scheme != "http" && loc.Scheme != "https") {
		return nil, fmt.Errorf("redirect to an invalid location")
	}
	return loc, nil
}

// RemoteFile is a file on the Hub (or its CDN) read with HTTP Range
// requests. It implements [File].
type RemoteFile struct {
	c            *Client
	ctx          context.Context
	repo, name   string
	url, resolve string
	commit       string
	size         int64
}

// Size returns the file's length in bytes.
func (f *RemoteFile) Size() int64 { return f.size }

// Commit returns the commit hash the file was resolved at, "" if unknown.
func (f *RemoteFile) Commit() string { return f.commit }

// Close releases nothing; it exists to satisfy [File].
func (f *RemoteFile) Close() error { return nil }

// ReadAt reads len(p) bytes at off with one Range request (retried like
// every request). Reads past the end return io.EOF as io.ReaderAt requires.
func (f *RemoteFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset %d", f.name, off)
	}
	if off >= f.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), f.size-off)
	if n == 0 {
		return 0, nil
	}
	if n > maxRead {
		return 0, fmt.Errorf("read %s: %d bytes in one read exceeds the %d-byte limit", f.name, n, maxRead)
	}
	body, err := f.rangeGet(off, n)
	if err != nil {
		return 0, err
	}
	copy(p, body)
	if int64(len(body)) < n {
		return len(body), fmt.Errorf("read %s %s: %w: got %d of %d bytes", f.repo, f.name, io.ErrUnexpectedEOF, len(body), n)
	}
	if n < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// rangeGet fetches bytes [off, off+n). A signed CDN location that has
// expired (401/403) is replaced by the Hub's resolve URL, once.
func (f *RemoteFile) rangeGet(off, n int64) ([]byte, error) {
	req := request{op: "read", repo: f.repo, file: f.name, method: http.MethodGet, url: f.url,
		rangeHdr: fmt.Sprintf("bytes=%d-%d", off, off+n-1), follow: true, maxBody: n}
	resp, err := f.c.send(f.ctx, req)
	var se *StatusError
	if err != nil && f.url != f.resolve && errors.As(err, &se) && (se.Status == http.StatusForbidden || se.Status == http.StatusUnauthorized) {
		f.url, req.url = f.resolve, f.resolve
		resp, err = f.c.send(f.ctx, req)
	}
	if err != nil {
		return nil, err
	}
	if resp.status != http.StatusPartialContent && off != 0 {
		return nil, fmt.Errorf("read %s %s: the server ignored the Range request (HTTP %d)", f.repo, f.name, resp.status)
	}
	return resp.body, nil
}
