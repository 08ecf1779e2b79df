package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var ctx = context.Background()

func TestParseRef(t *testing.T) {
	tests := []struct {
		in   string
		want Ref
		err  string
	}{
		{"Qwen/Qwen3-8B", Ref{Repo: "Qwen/Qwen3-8B"}, ""},
		{"meta-llama/Llama-3.1-8B@main", Ref{Repo: "meta-llama/Llama-3.1-8B", Revision: "main"}, ""},
		{"gpt2", Ref{Repo: "gpt2"}, ""},
		{"org/name@refs/pr/12", Ref{Repo: "org/name", Revision: "refs/pr/12"}, ""},
		{"org/name@" + testCommit, Ref{Repo: "org/name", Revision: testCommit}, ""},
		{"../../etc", Ref{}, "model id"},
		{"org/../etc", Ref{}, "model id"},
		{"/etc/passwd", Ref{}, "model id"},
		{`org\name`, Ref{}, "model id"},
		{"a/b/c", Ref{}, `want "org/name"`},
		{"org--x/name", Ref{}, `"--"`},
		{"org/-name", Ref{}, "not starting or ending"},
		{"", Ref{}, "empty"},
		{"org/" + strings.Repeat("a", 97), Ref{}, "longer than 96"},
		{"org/name@../../etc", Ref{}, "revision"},
		{"org/name@/abs", Ref{}, "revision"},
		{`org/name@a\b`, Ref{}, "revision"},
		{"org/name@a b", Ref{}, "revision"},
		{"org/name@refs/.hidden", Ref{}, "revision"},
		{"org/name@x\x00y", Ref{}, "revision"},
		{"org/name@", Ref{}, ""}, // empty revision means main
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRef(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalidRef) {
					t.Fatalf("got %v, %v; want an ErrInvalidRef containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if tc.in == "org/name@" {
				want = Ref{Repo: "org/name"}
			}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestValidateFile(t *testing.T) {
	for _, ok := range []string{"config.json", "onnx/model.onnx", "model-00001-of-00002.safetensors"} {
		if err := ValidateFile(ok); err != nil {
			t.Errorf("ValidateFile(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", `a\b`, "C:x", "a//b", "./a", "a\nb"} {
		if err := ValidateFile(bad); !errors.Is(err, ErrInvalidRef) {
			t.Errorf("ValidateFile(%q) = %v, want ErrInvalidRef", bad, err)
		}
	}
}

func TestCachePathsStayInside(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	for _, tc := range []struct{ repo, rev, file string }{
		{"../../etc", "main", "config.json"},
		{"org/name", "../../../etc", "config.json"},
		{"org/name", "main", "../../../../etc/passwd"},
		{"org/name", "main", "/etc/passwd"},
	} {
		if _, err := c.Store(tc.repo, tc.rev, testCommit, tc.file, "", []byte("x")); !errors.Is(err, ErrInvalidRef) {
			t.Errorf("Store(%q, %q, %q) = %v, want ErrInvalidRef", tc.repo, tc.rev, tc.file, err)
		}
	}
	if _, err := c.Store("org/name", "main", "not-a-commit", "config.json", "", nil); !errors.Is(err, ErrInvalidRef) {
		t.Errorf("Store with a bad commit = %v", err)
	}
	// A refs file that does not hold a commit hash is not used as a path.
	dir, _ := c.RepoDir("org/name")
	os.MkdirAll(filepath.Join(dir, "refs"), 0o755)
	os.WriteFile(filepath.Join(dir, "refs", "main"), []byte("../../../etc"), 0o644)
	if _, _, err := c.Lookup("org/name", "main", "config.json"); err == nil || !strings.Contains(err.Error(), "not a commit hash") {
		t.Errorf("Lookup through a bad ref = %v", err)
	}
}

func newRepo(f *fakeHub) *fakeRepo {
	r := &fakeRepo{
		files: map[string][]byte{"config.json": []byte(`{"model_type":"llama"}`)},
		lfs:   map[string][]byte{},
	}
	f.repos["org/model"] = r
	return r
}

func TestFetchConfigWritesCacheThenWorksOffline(t *testing.T) {
	f := newFakeHub(t)
	newRepo(f)
	dir := t.TempDir()
	c := f.client(t, Config{CacheDir: dir})
	snap, err := c.FetchConfig(ctx, Ref{Repo: "org/model"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit != testCommit || string(snap.Files[ConfigFile]) != `{"model_type":"llama"}` || len(snap.Files) != 1 {
		t.Fatalf("snapshot = %+v", snap)
	}
	// The layout transformers reads: refs/main, a snapshot symlink into
	// blobs/, and a .no_exist marker for the absent preprocessor config.
	repoDir := filepath.Join(dir, "models--org--model")
	if ref, _ := os.ReadFile(filepath.Join(repoDir, "refs", "main")); string(ref) != testCommit {
		t.Errorf("refs/main = %q, want %q", ref, testCommit)
	}
	snapFile := filepath.Join(repoDir, "snapshots", testCommit, "config.json")
	target, err := os.Readlink(snapFile)
	if err != nil {
		t.Fatalf("snapshot file is not a symlink: %v", err)
	}
	if want := filepath.Join("..", "..", "blobs", etagOf([]byte(`{"model_type":"llama"}`))[:40]); target != want {
		t.Errorf("symlink target = %q, want %q", target, want)
	}
	if _, err := os.Stat(filepath.Join(repoDir, ".no_exist", testCommit, PreprocessorFile)); err != nil {
		t.Errorf("no .no_exist marker: %v", err)
	}

	before := f.count("/org/model/resolve/main/config.json")
	off := f.client(t, Config{CacheDir: dir, Offline: true})
	snap2, err := off.FetchConfig(ctx, Ref{Repo: "org/model"})
	if err != nil {
		t.Fatalf("offline: %v", err)
	}
	if diff := cmp.Diff(snap.Files, snap2.Files); diff != "" || len(snap2.Warnings) != 0 {
		t.Errorf("offline snapshot differs (-online +offline):\n%s warnings %v", diff, snap2.Warnings)
	}
	if f.count("/org/model/resolve/main/config.json") != before {
		t.Error("offline mode made a request")
	}
	// The snapshot is a folder for model parsers.
	data, err := fs.ReadFile(snap2, ConfigFile)
	if err != nil || !bytes.Equal(data, snap.Files[ConfigFile]) {
		t.Errorf("fs.ReadFile(snapshot) = %q, %v", data, err)
	}
	if _, err := fs.ReadFile(snap2, PreprocessorFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
}

func TestCommitPinnedReadsCacheWithoutRequests(t *testing.T) {
	f := newFakeHub(t)
	r := newRepo(f)
	r.files[PreprocessorFile] = []byte(`{"size":{"height":448}}`)
	dir := t.TempDir()
	if _, err := f.client(t, Config{CacheDir: dir}).FetchConfig(ctx, Ref{Repo: "org/model"}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.hits = map[string]int{}
	f.mu.Unlock()
	snap, err := f.client(t, Config{CacheDir: dir}).FetchConfig(ctx, Ref{Repo: "org/model", Revision: testCommit})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files) != 2 || len(f.hits) != 0 {
		t.Errorf("got %d files with %d requests; want 2 files from the cache", len(snap.Files), len(f.hits))
	}
}

func TestOfflineMiss(t *testing.T) {
	c, err := New(Config{CacheDir: t.TempDir(), Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.FetchConfig(ctx, Ref{Repo: "org/model"})
	if !errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), "org/model") {
		t.Errorf("got %v, want ErrOffline naming the model", err)
	}
	if _, err := c.Open(ctx, Ref{Repo: "org/model"}, "model.safetensors"); !errors.Is(err, ErrOffline) {
		t.Errorf("Open offline: %v", err)
	}
}

func TestErrors(t *testing.T) {
	f := newFakeHub(t)
	newRepo(f)
	f.repos["org/gated"] = &fakeRepo{gated: true, files: map[string][]byte{"config.json": []byte("{}")}}
	tests := []struct {
		name   string
		token  Secret
		repo   string
		file   string
		want   error
		notExi bool
		msg    string
	}{
		{"gated without token", "", "org/gated", "config.json", ErrGated, false, "accept the license on the model page (" + f.hub.URL + "/org/gated) and set HF_TOKEN"},
		{"rejected token", "hf_wrong_" + testToken, "org/gated", "config.json", ErrUnauthorized, false, "rejected the token"},
		{"missing model", testToken, "org/missing", "config.json", ErrNotFound, false, "no such model or revision"},
		{"missing file", testToken, "org/model", "nope.json", ErrNotFound, true, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			c := f.client(t, Config{Token: tc.token})
			_, err := c.Get(ctx, Ref{Repo: tc.repo}, tc.file)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if errors.Is(err, fs.ErrNotExist) != tc.notExi {
				t.Errorf("errors.Is(fs.ErrNotExist) = %v, want %v", !tc.notExi, tc.notExi)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not contain %q", err, tc.msg)
			}
			// The token never appears in errors, formatted configs or logs.
			slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "cfg", c.Config(), "token", c.Config().Token, "err", err)
			out := fmt.Sprintf("%v %+v %#v %s %q", err, c.Config(), c.Config(), c.Config().Token, c.Config().Token) + logs.String()
			if tc.token != "" && strings.Contains(out, string(tc.token)) {
				t.Errorf("token leaked: %s", out)
			}
		})
	}
}

func TestTokenScrubbedFromServerMessages(t *testing.T) {
	f := newFakeHub(t)
	newRepo(f)
	c := f.client(t, Config{Token: testToken, Retries: -1})
	// A misbehaving mirror echoing the credentials in its error header.
	f.hub.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Error-Message", "bad header "+r.Header.Get("Authorization"))
		http.Error(w, "no", http.StatusBadRequest)
	})
	_, err := c.Get(ctx, Ref{Repo: "org/model"}, "config.json")
	if err == nil || strings.Contains(err.Error(), testToken) || !strings.Contains(err.Error(), redacted) {
		t.Errorf("error %q should show %s instead of the token", err, redacted)
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := Secret(testToken)
	js, _ := json.Marshal(struct{ T Secret }{s})
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "t", s)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%s %v %q %x %#v %d", s, s, s, s, s, s), string(js), logs.String()} {
		if strings.Contains(out, testToken) || !strings.Contains(out, redacted) {
			t.Errorf("printed %q", out)
		}
	}
}

func TestRetries(t *testing.T) {
	f := newFakeHub(t)
	newRepo(f)
	tests := []struct {
		name       string
		fail       []int
		retryAfter string
		retries    int
		wantErr    string
		wantSleeps []time.Duration
	}{
		{"429 honours Retry-After", []int{429, 429}, "2", 0, "", []time.Duration{2 * time.Second, 2 * time.Second}},
		{"503 backs off exponentially", []int{503, 502, 500}, "", 0, "", []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}},
		{"gives up after the retries", []int{503, 503, 503, 503}, "", 0, "HTTP 503", []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}},
		{"no retries when disabled", []int{503}, "", -1, "HTTP 503", nil},
		{"Retry-After beyond the cap", []int{429}, "3600", 0, "retry after 1h0m0s", nil},
		{"4xx is not retried", []int{400}, "", 0, "HTTP 400", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.mu.Lock()
			f.fail, f.retryAft = tc.fail, tc.retryAfter
			f.mu.Unlock()
			c := f.client(t, Config{Retries: tc.retries})
			var sleeps []time.Duration
			c.sleep = func(_ context.Context, d time.Duration) error { sleeps = append(sleeps, d); return nil }
			_, err := c.Get(ctx, Ref{Repo: "org/model"}, "config.json")
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantSleeps, sleeps); diff != "" {
				t.Errorf("sleeps (-want +got):\n%s", diff)
			}
			f.mu.Lock()
			f.fail = nil
			f.mu.Unlock()
		})
	}
}

