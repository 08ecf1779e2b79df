package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// trickleHub is a Hub that answers every request with a byte every 20 ms
// and never finishes, as a Hub answering at 1 byte/s did.
func trickleHub(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Repo-Commit", fakeCommit)
		w.Header().Set("Content-Length", "1000000")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		for {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
				if _, err := w.Write([]byte(" ")); err != nil {
					return
				}
				rc.Flush()
			}
		}
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

// A command stops at its deadline with an error naming it, however the
// Hub trickles; HF_HUB_DOWNLOAD_TIMEOUT still bounds each request.
func TestCommandDeadline(t *testing.T) {
	srv := trickleHub(t)
	env := map[string]string{"HF_ENDPOINT": srv.URL, "HF_HOME": t.TempDir()}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"flag", nil, []string{"--timeout", "300ms"}, "gave up after 300ms"},
		{"environment", map[string]string{"GPUMEM_TIMEOUT": "0.3"}, nil, "gave up after 300ms"},
		{"flag over environment", map[string]string{"GPUMEM_TIMEOUT": "1h"}, []string{"--timeout", "300ms"}, "gave up after 300ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range env {
				e[k] = v
			}
			for k, v := range tc.env {
				e[k] = v
			}
			start := time.Now()
			_, errOut, code := runWithEnv(t, e, append([]string{"estimate", "--model", "org/slow"}, tc.args...)...)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the command took %s", d)
			}
			if code != ExitError || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "--timeout") {
				t.Errorf("exit %d, stderr %s", code, errOut)
			}
		})
	}
}

func TestTimeoutErrors(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--timeout", "-1s"}, "--timeout -1s"},
		{map[string]string{"GPUMEM_TIMEOUT": "NaN"}, nil, `GPUMEM_TIMEOUT="NaN"`},
		{map[string]string{"GPUMEM_TIMEOUT": "soon"}, nil, "want a duration such as 90s"},
		{map[string]string{"HF_HUB_DOWNLOAD_TIMEOUT": "NaN"}, []string{"--model", "org/x"}, `HF_HUB_DOWNLOAD_TIMEOUT="NaN"`},
		{map[string]string{"HF_HUB_DOWNLOAD_TIMEOUT": "+Inf"}, []string{"--model", "org/x"}, `HF_HUB_DOWNLOAD_TIMEOUT="+Inf"`},
	} {
		env := map[string]string{"HF_HOME": t.TempDir(), "HF_ENDPOINT": "http://127.0.0.1:1"}
		for k, v := range tc.env {
			env[k] = v
		}
		args := append([]string{"estimate"}, tc.args...)
		if len(tc.args) == 0 || tc.args[0] != "--model" {
			args = append(args, "--model", "gpt2")
		}
		_, errOut, code := runWithEnv(t, env, args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v %v: exit %d, stderr %s", tc.env, tc.args, code, errOut)
		}
	}
}

// Through the server, a request waiting on a trickling Hub gets a 504
// with a JSON error at its deadline, not a dropped connection.
func TestServeRequestDeadline(t *testing.T) {
	srv := trickleHub(t)
	env := map[string]string{"HF_ENDPOINT": srv.URL, "HF_HOME": t.TempDir()}
	base, _ := startServe(t, env, "--request-timeout", "300ms")
	start := time.Now()
	status, body := httpGet(t, base+"/api/estimate?model=org/slow")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("answered after %s", d)
	}
	var e struct{ Error string }
	if err := json.Unmarshal(body, &e); err != nil || status != http.StatusGatewayTimeout || !strings.Contains(e.Error, "300ms deadline") {
		t.Errorf("status %d, body %s", status, body)
	}
	for _, bad := range []string{"0s", "30s", "1m"} {
		_, errOut, code := runWithEnv(t, env, "serve", "--addr", "127.0.0.1:0", "--request-timeout", bad)
		if code != ExitUsage || !strings.Contains(errOut, "--request-timeout") {
			t.Errorf("--request-timeout %s: exit %d, stderr %s", bad, code, errOut)
		}
	}
}
