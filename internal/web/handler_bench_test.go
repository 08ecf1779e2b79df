package web_test

import (
	"net/http"
	"testing"

	"github.com/gpumem/gpumem/internal/web"
)

// benchHandler times one API request through the handler, middleware
// included, without a network connection.
func benchHandler(b *testing.B, method, target, body string) {
	h := web.New(web.Options{}).Handler()
	if rec := serve(h, httptestRequest(method, target, body)); rec.Code != http.StatusOK {
		b.Fatalf("%s %s: status %d: %s", method, target, rec.Code, rec.Body)
	}
	b.ReportAllocs()
	for b.Loop() {
		if rec := serve(h, httptestRequest(method, target, body)); rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

// BenchmarkHandlerEstimateGet is GET /api/estimate with a query.
func BenchmarkHandlerEstimateGet(b *testing.B) {
	benchHandler(b, "GET", "/api/estimate?model=llama3-8b&seq_len=4096&method=lora&lora_target_modules=all-linear", "")
}

// BenchmarkHandlerEstimatePost is POST /api/estimate with a job body.
func BenchmarkHandlerEstimatePost(b *testing.B) {
	benchHandler(b, "POST", "/api/estimate", `{"model": "llama3-8b", "mode": "inference", "batch": 8, "prompt_len": 4096, "gen_len": 1024}`)
}

// BenchmarkHandlerPlan is GET /api/plan: the job assessed on every GPU of
// the catalog, with the largest batch and sequence searched on each.
func BenchmarkHandlerPlan(b *testing.B) {
	benchHandler(b, "GET", "/api/plan?model=llama3-8b&seq_len=4096&method=lora", "")
}