func TestRetryAfterDate(t *testing.T) {
	c, _ := New(Config{})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c.now = func() time.Time { return now }
	d, ok := c.retryAfter(now.Add(7 * time.Second).Format(http.TimeFormat))
	if !ok || d != 7*time.Second {
		t.Errorf("got %v, %v; want 7s", d, ok)
	}
	if _, ok := c.retryAfter("soon"); ok {
		t.Error("accepted a malformed Retry-After")
	}
}

// TestUnreachable checks that a request that gets no answer is
// reported as ErrUnreachable, naming the repository and file, and is not
// mistaken for a missing model; a refused connection is retried, a host
// name that does not resolve is not.
func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	endpoint := srv.URL
	srv.Close() // nothing listens there now
	for _, tc := range []struct {
		name     string
		dial     error // nil: dial the closed server
		attempts int
	}{
		{"refused", nil, 3},
		{"no such host", &net.DNSError{Err: "no such host", Name: "hub.example", IsNotFound: true}, 1},
		{"dns timeout", &net.DNSError{Err: "i/o timeout", Name: "hub.example", IsTimeout: true}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attempts := 0
			tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				attempts++
				if tc.dial != nil {
					return nil, &net.OpError{Op: "dial", Net: network, Err: tc.dial}
				}
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}}
			c, err := New(Config{Endpoint: endpoint, Retries: 2, CacheDir: t.TempDir(), HTTPClient: &http.Client{Transport: tr}})
			if err != nil {
				t.Fatal(err)
			}
			c.sleep = func(context.Context, time.Duration) error { return nil }
			_, err = c.Get(ctx, Ref{Repo: "org/model"}, "config.json")
			switch {
			case err == nil:
				t.Fatal("want an error")
			case !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrNotFound):
				t.Errorf("got %v, want ErrUnreachable and not ErrNotFound", err)
			case !strings.Contains(err.Error(), "org/model") || !strings.Contains(err.Error(), "config.json"):
				t.Errorf("got %v, want the repository and file named", err)
			}
			if attempts != tc.attempts {
				t.Errorf("%d attempts, want %d", attempts, tc.attempts)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	f := newFakeHub(t)
	newRepo(f)
	f.delay = 300 * time.Millisecond
	c := f.client(t, Config{Timeout: 50 * time.Millisecond, Retries: 1})
	start := time.Now()
	_, err := c.Get(ctx, Ref{Repo: "org/model"}, "config.json")
	if err == nil || !strings.Contains(err.Error(), "timed out after 50ms") || !errors.Is(err, ErrUnreachable) {
		t.Errorf("got %v, want a timeout wrapping ErrUnreachable", err)
	}
	if f.count("/org/model/resolve/main/config.json") != 2 {
		t.Errorf("attempts = %d, want 2", f.count("/org/model/resolve/main/config.json"))
	}
	if time.Since(start) > 2*time.Second {
		t.Error("timeout not enforced")
	}
}

