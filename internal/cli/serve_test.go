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
	"syscall"
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
	// A bare name the catalog lacks is a misspelt model, not a path: the
	// answer names the closest catalog model. A release of a catalog
	// model is read as that model, with a warning.
	if status, body := httpGet(t, base+"/api/params?model=lama3-8b"); status != http.StatusBadRequest ||
		!strings.Contains(string(body), "closest: llama3-8b") || strings.Contains(string(body), "--allow-local-paths") {
		t.Errorf("misspelt catalog name: %d %s", status, body)
	}
	if status, body := httpGet(t, base+"/api/params?model=llama3.1-8b-instruct"); status != http.StatusOK ||
		!strings.Contains(string(body), "read as the catalog's meta-llama/Llama-3.1-8B") {
		t.Errorf("release of a catalog model: %d %s", status, body)
	}
	if status, body := httpGet(t, base+"/api/estimate?model=llama3.1-8b-instruct"); status != http.StatusOK ||
		!strings.Contains(string(body), `"warnings":["\"llama3.1-8b-instruct\" is not a catalog id or alias; read as the catalog's meta-llama/Llama-3.1-8B`) {
		t.Errorf("estimate of a release of a catalog model, without the note first in its warnings: %d %s", status, body)
	}

	base, _ = startServe(t, env, "--allow-local-paths")
	want, _, _ := runWithEnv(t, env, "params", path, "--format", "json")
	status, body = httpGet(t, base+target+"&pretty")
	if status != http.StatusOK || string(body) != want {
		t.Errorf("local path with --allow-local-paths: %d %s", status, body)
	}
}

// TestServeNamesNeverReadLocal checks that a server refusing local paths
// answers a name the same whether or not a file or folder of that name
// exists in its working directory: "org/name@rev" once loaded
// ./org/name@rev/config.json, and "org/name" or "mymodel" answered
// differently when they existed. With --allow-local-paths they are read,
// as gpumem estimate reads them.
func TestServeNamesNeverReadLocal(t *testing.T) {
	cfg, err := model.CatalogConfig("llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	env := map[string]string{"HF_HOME": t.TempDir(), "HF_HUB_OFFLINE": "1"}
	refused, _ := startServe(t, env)
	allowed, _ := startServe(t, env, "--allow-local-paths")
	for _, name := range []string{"org/name@rev", "org/name", "mymodel", "mymodel@v1", "org/name@refs/pr/1"} {
		t.Run(name, func(t *testing.T) {
			target := "/api/params?model=" + url.QueryEscape(name)
			_, absent := httpGet(t, refused+target)
			if err := os.MkdirAll(name, 0o755); err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(strings.SplitN(name, "/", 2)[0])
			if err := os.WriteFile(filepath.Join(name, "config.json"), cfg, 0o644); err != nil {
				t.Fatal(err)
			}
			status, present := httpGet(t, refused+target)
			if status == http.StatusOK || string(present) != string(absent) {
				t.Errorf("without --allow-local-paths: %d %s\nwith the folder absent: %s", status, present, absent)
			}
			if strings.Contains(string(present), "--allow-local-paths") {
				t.Errorf("a name answered as a path: %s", present)
			}
			if status, body := httpGet(t, allowed+target); status != http.StatusOK || !strings.Contains(string(body), `"total_params":8030261248`) {
				t.Errorf("with --allow-local-paths: %d %s", status, body)
			}
		})
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

// With --allow-local-paths, a request naming a device or a FIFO gets a
// JSON error naming it, at once, and the server goes on answering: the
// file is neither read without bound nor opened in a way that blocks.
func TestServeLocalSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "model")
	if err := os.Mkdir(link, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(link, "config.json")); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HF_HOME": t.TempDir(), "HF_HUB_OFFLINE": "1"}
	base, _ := startServe(t, env, "--allow-local-paths")
	for _, ref := range []string{"/dev/zero", fifo, link} {
		status, body := httpGet(t, base+"/api/estimate?model="+url.QueryEscape(ref))
		var e struct{ Error, Field string }
		if err := json.Unmarshal(body, &e); err != nil || status != http.StatusBadRequest || e.Field != "model" ||
			!strings.Contains(e.Error, "not a regular file") {
			t.Errorf("model=%s: %d %s", ref, status, body)
		}
	}
	if status, body := httpGet(t, base+"/api/params?model=gpt2"); status != http.StatusOK {
		t.Errorf("after the special files: %d %s", status, body)
	}
}
