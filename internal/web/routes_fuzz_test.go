package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/gpumem/gpumem/internal/web"
)

// getRoutes are the API's GET routes besides /api/estimate (which
// FuzzEstimateQuery covers).
var getRoutes = []string{"/api/params", "/api/plan", "/api/models", "/api/gpus", "/api/optimizers"}

// FuzzGetQuery sends fuzzed query strings to every GET route of the API:
// each answers 200 with JSON or 400/413 with a JSON error, never 500.
func FuzzGetQuery(f *testing.F) {
	for i, q := range []string{
		"model=llama3-8b", "model=qwen3-30b-a3b&gpu=h100", "model=llama3-8b&mode=inference&batch=8&prompt_len=4096",
		"filter=qwen", "model=llama3-8b&gpu_memory_bytes=-1", "model=%zz", "model=gpt2&seq_len=1e99",
		"model=llama3-8b&method=lora&lora_target_modules=q_proj,v_proj", "vendor=amd", "",
	} {
		f.Add(uint8(i), q)
	}
	h := web.New(web.Options{}).Handler()
	f.Fuzz(func(t *testing.T, route uint8, q string) {
		req := httptest.NewRequest("GET", getRoutes[int(route)%len(getRoutes)], nil)
		req.URL.RawQuery = q
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkAnswer(t, rec)
	})
}

// FuzzGetPath sends GET requests for fuzzed paths: each answers with a
// page file, a 404 or a 400 with a JSON error (an invalid path such as
// /%ff was a 500), never a server error.
func FuzzGetPath(f *testing.F) {
	for _, p := range []string{"/", "/app.js", "/%ff", "/%ff/", "/vendor/%c3%28", "/missing.js", "/a/../style.css", "/api/nope", "//x"} {
		f.Add(p)
	}
	h := web.New(web.Options{}).Handler()
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.ParseRequestURI(raw)
		if err != nil || u.Path == "" || u.Path[0] != '/' || u.Host != "" {
			return
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.URL = u
		req.RequestURI = raw
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch {
		case rec.Code >= 500:
			t.Fatalf("GET %q: status %d, body %.200s", raw, rec.Code, rec.Body)
		case rec.Code == http.StatusBadRequest:
			var e web.Error
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Message == "" {
				t.Fatalf("GET %q: 400 with body %.200s", raw, rec.Body)
			}
		}
	})
}