func TestUnreachableHubFallsBackToCache(t *testing.T) {
	f := newFakeHub(t)
	newRepo(f)
	dir := t.TempDir()
	if _, err := f.client(t, Config{CacheDir: dir}).Get(ctx, Ref{Repo: "org/model"}, "config.json"); err != nil {
		t.Fatal(err)
	}
	c := f.client(t, Config{CacheDir: dir})
	f.hub.Close()
	got, err := c.Get(ctx, Ref{Repo: "org/model"}, "config.json")
	if err != nil {
		t.Fatal(err)
	}
	if !got.FromCache || !strings.Contains(got.Warning, "using the cached copy") {
		t.Errorf("got %+v, want the cached copy with a warning", got)
	}
}

func TestOpenRangeOverCDN(t *testing.T) {
	f := newFakeHub(t)
	r := newRepo(f)
	weights := make([]byte, 1<<16)
	for i := range weights {
		weights[i] = byte(i * 7)
	}
	r.lfs["model.safetensors"] = weights
	c := f.client(t, Config{Token: testToken})
	file, err := c.Open(ctx, Ref{Repo: "org/model"}, "model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if file.Size() != int64(len(weights)) {
		t.Fatalf("Size = %d, want %d", file.Size(), len(weights))
	}
	for _, tc := range []struct{ off, n int64 }{{0, 8}, {1000, 100}, {int64(len(weights)) - 10, 10}} {
		p := make([]byte, tc.n)
		n, err := file.ReadAt(p, tc.off)
		if err != nil || int64(n) != tc.n || !bytes.Equal(p, weights[tc.off:tc.off+tc.n]) {
			t.Errorf("ReadAt(%d, %d) = %d, %v", tc.off, tc.n, n, err)
		}
	}
	p := make([]byte, 20)
	if n, err := file.ReadAt(p, int64(len(weights))-5); n != 5 || err != io.EOF {
		t.Errorf("read across the end = %d, %v; want 5, EOF", n, err)
	}
	if _, err := file.ReadAt(p, int64(len(weights))); err != io.EOF {
		t.Errorf("read at the end = %v, want EOF", err)
	}
	for _, a := range f.cdnAuth {
		if a != "" {
			t.Errorf("the CDN received an Authorization header")
		}
	}
	if len(f.hubAuth) == 0 || f.hubAuth[0] != "Bearer "+testToken {
		t.Errorf("the Hub did not receive the token: %v", len(f.hubAuth))
	}
	if f.count("cdn:/blob/org/model/model.safetensors") != 4 {
		t.Errorf("CDN requests = %d, want one per read", f.count("cdn:/blob/org/model/model.safetensors"))
	}
}

