package modelref

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpumem/gpumem/hub"
	"github.com/gpumem/gpumem/model"
)

const testCommit = "0123456789abcdef0123456789abcdef01234567"

// catalogConfig returns a catalog model's config.json.
func catalogConfig(t *testing.T, name string) []byte {
	t.Helper()
	data, err := model.CatalogConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// fakeHub serves config.json of the repos given, by revision "main" or
// testCommit, as the Hub does: X-Repo-Commit on answers, X-Error-Code
// RepoNotFound for other repos and EntryNotFound for other files.
type fakeHub struct {
	srv   *httptest.Server
	mu    sync.Mutex
	paths []string // request paths, in order
}

func newFakeHub(t *testing.T, repos map[string][]byte) *fakeHub {
	t.Helper()
	f := &fakeHub{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.paths = append(f.paths, r.URL.Path)
		f.mu.Unlock()
		for repo, cfg := range repos {
			for _, rev := range []string{"main", "v1", testCommit} {
				prefix := "/" + repo + "/resolve/" + rev + "/"
				if file, ok := strings.CutPrefix(r.URL.Path, prefix); ok {
					w.Header().Set("X-Repo-Commit", testCommit)
					if file != hub.ConfigFile {
						w.Header().Set("X-Error-Code", "EntryNotFound")
						http.Error(w, "entry not found", http.StatusNotFound)
						return
					}
					w.Write(cfg)
					return
				}
			}
		}
		if strings.HasPrefix(r.URL.Path, "/org/gated/") {
			w.Header().Set("X-Error-Code", "GatedRepo")
			http.Error(w, "gated", http.StatusForbidden)
			return
		}
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "not found", http.StatusNotFound)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeHub) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...)
}

