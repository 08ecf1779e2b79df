package hub

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/fsutil"
)

// DefaultEndpoint is the public Hugging Face Hub.
const DefaultEndpoint = "https://huggingface.co"

// Defaults for the zero values of [Config].
const (
	// DefaultTimeout bounds one attempt of a request (connect, headers
	// and body). huggingface_hub's metadata requests use 10 s
	// (HF_HUB_ETAG_TIMEOUT); config files and header ranges are small.
	DefaultTimeout = 10 * time.Second
	// DefaultRetries is how many times a request is retried after a 429,
	// a 5xx or a network error.
	DefaultRetries = 3
	// DefaultMaxRetryWait caps one wait between attempts, including a
	// server's Retry-After. A longer Retry-After fails the request at once
	// rather than stalling the command.
	DefaultMaxRetryWait = 30 * time.Second
	// baseBackoff is the first backoff; it doubles on each attempt.
	baseBackoff = 500 * time.Millisecond
)

// Config is everything the client needs. The caller (the CLI) fills it
// from flags and the environment; this package reads neither. The zero
// value talks to the public Hub anonymously, without a cache.
type Config struct {
	// Endpoint is the Hub's base URL (HF_ENDPOINT for mirrors); default [DefaultEndpoint].
	Endpoint string
	// Token is the access token (HF_TOKEN, or the token file the
	// Hugging Face CLI writes). It is sent only to Endpoint's host.
	Token Secret
	// CacheDir is the Hub cache folder ($HF_HUB_CACHE, default
	// $HF_HOME/hub); "" disables the cache.
	CacheDir string
	// Offline forbids network access (HF_HUB_OFFLINE=1): files come
	// from CacheDir or the call fails with [ErrOffline].
	Offline bool
	// HTTPClient sends the requests; default a client with no overall
	// timeout (each attempt is bounded by Timeout).
	HTTPClient *http.Client
	// Timeout bounds one attempt of one request; default [DefaultTimeout].
	Timeout time.Duration
	// Retries is the number of retries after the first attempt; 0 means
	// [DefaultRetries], a negative value means none.
	Retries int
	// MaxRetryWait caps a single wait between attempts; default [DefaultMaxRetryWait].
	MaxRetryWait time.Duration
	// UserAgent is sent with each request; default "gpumem".
	UserAgent string
	// Progress receives progress of long operations; nil means none.
	Progress Progress
}

// LogValue logs the configuration with the token redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("endpoint", c.Endpoint),
		slog.Bool("token", c.Token != ""),
		slog.String("cache_dir", c.CacheDir),
		slog.Bool("offline", c.Offline),
	)
}

// withDefaults returns c with zero values replaced by defaults.
func (c Config) withDefaults() (Config, error) {
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	c.Endpoint = strings.TrimRight(c.Endpoint, "/")
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.User != nil {
		return c, fmt.Errorf("hub endpoint %q: want an http or https URL such as %s", c.Endpoint, DefaultEndpoint)
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.Retries == 0:
		c.Retries = DefaultRetries
	case c.Retries < 0:
		c.Retries = 0
	}
	if c.MaxRetryWait <= 0 {
		c.MaxRetryWait = DefaultMaxRetryWait
	}
	if c.UserAgent == "" {
		c.UserAgent = "gpumem"
	}
	if c.Progress == nil {
		c.Progress = nopProgress{}
	}
	return c, nil
}

// redacted replaces secrets in any printed form.
const redacted = "[redacted]"

// Secret is a token that never prints: every fmt verb, slog and JSON
// show "[redacted]". Convert with string(s) only to send it.
type Secret string

// String returns "[redacted]".
func (s Secret) String() string { return redacted }

// GoString returns "[redacted]" for %#v.
func (s Secret) GoString() string { return redacted }

// Format prints "[redacted]" for every verb.
func (s Secret) Format(f fmt.State, _ rune) { f.Write([]byte(redacted)) }

// LogValue logs "[redacted]".
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText encodes "[redacted]" (used by encoding/json and others).
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// TokenFile returns the path of the token file the Hugging Face CLI
// writes: $HF_HOME/token (huggingface_hub: constants.py, HF_TOKEN_PATH).
func TokenFile(hfHome string) string { return filepath.Join(hfHome, "token") }

// CacheDirFor returns the Hub cache folder inside hfHome: $HF_HOME/hub.
func CacheDirFor(hfHome string) string { return filepath.Join(hfHome, "hub") }

// maxTokenFile bounds the token file read; tokens are under 100 bytes.
const maxTokenFile = 4 << 10

// ReadTokenFile reads a token file, trimming surrounding whitespace. A
// missing file yields "" and no error; an empty token is not an error.
func ReadTokenFile(path string) (Secret, error) {
	buf, err := fsutil.ReadFile(path, maxTokenFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if _, ok := errors.AsType[*fsutil.TooLargeError](err); ok {
		return "", fmt.Errorf("read token file %s: larger than %d bytes, not a token", path, maxTokenFile)
	}
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	tok := strings.TrimSpace(string(buf))
	if strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("read token file %s: want a single token", path)
	}
	return Secret(tok), nil
}