func TestOpenSmallFileAndRenamedRepo(t *testing.T) {
	f := newFakeHub(t)
	newRepo(f)
	f.renamed["old/model"] = "org/model"
	c := f.client(t, Config{})
	file, err := c.Open(ctx, Ref{Repo: "old/model"}, "config.json")
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, file.Size())
	if _, err := file.ReadAt(data, 0); err != nil || string(data) != `{"model_type":"llama"}` {
		t.Errorf("ReadAt = %q, %v", data, err)
	}
	if rf, ok := file.(*RemoteFile); !ok || rf.Commit() != testCommit {
		t.Errorf("want a remote file at %s, got %T", testCommit, file)
	}
	if _, err := c.Open(ctx, Ref{Repo: "org/model"}, "missing.safetensors"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing file = %v, want fs.ErrNotExist", err)
	}
}

func TestOpenUsesCachedWeights(t *testing.T) {
	f := newFakeHub(t)
	r := newRepo(f)
	r.lfs["model.safetensors"] = []byte("remote")
	dir := t.TempDir()
	// As if transformers had downloaded the weights.
	if _, err := (Cache{Dir: dir}).Store("org/model", "main", testCommit, "model.safetensors", "", []byte("cached")); err != nil {
		t.Fatal(err)
	}
	file, err := f.client(t, Config{CacheDir: dir}).Open(ctx, Ref{Repo: "org/model"}, "model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	data := make([]byte, file.Size())
	file.ReadAt(data, 0)
	if string(data) != "cached" || f.count("cdn:/blob/org/model/model.safetensors") != 0 {
		t.Errorf("read %q with %d CDN requests; want the cached file", data, f.count("cdn:/blob/org/model/model.safetensors"))
	}
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	path := TokenFile(dir)
	if tok, err := ReadTokenFile(path); tok != "" || err != nil {
		t.Errorf("missing file: %q, %v", tok, err)
	}
	os.WriteFile(path, []byte("  "+testToken+"\n"), 0o600)
	if tok, err := ReadTokenFile(path); string(tok) != testToken || err != nil {
		t.Errorf("got %v, %v", tok == testToken, err)
	}
	os.WriteFile(path, []byte("two words"), 0o600)
	if _, err := ReadTokenFile(path); err == nil {
		t.Error("accepted a token with spaces")
	}
	os.WriteFile(path, bytes.Repeat([]byte("a"), maxTokenFile+1), 0o600)
	if _, err := ReadTokenFile(path); err == nil {
		t.Error("accepted an oversized token file")
	}
	if CacheDirFor(dir) != filepath.Join(dir, "hub") {
		t.Error("CacheDirFor")
	}
}

func TestBadEndpoint(t *testing.T) {
	for _, e := range []string{"ftp://x", "huggingface.co", "https://", "https://user:pw@host"} {
		if _, err := New(Config{Endpoint: e}); err == nil {
			t.Errorf("New accepted endpoint %q", e)
		}
	}
}

func TestInfo(t *testing.T) {
	f := newFakeHub(t)
	r := newRepo(f)
	r.lfs["model-Q4_K_M.gguf"] = []byte("GGUF")
	dir := t.TempDir()
	c := f.client(t, Config{CacheDir: dir})
	info, err := c.Info(ctx, Ref{Repo: "org/model"})
	if err != nil {
		t.Fatal(err)
	}
	want := &RepoInfo{Commit: testCommit, Files: []string{"config.json", "model-Q4_K_M.gguf"}}
	if diff := cmp.Diff(want, info); diff != "" {
		t.Errorf("Info (-want +got):\n%s", diff)
	}
	if _, err := c.Info(ctx, Ref{Repo: "org/none"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing repo: %v", err)
	}
	// Offline, the cached snapshot is listed.
	if _, err := c.Get(ctx, Ref{Repo: "org/model"}, "config.json"); err != nil {
		t.Fatal(err)
	}
	off := f.client(t, Config{CacheDir: dir, Offline: true})
	info, err = off.Info(ctx, Ref{Repo: "org/model"})
	if err != nil || !cmp.Equal(info.Files, []string{"config.json"}) {
		t.Errorf("offline info = %+v, %v", info, err)
	}
	if _, err := off.Info(ctx, Ref{Repo: "org/other"}); !errors.Is(err, ErrOffline) {
		t.Errorf("offline miss: %v", err)
	}
}

func TestRedirectDropsTokenOffHub(t *testing.T) {
	check := recordFirstHop("hub.example", nil)
	for _, tc := range []struct {
		url  string
		keep bool
	}{
		{"https://hub.example/new-org/model/resolve/main/config.json", true},
		{"https://cdn-lfs.hub.example/blob", false}, // a subdomain: Go alone would keep the header
		{"https://cdn.example/blob", false},
	} {
		req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		via, _ := http.NewRequest(http.MethodGet, "https://hub.example/org/model/resolve/main/x", nil)
		if err := check(req, []*http.Request{via}); err != nil {
			t.Fatal(err)
		}
		if got := req.Header.Get("Authorization") != ""; got != tc.keep {
			t.Errorf("%s: Authorization kept = %v, want %v", tc.url, got, tc.keep)
		}
	}
}

// FuzzParseRef checks that every accepted reference maps to cache paths
// inside the cache folder.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"org/name", "org/name@main", "gpt2", "../../etc", "org/name@refs/pr/1", "a/b@" + testCommit, `a\b`, "org/name@..", "x/y@a/../../b"} {
		f.Add(s, "config.json")
	}
	f.Add("org/name", "../../x")
	f.Fuzz(func(t *testing.T, s, file string) {
		ref, err := ParseRef(s)
		if err != nil {
			return
		}
		root := filepath.Join(string(filepath.Separator), "cache")
		c := Cache{Dir: root}
		dir, err := c.RepoDir(ref.Repo)
		if err != nil {
			t.Fatalf("accepted %q but RepoDir failed: %v", s, err)
		}
		if filepath.Dir(dir) != root || !strings.HasPrefix(filepath.Base(dir), "models--") {
			t.Fatalf("%q: repo dir %q", s, dir)
		}
		if ref.Revision != "" {
			ref := filepath.Join(dir, "refs", filepath.FromSlash(ref.Revision))
			if rel, err := filepath.Rel(dir, ref); err != nil || strings.HasPrefix(rel, "..") {
				t.Fatalf("%q: ref path %q leaves the repo folder", s, ref)
			}
		}
		if snap, _, err := c.paths(ref.Repo, testCommit, file); err == nil && !strings.HasPrefix(snap, filepath.Join(dir, "snapshots", testCommit)+string(filepath.Separator)) {
			t.Fatalf("file %q: snapshot path %q leaves the snapshot", file, snap)
		}
	})
}
