package hub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testCommit = "0123456789abcdef0123456789abcdef01234567"
	testToken  = "hf_TESTSECRETtokenValue123"
)

// fakeRepo is one repository of the fake Hub.
type fakeRepo struct {
	files map[string][]byte // small files served by the Hub itself
	lfs   map[string][]byte // large files redirected to the CDN
	gated bool              // needs testToken
}

// fakeHub behaves like the Hub for the requests the client makes:
// resolve URLs with X-Repo-Commit / ETag headers, CDN redirects with
// X-Linked-Size / X-Linked-Etag, X-Error-Code answers, and scripted
// failures. The CDN is a second server (another host) serving Range.
type fakeHub struct {
	t     *testing.T
	hub   *httptest.Server
	cdn   *httptest.Server
	repos map[string]*fakeRepo
	// renamed maps an old repo id to its new one (307 to the new path).
	renamed map[string]string

	mu       sync.Mutex
	hits     map[string]int // requests per path
	fail     []int          // statuses to answer first, in order
	retryAft string         // Retry-After sent with scripted failures
	delay    time.Duration  // sleep before answering
	cdnAuth  []string       // Authorization headers the CDN saw
	hubAuth  []string       // Authorization headers the Hub saw
}

func newFakeHub(t *testing.T) *fakeHub {
	f := &fakeHub{t: t, repos: map[string]*fakeRepo{}, renamed: map[string]string{}, hits: map[string]int{}}
	f.hub = httptest.NewServer(http.HandlerFunc(f.serveHub))
	f.cdn = httptest.NewServer(http.HandlerFunc(f.serveCDN))
	t.Cleanup(f.hub.Close)
	t.Cleanup(f.cdn.Close)
	return f
}

func (f *fakeHub) client(t *testing.T, cfg Config) *Client {
	t.Helper()
	if cfg.Endpoint == "" {
		cfg.Endpoint = f.hub.URL
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.sleep = func(context.Context, time.Duration) error { return nil }
	c.jitter = func() float64 { return 0 }
	return c
}

func (f *fakeHub) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path]
}

func etagOf(data []byte) string { return fmt.Sprintf("%x", sha256.Sum256(data)) }

func (f *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hits[r.URL.Path]++
	f.hubAuth = append(f.hubAuth, r.Header.Get("Authorization"))
	var status int
	if len(f.fail) > 0 {
		status, f.fail = f.fail[0], f.fail[1:]
	}
	delay := f.delay
	f.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	if status != 0 {
		if f.retryAft != "" {
			w.Header().Set("Retry-After", f.retryAft)
		}
		http.Error(w, "scripted failure", status)
		return
	}
	if rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/api/models/"); ok {
		f.serveInfo(w, rest)
		return
	}
	// /{org}/{name}/resolve/{rev}/{file...}
	parts := strings.SplitN(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/", 5)
	if len(parts) < 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	id := parts[0] + "/" + parts[1]
	if to, ok := f.renamed[id]; ok {
		http.Redirect(w, r, "/"+to+"/resolve/"+parts[3]+"/"+parts[4], http.StatusTemporaryRedirect)
		return
	}
	repo := f.repos[id]
	switch {
	case repo == nil:
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "Repository not found", http.StatusNotFound)
		return
	case r.Header.Get("Authorization") != "" && r.Header.Get("Authorization") != "Bearer "+testToken:
		w.Header().Set("X-Error-Message", "Invalid credentials in Authorization header")
		http.Error(w, "Invalid credentials", http.StatusUnauthorized)
		return
	case repo.gated && r.Header.Get("Authorization") == "":
		w.Header().Set("X-Error-Code", "GatedRepo")
		w.Header().Set("X-Error-Message", "Access to model "+id+" is restricted.")
		http.Error(w, "gated", http.StatusUnauthorized)
		return
	}
	w.Header().Set("X-Repo-Commit", testCommit)
	file := parts[4]
	if data, ok := repo.files[file]; ok {
		w.Header().Set("ETag", `"`+etagOf(data)[:40]+`"`)
		http.ServeContent(w, r, file, time.Time{}, bytes.NewReader(data))
		return
	}
	if data, ok := repo.lfs[file]; ok {
		w.Header().Set("X-Linked-Size", fmt.Sprint(len(data)))
		w.Header().Set("X-Linked-Etag", `"`+etagOf(data)+`"`)
		http.Redirect(w, r, f.cdn.URL+"/blob/"+id+"/"+file+"?X-Amz-Signature=abc", http.StatusFound)
		return
	}
	w.Header().Set("X-Error-Code", "EntryNotFound")
	http.Error(w, "Entry not found", http.StatusNotFound)
}

func (f *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.cdnAuth = append(f.cdnAuth, r.Header.Get("Authorization"))
	f.hits["cdn:"+r.URL.Path]++
	f.mu.Unlock()
	rest := strings.TrimPrefix(r.URL.Path, "/blob/")
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 3 {
		http.NotFound(w, r)
		return
	}
	repo := f.repos[parts[0]+"/"+parts[1]]
	if repo == nil || repo.lfs[parts[2]] == nil {
		http.NotFound(w, r)
		return
	}
	http.ServeContent(w, r, parts[2], time.Time{}, bytes.NewReader(repo.lfs[parts[2]]))
}

// serveInfo answers /api/models/{org}/{name}/revision/{rev}.
func (f *fakeHub) serveInfo(w http.ResponseWriter, rest string) {
	parts := strings.SplitN(rest, "/", 4)
	if len(parts) != 4 || parts[2] != "revision" {
		http.NotFound(w, nil)
		return
	}
	repo := f.repos[parts[0]+"/"+parts[1]]
	if repo == nil {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		w.WriteHeader(http.StatusNotFound)
		return
	}
	var sib []map[string]string
	for name := range repo.files {
		sib = append(sib, map[string]string{"rfilename": name})
	}
	for name := range repo.lfs {
		sib = append(sib, map[string]string{"rfilename": name})
	}
	sib = append(sib, map[string]string{"rfilename": "../evil"})
	json.NewEncoder(w).Encode(map[string]any{"id": parts[0] + "/" + parts[1], "sha": testCommit, "siblings": sib})
}
