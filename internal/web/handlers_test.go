package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/web"
	"github.com/gpumem/gpumem/model"
)

func decodeError(t *testing.T, body []byte) web.Error {
	t.Helper()
	var e web.Error
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body %q is not {\"error\", \"field\"}: %v", body, err)
	}
	if e.Message == "" {
		t.Fatalf("error body %q has an empty message", body)
	}
	return e
}

func TestBadRequests(t *testing.T) {
	h := web.New(web.Options{}).Handler()
	for _, tc := range []struct {
		name, method, target, body string
		field                      string
		inMsg                      string
	}{
		{"string for an integer", "POST", "/api/estimate", `{"model":"llama3-8b","seq_len":"x"}`, "seq_len", "want a whole number, got a string"},
		{"unknown key", "POST", "/api/estimate", `{"model":"llama3-8b","seqlen":4096}`, "seqlen", "unknown key"},
		{"malformed JSON", "POST", "/api/estimate", `{"model":`, "", "JSON"},
		{"array body", "POST", "/api/estimate", `[1,2]`, "", "JSON object"},
		{"empty body", "POST", "/api/estimate", ``, "", "nothing"},
		{"trailing data", "POST", "/api/estimate", `{"model":"llama3-8b"} {"x":1}`, "", "more than one value"},
		{"missing model", "POST", "/api/estimate", `{"seq_len":4096}`, "model", "missing"},
		{"unknown model", "GET", "/api/estimate?model=no-such-model-xyz", "", "model", "not in the built-in catalog"},
		{"unknown mode", "POST", "/api/estimate", `{"model":"llama3-8b","mode":"fly"}`, "mode", "train, inference or serving"},
		{"zero stage", "POST", "/api/estimate", `{"model":"llama3-8b","zero":7}`, "zero", "want 0 to 3, got 7"},
		{"negative batch", "POST", "/api/estimate", `{"model":"llama3-8b","per_device_batch":-2}`, "per_device_batch", "-2"},
		{"huge sequence", "GET", "/api/estimate?model=llama3-8b&seq_len=99999999999", "", "seq_len", "integer in"},
		{"utilization above 1", "POST", "/api/estimate", `{"model":"llama3-8b","mode":"serving","gpu_memory_utilization":1.5}`, "gpu_memory_utilization", "fraction"},
		{"dropout of 1", "POST", "/api/estimate", `{"model":"llama3-8b","lora_dropout":1}`, "lora_dropout", "probability"},
		{"query not an integer", "GET", "/api/estimate?model=llama3-8b&seq_len=abc", "", "seq_len", `"abc"`},
		{"query not a bool", "GET", "/api/estimate?model=llama3-8b&torch_compile=maybe", "", "torch_compile", "true or false"},
		{"query unknown key", "GET", "/api/estimate?model=llama3-8b&sequence=4096", "", "sequence", "unknown query key"},
		{"query constant not a number", "GET", "/api/estimate?model=llama3-8b&constants.fragmentation=lots", "", "constants.fragmentation", "number"},
		{"unknown constant", "GET", "/api/estimate?model=llama3-8b&constants.nope=1", "", "constants", "unknown constant"},
		{"beyond max positions", "GET", "/api/estimate?model=llama3-8b&mode=inference&prompt_len=100000", "", "prompt_len", "max_position_embeddings"},
		{"tp not dividing heads", "GET", "/api/estimate?model=llama3-8b&mode=inference&tp=3", "", "tp", "tp=3"},
		{"unknown dtype", "GET", "/api/estimate?model=llama3-8b&mode=inference&kv_cache_dtype=fp3", "", "kv_cache_dtype", "fp3"},
		{"params without model", "GET", "/api/params", "", "model", "missing"},
		{"params extra key", "GET", "/api/params?model=llama3-8b&seq_len=1", "", "seq_len", "unknown query key"},
		{"models extra key", "GET", "/api/models?filtre=qwen", "", "filtre", "unknown query key"},
		{"optimizers take no key", "GET", "/api/optimizers?filter=adam", "", "filter", "takes none"},
		{"estimate unknown GPU", "GET", "/api/estimate?model=llama3-8b&gpu=voodoo5", "", "gpu", "voodoo5"},
		{"estimate ambiguous GPU", "POST", "/api/estimate", `{"model":"llama3-8b","gpu":"a100"}`, "gpu", "ambiguous"},
		{"estimate compute capability", "POST", "/api/estimate", `{"model":"llama3-8b","gpu_compute_capability":-9}`, "gpu_compute_capability", "-9"},
		{"estimate compute capability in the query", "GET", "/api/estimate?model=llama3-8b&gpu_compute_capability=900", "", "gpu_compute_capability", "900"},
		{"plan unknown GPU", "GET", "/api/plan?model=llama3-8b&gpus=h100,voodoo5", "", "gpus", "voodoo5"},
		{"plan gpus not a list", "POST", "/api/plan", `{"model":"llama3-8b","gpus":"h100"}`, "gpus", "array"},
		{"plan bad job", "POST", "/api/plan", `{"model":"llama3-8b","zero":9}`, "zero", "want 0 to 3, got 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(t, h, tc.method, tc.target, tc.body)
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400; body %s", rec.Code, rec.Body)
			}
			e := decodeError(t, rec.Body.Bytes())
			if e.Field != tc.field {
				t.Errorf("field = %q, want %q (message %q)", e.Field, tc.field, e.Message)
			}
			if !strings.Contains(e.Message, tc.inMsg) {
				t.Errorf("message %q does not mention %q", e.Message, tc.inMsg)
			}
			if strings.Contains(e.Message, "goroutine") || strings.Contains(e.Message, ".go:") {
				t.Errorf("message leaks a stack trace: %q", e.Message)
			}
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	h := web.New(web.Options{MaxBodyBytes: 1024}).Handler()
	body := `{"model":"llama3-8b","lora_target_modules":["` + strings.Repeat("q_proj", 400) + `"]}`
	for _, target := range []string{"/api/estimate", "/api/plan"} {
		rec := do(t, h, "POST", target, body)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("POST %s with %d bytes: status %d, want 413; body %s", target, len(body), rec.Code, rec.Body)
		}
		if e := decodeError(t, rec.Body.Bytes()); !strings.Contains(e.Message, "1024") {
			t.Errorf("message %q does not state the limit", e.Message)
		}
	}
	// The default limit admits real jobs.
	if rec := do(t, web.New(web.Options{}).Handler(), "POST", "/api/estimate", body); rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
		t.Errorf("default limit: status %d", rec.Code)
	}
}

