package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gpumem/gpumem/internal/web"
	"github.com/gpumem/gpumem/model"
)

// badRequest is the API side of one case of the bad-input corpus in
// testdata/bad (the format is described in testdata/bad/README.md).
type badRequest struct {
	Name   string
	Method string
	Target string // path and query, {dir} replaced
	Body   string
	// Local is true when the request names a file of the case (a
	// config.json path), which only a server resolving local paths reads.
	Local  bool
	Status int
	Field  string
	Errors []string // substrings of the JSON error message
}

// badCorpus is the corpus directory, relative to this package.
const badCorpus = "../../testdata/bad"

// loadBadRequests reads the cases of the corpus that have an api file.
func loadBadRequests(t *testing.T) []badRequest {
	t.Helper()
	entries, err := os.ReadDir(badCorpus)
	if err != nil {
		t.Fatalf("read the bad-input corpus: %v", err)
	}
	var reqs []badRequest
	for _, e := range entries {
		dir, err := filepath.Abs(filepath.Join(badCorpus, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		api, err := os.ReadFile(filepath.Join(dir, "api"))
		if os.IsNotExist(err) || !e.IsDir() {
			continue // a CLI-only case
		}
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		reqs = append(reqs, readBadRequest(t, e.Name(), dir, string(api)))
	}
	if len(reqs) < 20 {
		t.Fatalf("the corpus has %d API cases, want at least 20", len(reqs))
	}
	return reqs
}

// readBadRequest parses an api file ("METHOD /path?query", then the body,
// or "METHOD /path < file" to send a file of the case) and the expect
// file's API keys.
func readBadRequest(t *testing.T, name, dir, api string) badRequest {
	t.Helper()
	first, body, _ := strings.Cut(api, "\n")
	method, target, ok := strings.Cut(first, " ")
	if !ok {
		t.Fatalf("%s/api: want METHOD /path on the first line, got %q", name, first)
	}
	r := badRequest{Name: name, Method: method, Body: body}
	if target, file, ok := strings.Cut(target, " < "); ok {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatalf("%s/api: %v", name, err)
		}
		r.Target, r.Body = target, string(data)
	} else {
		r.Target = target
	}
	r.Local = strings.Contains(r.Target, "{dir}") || strings.Contains(r.Target, "{fifo}")
	if strings.Contains(r.Target, "{fifo}") {
		r.Target = strings.ReplaceAll(r.Target, "{fifo}", url.QueryEscape(makeFIFO(t)))
	}
	r.Target = strings.ReplaceAll(r.Target, "{dir}", url.QueryEscape(dir))
	expect, err := os.ReadFile(filepath.Join(dir, "expect"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, line := range strings.Split(string(expect), "\n") {
		key, value, _ := strings.Cut(line, ": ")
		switch key {
		case "status":
			if r.Status, err = strconv.Atoi(value); err != nil {
				t.Fatalf("%s/expect: status: %v", name, err)
			}
		case "field":
			r.Field = value
		case "error":
			r.Errors = append(r.Errors, value)
		}
	}
	if r.Status != http.StatusBadRequest || len(r.Errors) == 0 {
		t.Fatalf("%s/expect: an API case needs status: 400 and at least one error line", name)
	}
	return r
}

// makeFIFO makes a named pipe that no process writes to, for the {fifo}
// of a case: opening it for reading would wait forever.
func makeFIFO(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	return p
}

// TestBadInputCorpus sends every API case of testdata/bad to the handler:
// a 400 with a JSON error that names the request key and says what was
// expected.
func TestBadInputCorpus(t *testing.T) {
	catalogOnly := web.New(web.Options{}).Handler()
	// Cases about a broken config.json name the file by path; a server
	// that resolves local paths (as gpumem serve --allow-local-paths)
	// reads it.
	local := web.New(web.Options{Resolve: func(_ context.Context, ref string) (*model.Model, error) {
		return model.Load(ref)
	}}).Handler()
	for _, r := range loadBadRequests(t) {
		t.Run(r.Name, func(t *testing.T) {
			h := catalogOnly
			if r.Local {
				h = local
			}
			rec := serve(h, httptestRequest(r.Method, r.Target, r.Body))
			if rec.Code != r.Status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, r.Status, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want JSON", ct)
			}
			var e web.Error
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
				t.Fatalf("error body is not JSON: %v\n%s", err, rec.Body)
			}
			if e.Field != r.Field {
				t.Errorf("field %q, want %q (message %q)", e.Field, r.Field, e.Message)
			}
			for _, want := range r.Errors {
				if !strings.Contains(e.Message, want) {
					t.Errorf("message %q does not contain %q", e.Message, want)
				}
			}
			if strings.Contains(e.Message, "panic") || strings.Contains(e.Message, "goroutine ") {
				t.Errorf("message looks like a crash: %q", e.Message)
			}
			if flag := cliFlagRE.FindString(e.Message); flag != "" {
				t.Errorf("message names the CLI flag %s, not the request key: %q", flag, e.Message)
			}
		})
	}
}

// cliFlagRE finds a command-line flag in a message: the API names the
// request's keys, never estimate's flags.
var cliFlagRE = regexp.MustCompile(`(^|[\s(])--[a-z][a-z0-9-]*`)
