package web_test

import (
	"net/http/httptest"
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