func TestRoutesAndMethods(t *testing.T) {
	h := web.New(web.Options{}).Handler()
	for _, tc := range []struct {
		method, target string
		status         int
		allow          string
	}{
		{"GET", "/api/nope", http.StatusNotFound, ""},
		{"POST", "/api/estimate/extra", http.StatusNotFound, ""},
		{"PUT", "/api/estimate", http.StatusMethodNotAllowed, "GET, HEAD, POST"},
		{"DELETE", "/api/plan", http.StatusMethodNotAllowed, "GET, HEAD, POST"},
		{"POST", "/api/models", http.StatusMethodNotAllowed, "GET, HEAD"},
		{"POST", "/api/gpus", http.StatusMethodNotAllowed, "GET, HEAD"},
		{"DELETE", "/api/optimizers", http.StatusMethodNotAllowed, "GET, HEAD"},
		{"PATCH", "/api/params", http.StatusMethodNotAllowed, "GET, HEAD"},
		{"POST", "/", http.StatusMethodNotAllowed, "GET, HEAD"},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			rec := do(t, h, tc.method, tc.target, "")
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			decodeError(t, rec.Body.Bytes())
			if got := rec.Header().Get("Allow"); got != tc.allow {
				t.Errorf("Allow = %q, want %q", got, tc.allow)
			}
		})
	}
}

