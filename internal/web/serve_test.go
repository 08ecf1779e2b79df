package web

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gpumem/gpumem/model"
)

func TestNewHTTPServerTimeouts(t *testing.T) {
	s := NewHTTPServer(http.NotFoundHandler(), nil)
	for name, d := range map[string]time.Duration{"ReadHeaderTimeout": s.ReadHeaderTimeout, "ReadTimeout": s.ReadTimeout, "WriteTimeout": s.WriteTimeout, "IdleTimeout": s.IdleTimeout} {
		if d <= 0 || d > 2*time.Minute {
			t.Errorf("%s = %v, want a bound", name, d)
		}
	}
	if s.MaxHeaderBytes <= 0 || s.MaxHeaderBytes > 1<<20 {
		t.Errorf("MaxHeaderBytes = %d", s.MaxHeaderBytes)
	}
}

// TestServeGracefulShutdown cancels the context while a request is in
// flight: the request completes, new connections are refused, and Serve
// returns nil.
func TestServeGracefulShutdown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	resolve := func(ctx context.Context, ref string) (*model.Model, error) {
		close(entered)
		<-release
		return model.Lookup("llama3-8b")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- New(Options{Resolve: resolve}).Serve(ctx, ln) }()

	type answer struct {
		status int
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/api/params?model=org/slow")
		if err != nil {
			got <- answer{err: err}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got <- answer{status: resp.StatusCode}
	}()
	<-entered
	cancel()
	// Shutdown closes the listener first: new connections fail.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts after shutdown began")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) before the request in flight finished", err)
	default:
	}
	close(release)
	if a := <-got; a.err != nil || a.status != http.StatusOK {
		t.Errorf("request in flight: status %d, err %v; want it to complete", a.status, a.err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v, want nil after a shutdown", err)
		}
	case <-time.After(ShutdownTimeout + time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestServeReportsListenerErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	err = New(Options{}).Serve(context.Background(), ln)
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve on a closed listener = %v, want an error", err)
	}
}
