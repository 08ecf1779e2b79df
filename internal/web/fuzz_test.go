package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/web"
)

// checkAnswer asserts that a response is a 200, 400 or 413 with a JSON
// body, and that errors have the documented shape: never a 500.
func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	switch rec.Code {
	case http.StatusOK:
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("200 with invalid JSON: %s", rec.Body)
		}
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		var e web.Error
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Message == "" {
			t.Fatalf("%d with body %s", rec.Code, rec.Body)
		}
	default:
		t.Fatalf("status %d, body %s", rec.Code, rec.Body)
	}
}

func FuzzEstimateQuery(f *testing.F) {
	for _, q := range []string{
		"model=llama3-8b&seq_len=4096", "model=llama3-8b&mode=inference&batch=8&prompt_len=100&gen_len=10",
		"model=qwen3-30b-a3b&mode=serving&gpu=h100&max_model_len=4096", "model=llama3-8b&method=qlora&lora_rank=64&grad_checkpoint=full",
		"model=llama3-8b&seq_len=-1", "model=%zz", "model=llama3-8b&constants.fragmentation=NaN", "model=llama3-8b&zero=3&num_gpus=8&engine=deepspeed",
	} {
		f.Add(q)
	}
	h := web.New(web.Options{}).Handler()
	f.Fuzz(func(t *testing.T, q string) {
		req := httptest.NewRequest("GET", "/api/estimate", nil)
		req.URL.RawQuery = q
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkAnswer(t, rec)
	})
}

func FuzzEstimateBody(f *testing.F) {
	for _, b := range []string{
		`{"model":"llama3-8b","seq_len":4096}`, `{"model":"llama3-8b","mode":"inference","batch":4,"prompt_len":512}`,
		`{"model":"llama3-8b","lora_target_modules":["all-linear"],"method":"lora"}`, `{"model":"llama3-8b","packed":false}`,
		`{"model":"llama3-8b","constants":{"fragmentation":0.2}}`, `{"model":1}`, `[]`, `{`, `{"model":"llama3-8b","gpu_memory_bytes":-5}`,
		`{"model":{"num_parameters":"7B"},"seq_len":64}`, `{"model":"llama3-8b","gpus":["h100"],"Seq-Len":64,"gpu_memory":"80GiB"}`,
		`{"model":{"num_parameters":"1B"},"training":{"batch_size":2},"engine":{"type":"deepspeed","zero_stage":3}}`,
	} {
		f.Add(b)
	}
	h := web.New(web.Options{}).Handler()
	f.Fuzz(func(t *testing.T, body string) {
		for _, target := range []string{"/api/estimate", "/api/plan"} {
			req := httptest.NewRequest("POST", target, strings.NewReader(body))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			checkAnswer(t, rec)
		}
	})
}