func TestStaticAndSecurityHeaders(t *testing.T) {
	h := web.New(web.Options{}).Handler()
	for _, tc := range []struct {
		target, contentType, contains string
	}{
		{"/", "text/html; charset=utf-8", `<script src="app.js" defer></script>`},
		{"/app.js", "text/javascript; charset=utf-8", "/api/estimate?"},
		{"/style.css", "text/css; charset=utf-8", "--fits"},
		{"/vendor/chartjs-4.6.1/chart.umd.min.js", "text/javascript; charset=utf-8", "Chart.js v4.6.1"},
		{"/vendor/chartjs-4.6.1/LICENSE.md", "", "MIT License"},
		{"/api/models", "application/json; charset=utf-8", `"id"`},
	} {
		t.Run(tc.target, func(t *testing.T) {
			rec := do(t, h, "GET", tc.target, "")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d", rec.Code)
			}
			hd := rec.Header()
			if tc.contentType != "" && hd.Get("Content-Type") != tc.contentType {
				t.Errorf("Content-Type = %q, want %q", hd.Get("Content-Type"), tc.contentType)
			}
			if !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("body does not contain %q", tc.contains)
			}
			csp := hd.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "*") {
				t.Errorf("Content-Security-Policy %q allows more than self", csp)
			}
			if got := hd.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q", got)
			}
			if got := hd.Get("Access-Control-Allow-Origin"); got != "" {
				t.Errorf("Access-Control-Allow-Origin = %q, want none", got)
			}
		})
	}
}

func TestCrossOriginPostRejected(t *testing.T) {
	h := web.New(web.Options{}).Handler()
	body := `{"model":"llama3-8b"}`
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
	}{
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"foreign origin", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"same origin", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"}, http.StatusOK},
		{"no browser headers (curl)", nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptestRequest("POST", "http://example.com/api/estimate", body)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			rec := serve(h, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			if rec.Code != http.StatusOK {
				decodeError(t, rec.Body.Bytes())
			}
		})
	}
}

func TestPanicBecomes500(t *testing.T) {
	var logs bytes.Buffer
	resolve := func(ctx context.Context, ref string) (*model.Model, error) {
		var layers []int
		return nil, fmt.Errorf("layer %d", layers[len(ref)]) // an index out of range: a real runtime panic
	}
	h := web.New(web.Options{Resolve: resolve, Logger: slog.New(slog.NewTextHandler(&logs, nil)), AccessLog: 1}).Handler()
	rec := do(t, h, "GET", "/api/estimate?model=org/not-in-catalog", "")
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500; body %s", rec.Code, rec.Body)
	}
	e := decodeError(t, rec.Body.Bytes())
	if e.Message != "internal server error" || strings.Contains(rec.Body.String(), "out of range") {
		t.Errorf("500 body %q is not the generic message", rec.Body)
	}
	if !strings.Contains(logs.String(), "panic") || !strings.Contains(logs.String(), "index out of range") {
		t.Errorf("log lacks the panic: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "status=500") {
		t.Errorf("no access log line for the 500: %s", logs.String())
	}
	// The server keeps serving.
	if rec := do(t, h, "GET", "/api/estimate?model=llama3-8b", ""); rec.Code != http.StatusOK {
		t.Errorf("after a panic: status %d", rec.Code)
	}
}

func TestResolverErrorsNameModel(t *testing.T) {
	resolve := func(ctx context.Context, ref string) (*model.Model, error) {
		return nil, &model.ConfigError{File: "config.json", Key: "hidden_size", Want: "a positive integer", Got: "-1"}
	}
	h := web.New(web.Options{Resolve: resolve}).Handler()
	rec := do(t, h, "GET", "/api/params?model=org/broken", "")
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("status %d", rec.Code)
	}
	e := decodeError(t, rec.Body.Bytes())
	if e.Field != "model" || !strings.Contains(e.Message, "hidden_size") {
		t.Errorf("got %+v, want field model and the config key", e)
	}
}

func TestAccessLog(t *testing.T) {
	var logs bytes.Buffer
	h := web.New(web.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), AccessLog: 1}).Handler()
	do(t, h, "GET", "/api/estimate?model=llama3-8b&seq_len=512", "")
	var line struct {
		Msg    string `json:"msg"`
		Method string `json:"method"`
		Path   string `json:"path"`
		Status int    `json:"status"`
		Bytes  int    `json:"bytes"`
	}
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("access log %q is not one JSON line: %v", logs.String(), err)
	}
	if line.Msg != "request" || line.Method != "GET" || line.Path != "/api/estimate" || line.Status != 200 || line.Bytes <= 0 {
		t.Errorf("access log = %+v", line)
	}
}

