package web_test

import (
	"net/http"
	"testing"

	"github.com/gpumem/gpumem/internal/web"
)

// benchHandler times one API request through the handler, middleware
// included, without a network connection.
func benchHandler(b *testing.B, method, target, body string) {
	benchHandlerWith(b, web.Options{}, method, target, body)
}

func benchHandlerWith(b *testing.B, opts web.Options, method, target, body string) {
	h := web.New(opts).Handler()
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
// the catalog, with the largest batch and sequence searched on each
// (without the server's cache of answers, so every request plans).
func BenchmarkHandlerPlan(b *testing.B) {
	benchHandlerWith(b, web.Options{PlanCacheSize: -1}, "GET", "/api/plan?model=llama3-8b&seq_len=4096&method=lora", "")
}

// BenchmarkHandlerPlanCached is the same request answered from the
// server's cache of plans.
func BenchmarkHandlerPlanCached(b *testing.B) {
	benchHandler(b, "GET", "/api/plan?model=llama3-8b&seq_len=4096&method=lora", "")
}

// BenchmarkHandlerEstimatePretty is GET /api/estimate?pretty: the
// indented JSON the CLI prints.
func BenchmarkHandlerEstimatePretty(b *testing.B) {
	benchHandler(b, "GET", "/api/estimate?model=llama3-8b&seq_len=4096&method=lora&lora_target_modules=all-linear&pretty", "")
}