// client returns a Hub client for the fake Hub with a fresh cache.
func (f *fakeHub) client(t *testing.T) *hub.Client {
	t.Helper()
	c, err := hub.New(hub.Config{Endpoint: f.srv.URL, CacheDir: t.TempDir(), Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// offlineClient reads the cache in dir only.
func offlineClient(t *testing.T, dir string) *hub.Client {
	t.Helper()
	c, err := hub.New(hub.Config{CacheDir: dir, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// noNetwork is a Hub client whose connections all fail as a host name
// that does not resolve does.
func noNetwork(t *testing.T) *hub.Client {
	t.Helper()
	dial := func(_ context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: "huggingface.co", IsNotFound: true}}
	}
	c, err := hub.New(hub.Config{CacheDir: t.TempDir(), Retries: -1,
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: dial}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeFile writes data to path, creating its folder.
func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLocate(t *testing.T) {
	t.Chdir(t.TempDir())
	cfg := catalogConfig(t, "llama3-8b")
	writeFile(t, "dir/config.json", cfg)
	writeFile(t, "org/name@rev/config.json", cfg)
	writeFile(t, "mymodel/config.json", cfg)
	writeFile(t, "llama3-8b/config.json", cfg)
	local := Options{LocalPaths: true}
	for _, tc := range []struct {
		ref     string
		o       Options
		kind    Kind
		at      string // Path for File and Folder, Hub.String() otherwise
		wantErr error
	}{
		{"llama3-8b", Options{}, Catalog, "meta-llama/Meta-Llama-3-8B", nil},
		{" META-LLAMA/meta-llama-3-8b ", Options{}, Catalog, "meta-llama/Meta-Llama-3-8B", nil},
		{"llama3-8b", local, Catalog, "meta-llama/Meta-Llama-3-8B", nil}, // the catalog before the disk
		{"llama3-8b@main", Options{}, Hub, "meta-llama/Meta-Llama-3-8B@main", nil},
		{"llama3-8b", Options{Revision: "v2"}, Hub, "meta-llama/Meta-Llama-3-8B@v2", nil},
		{"org/name", Options{}, Hub, "org/name", nil},
		{"org/name", Options{Revision: "v1"}, Hub, "org/name@v1", nil},
		{"org/name@v1", Options{Revision: "v1"}, Hub, "org/name@v1", nil},
		{"org/name@refs/pr/1", Options{}, Hub, "org/name@refs/pr/1", nil},
		{"org/name@rev", Options{}, Hub, "org/name@rev", nil}, // exists here, but paths are refused
		{"org/name@rev", local, Folder, "org/name@rev", nil},
		{"mymodel", local, Folder, "mymodel", nil},
		{"dir", local, Folder, "dir", nil},
		{"dir/config.json", local, File, "dir/config.json", nil},
		{"./dir", local, Folder, "./dir", nil},
		{"mymodel", Options{}, "", "", model.ErrNotFound},
		{"nosuch", local, "", "", model.ErrNotFound},
		{"", local, "", "", model.ErrNotFound},
		{"dir/config.json", Options{}, "", "", ErrLocalPath},
		{"./dir", Options{}, "", "", ErrLocalPath},
		{"/etc", Options{}, "", "", ErrLocalPath},
		{`C:\models\x`, Options{}, "", "", ErrLocalPath},
		{"a/b/c", Options{}, "", "", ErrLocalPath},
		{"~/models/x", Options{}, "", "", ErrLocalPath},
		{"x.gguf", Options{}, "", "", ErrLocalPath},
		{"./nosuch", local, "", "", fs.ErrNotExist},
		{"/dev/null", local, "", "", nil}, // not a regular file: an error of its own
		{"org/name@", Options{}, "", "", hub.ErrInvalidRef},
		{"org/na..me", Options{}, "", "", hub.ErrInvalidRef},
		{"org/name@v2", Options{Revision: "v1"}, "", "", hub.ErrInvalidRef},
		{"org/name", Options{Revision: "a..b"}, "", "", hub.ErrInvalidRef},
		{"./dir", Options{LocalPaths: true, Revision: "v1"}, "", "", hub.ErrInvalidRef},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			loc, err := Locate(tc.ref, tc.o)
			if tc.kind == "" {
				if err == nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Fatalf("Locate(%q) = %+v, %v; want an error wrapping %v", tc.ref, loc, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Locate(%q): %v", tc.ref, err)
			}
			at := loc.Hub.String()
			if loc.Kind == File || loc.Kind == Folder {
				at = loc.Path
			}
			if loc.Kind != tc.kind || at != tc.at {
				t.Errorf("Locate(%q) = %s %s, want %s %s", tc.ref, loc.Kind, at, tc.kind, tc.at)
			}
		})
	}
}

// TestLocateWithoutLocalPathsIgnoresTheDisk checks the promise a server
// relies on: without LocalPaths, what a reference names does not depend
// on what exists on the disk.
func TestLocateWithoutLocalPathsIgnoresTheDisk(t *testing.T) {
	t.Chdir(t.TempDir())
	refs := []string{"org/name", "org/name@rev", "mymodel", "mymodel@v1", "cfg/config.json", "./dir", "org/name@refs/pr/1", "llama3-8b"}
	type answer struct {
		loc Location
		err string
	}
	ask := func() []answer {
		var out []answer
		for _, ref := range refs {
			loc, err := Locate(ref, Options{})
			a := answer{loc: loc}
			if err != nil {
				a.err = err.Error()
			}
			out = append(out, a)
		}
		return out
	}
	before := ask()
	for _, ref := range refs {
		writeFile(t, filepath.Join(ref, "config.json"), catalogConfig(t, "llama3-8b"))
	}
	after := ask()
	for i := range refs {
		if before[i] != after[i] {
			t.Errorf("%s: %+v before the files existed, %+v after", refs[i], before[i], after[i])
		}
		if k := after[i].loc.Kind; k == File || k == Folder {
			t.Errorf("%s: located on the disk without LocalPaths", refs[i])
		}
	}
}

func TestResolveCatalogAndLocal(t *testing.T) {
	t.Chdir(t.TempDir())
	cfg := catalogConfig(t, "llama3-8b")
	want, err := model.Lookup("llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, "m/config.json", cfg)
	writeFile(t, "plain.json", cfg)
	ctx := context.Background()
	for _, tc := range []struct {
		ref  string
		kind Kind
		id   string
	}{
		{"llama3-8b", Catalog, "meta-llama/Meta-Llama-3-8B"},
		{"m", Folder, "m"},
		{"./m/", Folder, "./m/"},
		{"m/config.json", File, "m/config.json"},
		{"plain.json", File, "plain.json"},
	} {
		src, err := Resolve(ctx, tc.ref, Options{LocalPaths: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		if src.Kind != tc.kind || src.Model.ID != tc.id || src.Model.TotalParams() != want.TotalParams() ||
			string(src.Config) != string(cfg) || len(src.Notes) != 0 {
			t.Errorf("%s: %s %s %d params, %d config bytes, notes %q; want %s %s %d, %d bytes, none",
				tc.ref, src.Kind, src.Model.ID, src.Model.TotalParams(), len(src.Config), src.Notes, tc.kind, tc.id, want.TotalParams(), len(cfg))
		}
	}
}

// TestResolveFolderPreprocessor checks that a model folder's
// preprocessor_config.json sets a LLaVA tower's image size, as
// model.ParseFS reads it.
func TestResolveFolderPreprocessor(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "config.json"), catalogConfig(t, "llava-hf/llava-1.5-7b-hf"))
	writeFile(t, filepath.Join(dir, "preprocessor_config.json"), []byte(`{"crop_size": {"height": 224, "width": 224}}`))
	src, err := Resolve(context.Background(), dir, Options{LocalPaths: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := src.Model.Vision.ImageSize; got != 224 {
		t.Errorf("image size %d, want 224 from preprocessor_config.json", got)
	}
}

func TestResolveLocalErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "bad", "config.json"), []byte(`{"model_type": "llama", "hidden_size": -1}`))
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	writeFile(t, big, make([]byte, MaxConfigBytes+1))
	for _, tc := range []struct {
		ref  string
		want []string
	}{
		{filepath.Join(dir, "bad"), []string{"bad", "config.json", "hidden_size"}},
		{filepath.Join(dir, "empty"), []string{"empty", "config.json", "no such file"}},
		{big, []string{"big.json", "limit"}},
		{"/dev/null", []string{"/dev/null", "not a regular file"}},
	} {
		_, err := Resolve(context.Background(), tc.ref, Options{LocalPaths: true})
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v lacks %q", tc.ref, err, w)
			}
		}
	}
}

func TestResolveHub(t *testing.T) {
	cfg := catalogConfig(t, "qwen3-0.6b")
	want, err := model.Parse(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := newFakeHub(t, map[string][]byte{"org/tiny": cfg})
	ctx := context.Background()
	c := h.client(t)
	for _, tc := range []struct {
		ref string
		o   Options
		id  string
	}{
		{"org/tiny", Options{Hub: c}, "org/tiny"},
		{"org/tiny@v1", Options{Hub: c}, "org/tiny@v1"},
		{"org/tiny", Options{Hub: c, Revision: "v1"}, "org/tiny@v1"},
	} {
		src, err := Resolve(ctx, tc.ref, tc.o)
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		if src.Kind != Hub || src.Model.ID != tc.id || src.Commit != testCommit || src.Model.TotalParams() != want.TotalParams() ||
			string(src.Config) != string(cfg) || len(src.Notes) != 0 {
			t.Errorf("%s: %s %s commit %s, %d params, notes %q", tc.ref, src.Kind, src.Model.ID, src.Commit, src.Model.TotalParams(), src.Notes)
		}
	}
	if got := h.requests(); !slices.Contains(got, "/org/tiny/resolve/v1/config.json") {
		t.Errorf("requests %q; none asks for revision v1", got)
	}

	// The Hub's refusals keep their sentinel; a missing model names the
	// closest catalog model.
	for _, tc := range []struct {
		ref  string
		is   error
		want string
	}{
		{"org/gated", hub.ErrGated, "HF_TOKEN"},
		{"meta-llama/Llama-3.1-8B-Instruct", hub.ErrNotFound, "closest: meta-llama/Llama-3.1-8B"},
		{"org/unknown-model", hub.ErrNotFound, "pass a path to its config.json or model folder"},
	} {
		_, err := Resolve(ctx, tc.ref, Options{Hub: c})
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %v naming %q", tc.ref, err, tc.is, tc.want)
		}
	}
}

// TestResolveHubCache checks that a Hub id is read from a Hugging Face
// cache folder offline, and that a snapshot folder of the cache is a
// local folder.
func TestResolveHubCache(t *testing.T) {
	cache := t.TempDir()
	cfg := catalogConfig(t, "qwen3-0.6b")
	repo := filepath.Join(cache, "models--org--cached")
	snap := filepath.Join(repo, "snapshots", testCommit)
	writeFile(t, filepath.Join(repo, "refs", "main"), []byte(testCommit))
	writeFile(t, filepath.Join(snap, "config.json"), cfg)
	ctx := context.Background()
	o := Options{Hub: offlineClient(t, cache), LocalPaths: true}
	for _, ref := range []string{"org/cached", "org/cached@" + testCommit} {
		src, err := Resolve(ctx, ref, o)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if src.Kind != Hub || src.Commit != testCommit || string(src.Config) != string(cfg) {
			t.Errorf("%s: %s commit %q", ref, src.Kind, src.Commit)
		}
	}
	src, err := Resolve(ctx, snap, o)
	if err != nil || src.Kind != Folder || string(src.Config) != string(cfg) {
		t.Errorf("snapshot folder: %+v %v", src, err)
	}
	// The same cache path written on another machine names the repository
	// and commit, read from this machine's cache.
	elsewhere := "/nonexistent/.cache/huggingface/hub/models--org--cached/snapshots/" + testCommit
	src, err = Resolve(ctx, elsewhere, o)
	if err != nil || src.Kind != Hub || src.Hub.String() != "org/cached@"+testCommit || len(src.Notes) != 1 ||
		!strings.Contains(src.Notes[0], "does not exist here; read as the Hub's org/cached@"+testCommit) {
		t.Errorf("cache path from elsewhere: %+v %v", src, err)
	}
	// Offline, a model missing from the cache fails naming offline mode.
	if _, err := Resolve(ctx, "org/other", o); !errors.Is(err, hub.ErrOffline) {
		t.Errorf("missing from the cache: %v, want ErrOffline", err)
	}
}

// TestResolveReleases checks that a release of a catalog model the Hub
// cannot supply is read as that model with a note, and that everything
// else keeps its error.
func TestResolveReleases(t *testing.T) {
	ctx := context.Background()
	offline := offlineClient(t, t.TempDir())
	hubs := map[string]HubClient{"offline": offline, "unreachable": noNetwork(t), "none": nil}
	for _, tc := range []struct {
		ref, id string
		exact   bool // the name is the catalog model's, without its organisation
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B", false},
		{"meta-llama/Llama-2-7b-chat-hf", "meta-llama/Llama-2-7b-hf", false},
		{"google/gemma-2-9b-it", "google/gemma-2-9b", false},
		{"google/gemma-3-4b-pt", "google/gemma-3-4b-it", false},
		{"mistralai/Mistral-Nemo-Instruct-2407", "mistralai/Mistral-Nemo-Base-2407", false},
		{"deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-V3", false},
		{"deepseek-ai/DeepSeek-V3-Base", "deepseek-ai/DeepSeek-V3", false},
		{"Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B", false},
		{"Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B", false},
		{"llama3.1-8b-instruct", "meta-llama/Llama-3.1-8B", false},
		{"Llama-3.1-8B", "meta-llama/Llama-3.1-8B", true},
	} {
		want, err := model.Lookup(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		for name, h := range hubs {
			src, err := Resolve(ctx, tc.ref, Options{Hub: h})
			if err != nil {
				t.Errorf("%s (%s Hub): %v", tc.ref, name, err)
				continue
			}
			if src.Kind != Catalog || src.Ref != tc.ref || src.Model.ID != tc.id || src.Model.TotalParams() != want.TotalParams() {
				t.Errorf("%s (%s Hub): %s %s %s", tc.ref, name, src.Kind, src.Ref, src.Model.ID)
			}
			if len(src.Notes) != 1 || !strings.Contains(src.Notes[0], "read as the catalog's "+tc.id) ||
				strings.Contains(src.Notes[0], "assuming") == tc.exact {
				t.Errorf("%s (%s Hub): notes %q", tc.ref, name, src.Notes)
			}
			if w := src.Model.Warnings; len(w) == 0 || w[len(w)-1] != src.Notes[0] {
				t.Errorf("%s (%s Hub): the note is not among the model's warnings: %q", tc.ref, name, w)
			}
			if _, err := Resolve(ctx, tc.ref, Options{Hub: h, Exact: true}); err == nil {
				t.Errorf("%s (%s Hub): Exact resolved a stand-in", tc.ref, name)
			}
		}
	}
	// Not releases: another version, a quantization, another organisation,
	// a revision asked for.
	for _, ref := range []string{"mistralai/Mistral-7B-Instruct-v0.3", "Qwen/Qwen2.5-7B-Instruct-AWQ", "someone/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct@v1", "Qwen2-7B-Instruct"} {
		for name, h := range hubs {
			if src, err := Resolve(ctx, ref, Options{Hub: h}); err == nil {
				t.Errorf("%s (%s Hub): read as %s", ref, name, src.Model.ID)
			}
		}
	}
	// Online, the Hub's own config wins.
	cfg := catalogConfig(t, "qwen3-0.6b")
	h := newFakeHub(t, map[string][]byte{"meta-llama/Llama-3.1-8B-Instruct": cfg})
	src, err := Resolve(ctx, "meta-llama/Llama-3.1-8B-Instruct", Options{Hub: h.client(t)})
	if err != nil || src.Kind != Hub || len(src.Notes) != 0 || string(src.Config) != string(cfg) {
		t.Errorf("online: %+v %v", src, err)
	}
}

// TestResolveUnreachableWording checks that a Hub that cannot be reached
// is reported in words, without the network error's details, and still
// matches hub.ErrUnreachable.
func TestResolveUnreachableWording(t *testing.T) {
	_, err := Resolve(context.Background(), "someone/Llama-2-7b-chat-hf", Options{Hub: noNetwork(t)})
	if !errors.Is(err, hub.ErrUnreachable) {
		t.Fatalf("got %v, want ErrUnreachable", err)
	}
	msg := err.Error()
	for _, w := range []string{"someone/Llama-2-7b-chat-hf", "could not be reached", "closest: meta-llama/Llama-2-7b-hf"} {
		if !strings.Contains(msg, w) {
			t.Errorf("%q lacks %q", msg, w)
		}
	}
	for _, w := range []string{"no such host", "dial", "lookup", "huggingface.co"} {
		if strings.Contains(msg, w) {
			t.Errorf("%q shows the network error (%q)", msg, w)
		}
	}
}

// TestResolveMissingPath checks that a path that does not exist here is
// read by its last component, with a note, and fails as a missing path
// when nothing matches.
func TestResolveMissingPath(t *testing.T) {
	ctx := context.Background()
	online := newFakeHub(t, map[string][]byte{"Qwen/Qwen2-7B-Instruct": catalogConfig(t, "qwen2.5-7b")})
	offline := offlineClient(t, t.TempDir())
	for _, tc := range []struct {
		ref  string
		h    HubClient
		kind Kind
		at   string
		note string
	}{
		{"/mnt/models/Llama-3.1-8B", nil, Catalog, "meta-llama/Llama-3.1-8B", "does not exist here; read by its last component as the catalog's meta-llama/Llama-3.1-8B"},
		{"/mnt/models/llama3-8b/config.json", nil, Catalog, "meta-llama/Meta-Llama-3-8B", "read by its last component as the catalog's meta-llama/Meta-Llama-3-8B"},
		{`D:\models\Llama-3.1-8B`, nil, Catalog, "meta-llama/Llama-3.1-8B", "read by its last component"},
		{"/mnt/models/Qwen2-7B-Instruct", online.client(t), Hub, "Qwen/Qwen2-7B-Instruct", "read as the Hub's Qwen/Qwen2-7B-Instruct, by its last component (Qwen publishes"},
		{"/mnt/models/Qwen2.5-7B-Instruct", offline, Catalog, "Qwen/Qwen2.5-7B", "not read as the Hub's Qwen/Qwen2.5-7B-Instruct: the Hub was not asked (offline mode)); read as the catalog's Qwen/Qwen2.5-7B, assuming"},
		{"/mnt/models/Qwen2.5-7B-Instruct", online.client(t), Catalog, "Qwen/Qwen2.5-7B", "not read as the Hub's Qwen/Qwen2.5-7B-Instruct: not on the Hub"},
		{"./out/Meta-Llama-3-8B-Instruct", nil, Catalog, "meta-llama/Meta-Llama-3-8B", "its last component Meta-Llama-3-8B-Instruct is not in the built-in catalog; read as the catalog's meta-llama/Meta-Llama-3-8B"},
	} {
		src, err := Resolve(ctx, tc.ref, Options{Hub: tc.h, LocalPaths: true})
		if err != nil {
			t.Errorf("%s: %v", tc.ref, err)
			continue
		}
		if src.Kind != tc.kind || src.Hub.String() != tc.at || src.Ref != tc.ref || len(src.Notes) != 1 ||
			!strings.Contains(src.Notes[0], tc.ref+" does not exist here") || !strings.Contains(src.Notes[0], tc.note) {
			t.Errorf("%s: %s %s, notes %q; want %s %s with a note containing %q", tc.ref, src.Kind, src.Hub, src.Notes, tc.kind, tc.at, tc.note)
		}
	}
	for _, tc := range []struct {
		ref  string
		h    HubClient
		o    Options
		is   error
		want string
	}{
		{"/mnt/models/my-finetune", nil, Options{LocalPaths: true}, fs.ErrNotExist, "nor does it name a model here"},
		{"/mnt/models/Qwen2-7B-Instruct", offline, Options{LocalPaths: true}, fs.ErrNotExist, "not read as the Hub's Qwen/Qwen2-7B-Instruct: the Hub was not asked (offline mode)"},
		{"/mnt/models/Llama-3.1-8B", nil, Options{LocalPaths: true, Exact: true}, fs.ErrNotExist, "no such file"},
		{"/mnt/models/Llama-3.1-8B", nil, Options{}, ErrLocalPath, "not allowed"},
	} {
		tc.o.Hub = tc.h
		_, err := Resolve(ctx, tc.ref, tc.o)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %v naming %q", tc.ref, err, tc.is, tc.want)
		}
	}
}

// TestResolveNilHubClient checks that a nil *hub.Client counts as no Hub.
func TestResolveNilHubClient(t *testing.T) {
	var c *hub.Client
	src, err := Resolve(context.Background(), "meta-llama/Llama-3.1-8B-Instruct", Options{Hub: c})
	if err != nil || src.Model.ID != "meta-llama/Llama-3.1-8B" {
		t.Errorf("got %+v, %v", src, err)
	}
	_, err = Resolve(context.Background(), "org/unknown-model", Options{Hub: c})
	if err == nil || !strings.Contains(err.Error(), "no Hub is available") {
		t.Errorf("got %v", err)
	}
}