func TestAllowedHosts(t *testing.T) {
	h := web.New(web.Options{AllowedHosts: web.LoopbackHosts}).Handler()
	for _, tc := range []struct {
		host   string
		status int
	}{
		{"127.0.0.1:8080", http.StatusOK},
		{"localhost:8080", http.StatusOK},
		{"LOCALHOST", http.StatusOK},
		{"[::1]:8080", http.StatusOK},
		{"rebind.example:8080", http.StatusForbidden},
		{"127.0.0.1.nip.io:8080", http.StatusForbidden},
	} {
		req := httptestRequest("GET", "/api/models?filter=llama", "")
		req.Host = tc.host
		rec := serve(h, req)
		if rec.Code != tc.status {
			t.Errorf("Host %s: status %d, want %d", tc.host, rec.Code, tc.status)
		}
		if rec.Code == http.StatusForbidden {
			decodeError(t, rec.Body.Bytes())
		}
	}
	// Without a list every host is served (the server is not on loopback).
	req := httptestRequest("GET", "/api/models", "")
	req.Host = "gpumem.internal:80"
	if rec := serve(web.New(web.Options{}).Handler(), req); rec.Code != http.StatusOK {
		t.Errorf("no host list: status %d", rec.Code)
	}
}

// TestAccessLogOffAndSampled checks the access log is off by default and
// logs one request in n when sampled.
func TestAccessLogOffAndSampled(t *testing.T) {
	for _, tc := range []struct{ every, requests, lines int }{{0, 6, 0}, {1, 4, 4}, {3, 9, 3}} {
		var logs bytes.Buffer
		h := web.New(web.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), AccessLog: tc.every}).Handler()
		for range tc.requests {
			do(t, h, "GET", "/api/optimizers", "")
		}
		if got := strings.Count(logs.String(), `"msg":"request"`); got != tc.lines {
			t.Errorf("AccessLog %d: %d lines for %d requests, want %d", tc.every, got, tc.requests, tc.lines)
		}
	}
}

// TestPrettyQueryKey checks ?pretty on every kind of route: it indents the
// answer, pretty=0 leaves it compact, and any other value is a 400 naming
// the key. No route rejects it as an unknown key.
func TestPrettyQueryKey(t *testing.T) {
	h := web.New(web.Options{}).Handler()
	for _, target := range []string{"/api/estimate?model=llama3-8b", "/api/optimizers", "/api/models?filter=qwen",
		"/api/params?model=llama3-8b", "/api/plan?model=llama3-8b&gpus=L4"} {
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		for _, tc := range []struct {
			q      string
			status int
			pretty bool
		}{{"", 200, false}, {"pretty", 200, true}, {"pretty=1", 200, true}, {"pretty=TRUE", 200, true},
			{"pretty=0", 200, false}, {"pretty=false", 200, false}, {"pretty=yes", 400, false}} {
			u := target
			if tc.q != "" {
				u += sep + tc.q
			}
			rec := do(t, h, "GET", u, "")
			if rec.Code != tc.status {
				t.Fatalf("GET %s: status %d, want %d; body %.200s", u, rec.Code, tc.status, rec.Body)
			}
			if rec.Header().Get("Content-Security-Policy") == "" {
				t.Errorf("GET %s: no security headers", u)
			}
			if tc.status != 200 {
				if e := decodeError(t, rec.Body.Bytes()); e.Field != "pretty" {
					t.Errorf("GET %s: error on %q, want pretty", u, e.Field)
				}
				continue
			}
			body := rec.Body.String()
			if indented := strings.Contains(body, "\n  "); indented != tc.pretty || !strings.HasSuffix(body, "\n") {
				t.Errorf("GET %s: indented %v, want %v", u, indented, tc.pretty)
			}
		}
	}
}
