package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpumem/gpumem/model"
)

// syncBuffer is a bytes.Buffer safe for the server's log writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var servingURL = regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)/`)

// startServe runs gpumem serve with args until the test ends and returns
// its base URL and log.
func startServe(t *testing.T, env map[string]string, args ...string) (string, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	f := &Factory{
		IO:         &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: logs},
		Getenv:     func(k string) string { return env[k] },
		HTTPClient: &http.Client{Timeout: 5 * time.Second},
		Now:        time.Now,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- Main(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), f) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited with %d after SIGINT/SIGTERM; log:\n%s", code, logs)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("serve did not shut down")
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := servingURL.FindStringSubmatch(logs.String()); m != nil {
			return m[1], logs
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d: %s", code, logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not report its address: %s", logs)
	return "", nil
}

func httpGet(t *testing.T, target string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func TestServeResolvesHubModelsLikeTheCLI(t *testing.T) {
	srv, _ := fakeHub(t, nil)
	env := map[string]string{"HF_ENDPOINT": srv.URL, "HF_HOME": t.TempDir()}
	base, logs := startServe(t, env, "--access-log", "1")

	want, errOut, code := runWithEnv(t, env, "params", "org/tiny", "--format", "json")
	if code != 0 {
		t.Fatalf("params: exit %d: %s", code, errOut)
	}
	status, got := httpGet(t, base+"/api/params?model=org/tiny&pretty")
	if status != http.StatusOK || string(got) != want {
		t.Errorf("GET /api/params?model=org/tiny: %d\n%s\nwant the CLI's\n%s", status, got, want)
	}
	want, _, _ = runWithEnv(t, env, "estimate", "org/tiny", "--seq-len", "256", "--format", "json")
	status, got = httpGet(t, base+"/api/estimate?model=org/tiny&seq_len=256&pretty")
	if status != http.StatusOK || string(got) != want {
		t.Errorf("GET /api/estimate for a Hub model: %d\n%s\nwant the CLI's\n%s", status, got, want)
	}
	status, got = httpGet(t, base+"/api/params?model=org/missing")
	if status != http.StatusBadRequest || !strings.Contains(string(got), `"field":"model"`) {
		t.Errorf("missing Hub model: %d %s", status, got)
	}
	if !strings.Contains(logs.String(), "path=/api/params status=200") {
		t.Errorf("no access log line for the request:\n%s", logs)
	}
}

func TestServeLocalPaths(t *testing.T) {
	dir := t.TempDir()
	cfg, err := model.CatalogConfig("llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HF_HOME": t.TempDir(), "HF_HUB_OFFLINE": "1"}
	target := "/api/params?model=" + url.QueryEscape(path)

	base, _ := startServe(t, env)
	status, body := httpGet(t, base+target)
	var e struct{ Error, Field string }
	if err := json.Unmarshal(body, &e); err != nil || status != http.StatusBadRequest || e.Field != "model" || !strings.Contains(e.Error, "--allow-local-paths") {
		t.Errorf("local path without --allow-local-paths: %d %s", status, body)
	}

	// A relative path of the org/name form is still a path here.
	t.Chdir(filepath.Dir(dir))
	rel := filepath.Base(dir) + "/config.json"
	if status, body := httpGet(t, base+"/api/params?model="+url.QueryEscape(rel)); status != http.StatusBadRequest || !strings.Contains(string(body), "--allow-local-paths") {
		t.Errorf("relative path %s without --allow-local-paths: %d %s", rel, status, body)
	}
	if err := os.MkdirAll("org/name", 0o755); err != nil {
		t.Fatal(err)
	}
	if status, body := httpGet(t, base+"/api/params?model=org/name"); status != http.StatusBadRequest || !strings.Contains(string(body), "--allow-local-paths") {
		t.Errorf("existing folder org/name without --allow-local-paths: %d %s", status, body)
	}
	// A bare name the catalog lacks is a misspelt model, not a path: the
	// answer names the closest catalog model; one that exists here is
	// still refused as a path.
	if status, body := httpGet(t, base+"/api/params?model=llama3.1-8b-instruct"); status != http.StatusBadRequest ||
		!strings.Contains(string(body), "closest: llama3.1-8b") || strings.Contains(string(body), "--allow-local-paths") {
		t.Errorf("misspelt catalog name: %d %s", status, body)
	}
	if err := os.MkdirAll("mymodel", 0o755); err != nil {
		t.Fatal(err)
	}
	if status, body := httpGet(t, base+"/api/params?model=mymodel"); status != http.StatusBadRequest || !strings.Contains(string(body), "--allow-local-paths") {
		t.Errorf("existing folder mymodel without --allow-local-paths: %d %s", status, body)
	}

	base, _ = startServe(t, env, "--allow-local-paths")
	want, _, _ := runWithEnv(t, env, "params", path, "--format", "json")
	status, body = httpGet(t, base+target+"&pretty")
	if status != http.StatusOK || string(body) != want {
		t.Errorf("local path with --allow-local-paths: %d %s", status, body)
	}
}

func TestServeFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--log-format", "xml"}, "--log-format"},
		{[]string{"serve", "--addr", "nonsense"}, "--addr"},
		{[]string{"serve", "extra"}, "unknown command"},
		{[]string{"serve", "--access-log", "-1"}, "--access-log"},
	} {
		_, errOut, code := runWithEnv(t, nil, tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("gpumem %s: exit %d, stderr %q; want %d mentioning %s", strings.Join(tc.args, " "), code, errOut, ExitUsage, tc.want)
		}
	}
}
