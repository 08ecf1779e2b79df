package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to the Hugging Face Hub (or a mirror) and its cache.
// It is safe for concurrent use.
type Client struct {
	cfg  Config
	host string // Endpoint's host: the only host that sees the token
	// follow follows redirects, recording the first hop's headers;
	// noFollow returns redirects to the caller.
	follow, noFollow *http.Client
	// Hooks replaced by tests.
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func() float64
	now    func() time.Time
}

// New returns a client for cfg; see [Config] for the defaults.
func New(cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.Endpoint)
	c := &Client{cfg: cfg, host: u.Host, sleep: sleepCtx, jitter: rand.Float64, now: time.Now}
	follow := *cfg.HTTPClient
	follow.CheckRedirect = recordFirstHop(u.Host, cfg.HTTPClient.CheckRedirect)
	noFollow := *cfg.HTTPClient
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.follow, c.noFollow = &follow, &noFollow
	return c, nil
}

// Config returns the client's configuration with defaults filled in.
func (c *Client) Config() Config { return c.cfg }

// firstHopKey carries, in a request's context, where to record the
// headers of the first response (the Hub's, before a CDN redirect).
type firstHopKey struct{}

// recordFirstHop wraps a CheckRedirect function so the Hub's own headers
// (X-Repo-Commit, X-Linked-Etag, X-Linked-Size) survive a redirect to the
// CDN. It also removes the token from any redirect that leaves the Hub's
// host: Go keeps Authorization on redirects to a subdomain, and the CDN
// may live on one.
func recordFirstHop(hubHost string, next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != hubHost {
			req.Header.Del("Authorization")
		}
		if h, ok := req.Context().Value(firstHopKey{}).(*http.Header); ok && len(via) == 1 && req.Response != nil {
			*h = req.Response.Header.Clone()
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// request is one logical HTTP request, retried as a whole.
type request struct {
	op, repo, file string
	method, url    string
	rangeHdr       string
	follow         bool
	maxBody        int64
}

// response is a completed request with its body read.
type response struct {
	status   int
	header   http.Header // of the final response
	first    http.Header // of the first response when a redirect was followed
	body     []byte
	location string // the URL the body came from
	length   int64  // Content-Length, -1 when unknown
}

// hubHeader returns a Hub header from the first hop if there was a
// redirect, else from the response itself.
func (r *response) hubHeader(key string) string {
	if r.first != nil {
		if v := r.first.Get(key); v != "" {
			return v
		}
	}
	return r.header.Get(key)
}

// send runs req with retries: 429 and 5xx answers and network errors
// (but a host name that does not resolve) are retried with exponential
// backoff and jitter, honouring Retry-After.
func (c *Client) send(ctx context.Context, req request) (*response, error) {
	if c.cfg.Offline {
		return nil, fmt.Errorf("%s %s: %w", req.op, req.repo, ErrOffline)
	}
	for attempt := 0; ; attempt++ {
		resp, again, err := c.once(ctx, req)
		if ctx.Err() != nil {
			// The caller's deadline or cancellation, not this request's
			// timeout: its cause says which (a command's deadline names
			// the flag that sets it).
			return nil, fmt.Errorf("%s %s %s: %w", req.op, req.repo, req.file, context.Cause(ctx))
		}
		if err == nil && (resp.status < 300 || (!req.follow && resp.status < 400)) {
			return resp, nil
		}
		if err == nil {
			err, again = c.statusError(req, resp), retryable(resp.status)
		}
		if attempt >= c.cfg.Retries || !again {
			return nil, redact(err, c.cfg.Token)
		}
		var wait time.Duration
		var werr error
		if resp != nil {
			wait, werr = c.wait(attempt, resp.header.Get("Retry-After"))
		} else {
			wait, werr = c.wait(attempt, "")
		}
		if werr != nil {
			return nil, redact(fmt.Errorf("%w; %w", err, werr), c.cfg.Token)
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// once makes a single attempt, bounded by the configured timeout. again
// reports whether a failure is worth retrying (network errors are).
func (c *Client) once(ctx context.Context, req request) (resp *response, again bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var first http.Header
	if req.follow {
		ctx = context.WithValue(ctx, firstHopKey{}, &first)
	}
	hreq, err := http.NewRequestWithContext(ctx, req.method, req.url, nil)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", req.op, err)
	}
	hreq.Header.Set("User-Agent", c.cfg.UserAgent)
	if c.cfg.Token != "" && hreq.URL.Host == c.host {
		hreq.Header.Set("Authorization", "Bearer "+string(c.cfg.Token))
	}
	if req.rangeHdr != "" {
		hreq.Header.Set("Range", req.rangeHdr)
	}
	hc := c.noFollow
	if req.follow {
		hc = c.follow
	}
	hresp, err := hc.Do(hreq)
	if err != nil {
		// A host name that does not resolve will not resolve a second
		// later either: say so at once rather than after the backoffs.
		var dns *net.DNSError
		again := !errors.As(err, &dns) || !dns.IsNotFound
		return nil, again, c.transportError(ctx, req, err)
	}
	defer hresp.Body.Close()
	resp = &response{status: hresp.StatusCode, header: hresp.Header, first: first,
		location: hresp.Request.URL.String(), length: hresp.ContentLength}
	if hresp.StatusCode >= 300 || req.method == http.MethodHead {
		io.Copy(io.Discard, io.LimitReader(hresp.Body, 64<<10))
		return resp, false, nil
	}
	resp.body, err = io.ReadAll(io.LimitReader(hresp.Body, req.maxBody+1))
	if err != nil {
		return nil, true, c.transportError(ctx, req, err)
	}
	if int64(len(resp.body)) > req.maxBody && req.rangeHdr != "" && resp.status == http.StatusOK {
		// A server that ignores Range sends the whole file; keep the
		// start, which the caller can use only for a read at offset 0.
		resp.body = resp.body[:req.maxBody]
	}
	if int64(len(resp.body)) > req.maxBody {
		return nil, false, fmt.Errorf("%s %s: %s: response larger than %d bytes", req.op, req.repo, req.file, req.maxBody)
	}
	return resp, false, nil
}

// transportError describes a network failure without the full URL,
// whose query string may carry a CDN signature.
func (c *Client) transportError(ctx context.Context, req request, err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("timed out after %s: %w", c.cfg.Timeout, err)
	}
	return fmt.Errorf("%s %s %s: %w (%w)", req.op, req.repo, req.file, err, ErrUnreachable)
}

// statusError builds the error for an unsuccessful answer.
func (c *Client) statusError(req request, resp *response) error {
	e := &StatusError{
		Op: req.op, Repo: req.repo, File: req.file, Status: resp.status,
		Code:     cleanHeader(resp.header.Get("X-Error-Code")),
		Message:  cleanHeader(resp.header.Get("X-Error-Message")),
		Endpoint: c.cfg.Endpoint,
		Commit:   resp.hubHeader("X-Repo-Commit"),
	}
	e.classify(c.cfg.Token != "")
	return e
}

// cleanHeader keeps a server-provided message short and printable.
func cleanHeader(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// wait returns how long to wait before attempt+1: the server's
// Retry-After when given, else baseBackoff·2^attempt plus up to 25 %
// jitter, capped at MaxRetryWait.
func (c *Client) wait(attempt int, retryAfter string) (time.Duration, error) {
	if d, ok := c.retryAfter(retryAfter); ok {
		if d > c.cfg.MaxRetryWait {
			return 0, fmt.Errorf("the server asks to retry after %s, longer than the %s limit", d.Round(time.Second), c.cfg.MaxRetryWait)
		}
		return d, nil
	}
	d := baseBackoff << min(attempt, 16)
	d += time.Duration(c.jitter() * 0.25 * float64(d))
	return min(d, c.cfg.MaxRetryWait), nil
}

// retryAfter parses a Retry-After value: delay seconds or an HTTP date.
func (c *Client) retryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(min(s, 1<<30)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(c.now()), 0), true
	}
	return 0, false
}

// sleepCtx waits for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// resolveURL is the download URL of a file at a revision:
// {endpoint}/{repo}/resolve/{revision}/{file}, the revision escaped as
// one path segment (huggingface_hub: file_download.py, hf_hub_url).
func (c *Client) resolveURL(repo, rev, file string) string {
	parts := strings.Split(file, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return fmt.Sprintf("%s/%s/resolve/%s/%s", c.cfg.Endpoint, repo, url.PathEscape(rev), strings.Join(parts, "/"))
}
