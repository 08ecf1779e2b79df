package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/web"
	"github.com/gpumem/gpumem/model"
)

// A request whose model resolves too slowly (a Hub that trickles bytes)
// gets a 504 with a JSON error when its deadline passes, on every route
// that resolves models, GET and POST, instead of a connection closed by
// the server's write timeout.
func TestRequestDeadline(t *testing.T) {
	slow := func(ctx context.Context, ref string) (*model.Model, error) {
		<-ctx.Done() // a resolver whose Hub requests end with the request
		return nil, context.Cause(ctx)
	}
	h := web.New(web.Options{Resolve: slow, RequestTimeout: 50 * time.Millisecond}).Handler()
	for _, tc := range []struct{ method, target, body string }{
		{"GET", "/api/estimate?model=org/slow", ""},
		{"POST", "/api/estimate", `{"model": "org/slow"}`},
		{"GET", "/api/params?model=org/slow", ""},
		{"POST", "/api/plan", `{"model": "org/slow", "gpus": ["H100"]}`},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			start := time.Now()
			rec := do(t, h, tc.method, tc.target, tc.body)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("answered after %s", d)
			}
			if rec.Code != http.StatusGatewayTimeout {
				t.Fatalf("status %d, want 504; body %s", rec.Code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q", ct)
			}
			if e := decodeError(t, rec.Body.Bytes()); !strings.Contains(e.Message, "50ms deadline") {
				t.Errorf("message %q does not name the deadline", e.Message)
			}
		})
	}
	// Requests that finish in time are untouched.
	if rec := do(t, h, "GET", "/api/estimate?model=llama3-8b", ""); rec.Code != http.StatusOK {
		t.Errorf("catalog model: status %d", rec.Code)
	}
}

// The default deadline leaves the handler time to answer before the
// server's write timeout closes the connection.
func TestDefaultRequestTimeoutBelowWriteTimeout(t *testing.T) {
	if web.DefaultRequestTimeout >= web.WriteTimeout {
		t.Errorf("DefaultRequestTimeout %s is not below WriteTimeout %s", web.DefaultRequestTimeout, web.WriteTimeout)
	}
}

// A path that is not valid UTF-8 is the client's mistake: 400 with a
// JSON error, not the file server's 500.
func TestInvalidPagePath(t *testing.T) {
	h := web.New(web.Options{}).Handler()
	for _, target := range []string{"/%ff", "/%ff/", "/vendor/%c3%28"} {
		rec := do(t, h, "GET", target, "")
		if rec.Code != http.StatusBadRequest {
			t.Errorf("GET %s: status %d, want 400; body %s", target, rec.Code, rec.Body)
			continue
		}
		if e := decodeError(t, rec.Body.Bytes()); !strings.Contains(e.Message, "invalid path") {
			t.Errorf("GET %s: message %q", target, e.Message)
		}
	}
	if rec := do(t, h, "GET", "/missing.js", ""); rec.Code != http.StatusNotFound {
		t.Errorf("GET /missing.js: status %d, want 404", rec.Code)
	}
}
