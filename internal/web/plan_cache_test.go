package web

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestLRU(t *testing.T) {
	c := newLRU[int, string](2)
	c.add(1, "a")
	c.add(2, "b")
	if v, ok := c.get(1); !ok || v != "a" { // 1 is now the most recent
		t.Fatalf("get(1) = %q, %v", v, ok)
	}
	c.add(3, "c") // drops 2, the least recently used
	if _, ok := c.get(2); ok {
		t.Error("2 was kept; the least recently used entry should go")
	}
	c.add(1, "A")
	for k, want := range map[int]string{1: "A", 3: "c"} {
		if v, ok := c.get(k); !ok || v != want {
			t.Errorf("get(%d) = %q, %v; want %q", k, v, ok, want)
		}
	}
	if c.len() != 2 {
		t.Errorf("len %d, want 2", c.len())
	}
}

func planRequest(t *testing.T, h http.Handler, ctx context.Context, target string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil).WithContext(ctx)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestPlanCache checks that a repeated /api/plan request is answered from
// the cache with the same bytes, that another job is planned anew, and
// that a request whose context has ended stops, answers 503 and leaves
// nothing in the cache.
func TestPlanCache(t *testing.T) {
	s := New(Options{PlanCacheSize: 4})
	h := s.Handler()
	const target = "/api/plan?model=llama3-8b&seq_len=4096&method=lora&gpus=H100-SXM,L4"
	first := planRequest(t, h, context.Background(), target)
	if first.Code != http.StatusOK || s.plans.len() != 1 {
		t.Fatalf("status %d, %d cached; body %.300s", first.Code, s.plans.len(), first.Body)
	}
	again := planRequest(t, h, context.Background(), target)
	if !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) || s.plans.len() != 1 {
		t.Errorf("the cached answer differs, or was planned again (%d cached)", s.plans.len())
	}
	// The uncached answer of a server without a cache is the same.
	fresh := planRequest(t, New(Options{PlanCacheSize: -1}).Handler(), context.Background(), target)
	if !bytes.Equal(fresh.Body.Bytes(), first.Body.Bytes()) {
		t.Error("the cached answer differs from a fresh plan")
	}
	pretty := planRequest(t, h, context.Background(), target+"&pretty")
	if !bytes.Contains(pretty.Body.Bytes(), []byte("\n  \"model\": ")) {
		t.Errorf("?pretty on a cached plan is not indented: %.100s", pretty.Body)
	}
	if planRequest(t, h, context.Background(), strings.Replace(target, "4096", "2048", 1)); s.plans.len() != 2 {
		t.Errorf("%d cached after a second job, want 2", s.plans.len())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := planRequest(t, h, ctx, strings.Replace(target, "4096", "1024", 1))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "ended before the plan was complete") {
		t.Errorf("ended request: status %d, body %.200s", rec.Code, rec.Body)
	}
	if s.plans.len() != 2 {
		t.Errorf("an abandoned plan was cached (%d entries)", s.plans.len())
	}
}
