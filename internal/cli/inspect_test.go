package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/safetensors"
)

const (
	fakeCommit = "89abcdef0123456789abcdef0123456789abcdef"
	fakeToken  = "hf_CLITESTtokenDoNotPrint42"
)

// tinyConfig is a 2-layer Llama with tied embeddings. Parameters:
// embedding 100·64 = 6400; per layer q 4096 + k 2048 + v 2048 + o 4096 +
// gate/up/down 3·8192 + two norms 128 = 36992; final norm 64.
const tinyConfig = `{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":64,
"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,
"vocab_size":100,"max_position_embeddings":512,"tie_word_embeddings":true,"torch_dtype":"bfloat16",
"rms_norm_eps":1e-5,"hidden_act":"silu"}`

const tinyParams = 6400 + 2*36992 + 64

// stTensor names a BF16 tensor of a test checkpoint.
type stTensor struct {
	name  string
	shape []int64
}

// tinyCheckpoint is a safetensors file matching tinyConfig, with one
// rotary inv_freq buffer per layer as older checkpoints store.
func tinyCheckpoint(t *testing.T, extra ...stTensor) []byte {
	t.Helper()
	type tensor = stTensor
	ts := []tensor{{"model.embed_tokens.weight", []int64{100, 64}}, {"model.norm.weight", []int64{64}}}
	for l := range 2 {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts,
			tensor{p + "self_attn.q_proj.weight", []int64{64, 64}}, tensor{p + "self_attn.k_proj.weight", []int64{32, 64}},
			tensor{p + "self_attn.v_proj.weight", []int64{32, 64}}, tensor{p + "self_attn.o_proj.weight", []int64{64, 64}},
			tensor{p + "mlp.gate_proj.weight", []int64{128, 64}}, tensor{p + "mlp.up_proj.weight", []int64{128, 64}},
			tensor{p + "mlp.down_proj.weight", []int64{64, 128}},
			tensor{p + "input_layernorm.weight", []int64{64}}, tensor{p + "post_attention_layernorm.weight", []int64{64}},
			tensor{p + "self_attn.rotary_emb.inv_freq", []int64{8}},
		)
	}
	ts = append(ts, extra...)
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	for _, tn := range ts {
		n := int64(1)
		for _, d := range tn.shape {
			n *= d
		}
		header[tn.name] = map[string]any{"dtype": "BF16", "shape": tn.shape, "data_offsets": []int64{off, off + 2*n}}
		off += 2 * n
	}
	js, _ := json.Marshal(header)
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(js)))
	b.Write(js)
	b.Write(make([]byte, off))
	return b.Bytes()
}

// fakeHub serves org/tiny (public) and org/gated (gated) like the Hub.
func fakeHub(t *testing.T, weights []byte) (*httptest.Server, *int) {
	t.Helper()
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 5)
		if len(parts) < 5 || parts[2] != "resolve" {
			http.NotFound(w, r)
			return
		}
		repo, file := parts[0]+"/"+parts[1], parts[4]
		if repo == "org/gated" && r.Header.Get("Authorization") != "Bearer "+fakeToken {
			w.Header().Set("X-Error-Code", "GatedRepo")
			http.Error(w, "restricted", http.StatusForbidden)
			return
		}
		if repo != "org/tiny" && repo != "org/gated" {
			w.Header().Set("X-Error-Code", "RepoNotFound")
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		w.Header().Set("X-Repo-Commit", fakeCommit)
		switch file {
		case "config.json":
			http.ServeContent(w, r, file, time.Time{}, strings.NewReader(tinyConfig))
		case "model.safetensors":
			http.ServeContent(w, r, file, time.Time{}, bytes.NewReader(weights))
		default:
			w.Header().Set("X-Error-Code", "EntryNotFound")
			http.Error(w, "entry not found", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// runWithEnv runs the CLI with the given environment.
func runWithEnv(t *testing.T, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &Factory{
		IO:         &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Getenv:     func(k string) string { return env[k] },
		HTTPClient: &http.Client{},
		Now:        func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) },
	}
	code := Main(context.Background(), args, f)
	return out.String(), errOut.String(), code
}

func TestInspectHubCheckpoint(t *testing.T) {
	srv, _ := fakeHub(t, tinyCheckpoint(t))
	env := map[string]string{"HF_ENDPOINT": srv.URL, "HF_HOME": t.TempDir()}
	out, errOut, code := runWithEnv(t, env, "inspect", "org/tiny", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got inspection
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Commit != fakeCommit || got.ConfigParams != tinyParams {
		t.Errorf("commit %q, config params %d; want %q, %d", got.Commit, got.ConfigParams, fakeCommit, tinyParams)
	}
	if got.Summary == nil || got.Summary.Params != tinyParams || got.Summary.Bytes != 2*(tinyParams+16) {
		t.Fatalf("summary = %+v", got.Summary)
	}
	c := got.Comparison
	if c == nil || !c.Comparable || c.Unexplained != 0 || len(c.Extras) != 1 || c.Extras[0].Key != string(safetensors.Buffer) {
		t.Errorf("comparison = %+v, want only the two inv_freq buffers as extras", c)
	}

	out, _, code = runWithEnv(t, env, "inspect", "org/tiny")
	for _, want := range []string{"BF16", "buffer", "config.json parameters", fmt.Sprint(tinyParams)} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("table output lacks %q:\n%s", want, out)
		}
	}
}

func TestResolveHubModelThenOffline(t *testing.T) {
	srv, requests := fakeHub(t, nil)
	home := t.TempDir()
	env := map[string]string{"HF_ENDPOINT": srv.URL, "HF_HOME": home}
	out, errOut, code := runWithEnv(t, env, "params", "org/tiny@main", "--format", "json")
	if code != 0 || !strings.Contains(out, fmt.Sprint(tinyParams)) {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(home, "hub", "models--org--tiny", "snapshots", fakeCommit, "config.json")); err != nil {
		t.Errorf("config.json not cached in the Hub layout: %v", err)
	}
	// Second run: offline, server gone, same answer from the cache.
	srv.Close()
	before := *requests
	env["HF_HUB_OFFLINE"] = "1"
	out2, errOut, code := runWithEnv(t, env, "params", "org/tiny@main", "--format", "json")
	if code != 0 || out2 != out || *requests != before {
		t.Errorf("offline run: exit %d, same output %v, stderr %s", code, out2 == out, errOut)
	}
	// A model never fetched fails offline with a hint.
	_, errOut, code = runWithEnv(t, env, "params", "org/other")
	if code != 1 || !strings.Contains(errOut, "offline") || !strings.Contains(errOut, "HF_HUB_OFFLINE") {
		t.Errorf("offline miss: exit %d, stderr %s", code, errOut)
	}
}

// TestHubMissNamesCatalogModel checks that a Hub id that cannot be
// fetched, because the Hub is unreachable or has no such model, fails
// naming the closest embedded catalog model without the network error's
// details, that an id with no close catalog model says to pass a local
// config instead, and that a release of a catalog model the Hub cannot
// supply is read as that model, with a warning in the output.
func TestHubMissNamesCatalogModel(t *testing.T) {
	srv, _ := fakeHub(t, nil)
	// No network: every connection fails as a name that does not
	// resolve does, which the Hub client does not retry.
	noDNS := &http.Client{Transport: &http.Transport{DialContext: func(_ context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: addr, IsNotFound: true}}
	}}}
	internals := []string{"no such host", "dial", "lookup"}
	for _, tc := range []struct {
		name    string
		client  *http.Client
		model   string
		code    int
		want    []string // in stderr, or in stdout when the exit code is 0
		notWant []string
	}{
		{"unreachable release", noDNS, "meta-llama/Llama-2-7b-chat-hf", 0,
			[]string{"warning: meta-llama/Llama-2-7b-chat-hf is not in the built-in catalog and the Hub could not be reached; read as the catalog's meta-llama/Llama-2-7b-hf", "6738415616"}, nil},
		{"unreachable", noDNS, "someone/Llama-2-7b-chat-hf", 1,
			[]string{"could not be reached", "closest: meta-llama/Llama-2-7b-hf", "config.json or model folder"}, internals},
		{"not on the Hub", &http.Client{}, "meta-llama/Llama-3.1-8B-Instruct", 1,
			[]string{"404", "closest: meta-llama/Llama-3.1-8B"}, nil},
		{"nothing close", noDNS, "org/unknown-model", 1,
			[]string{"could not be reached", "pass a path to its config.json or model folder"}, internals},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"HF_ENDPOINT": srv.URL, "HF_HOME": t.TempDir()}
			var out, errOut bytes.Buffer
			f := &Factory{
				IO:         &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
				Getenv:     func(k string) string { return env[k] },
				HTTPClient: tc.client,
				Now:        time.Now,
			}
			code := Main(context.Background(), []string{"params", "--model", tc.model}, f)
			got := errOut.String()
			if code == 0 {
				got = out.String()
			}
			if code != tc.code || code != 0 && out.Len() != 0 {
				t.Errorf("exit %d, stdout %q; want exit %d", code, out.String(), tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output %q lacks %q", got, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("output %q shows the network error (%q)", got, w)
				}
			}
		})
	}
}

func TestGatedModelHintNoTokenLeak(t *testing.T) {
	srv, _ := fakeHub(t, nil)
	home := t.TempDir()
	for _, tc := range []struct {
		name string
		env  map[string]string
		code int
		want string
	}{
		{"no token", map[string]string{}, 1, "accept the license on the model page"},
		{"wrong token", map[string]string{"HF_TOKEN": "hf_wrong" + fakeToken}, 1, "accept the license on the model page"},
		{"token from env", map[string]string{"HF_TOKEN": fakeToken}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["HF_ENDPOINT"], tc.env["HF_HOME"] = srv.URL, home
			out, errOut, code := runWithEnv(t, tc.env, "params", "org/gated")
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut, tc.code, tc.want)
			}
			if strings.Contains(out+errOut, fakeToken) {
				t.Error("the token was printed")
			}
		})
	}
	// The token file written by the Hugging Face CLI works too.
	tokenHome := t.TempDir()
	os.WriteFile(filepath.Join(tokenHome, "token"), []byte(fakeToken+"\n"), 0o600)
	_, errOut, code := runWithEnv(t, map[string]string{"HF_ENDPOINT": srv.URL, "HF_HOME": tokenHome}, "params", "org/gated")
	if code != 0 {
		t.Errorf("token file: exit %d, %s", code, errOut)
	}
}

func TestHubConfigFromEnv(t *testing.T) {
	dir := t.TempDir()
	tokenPath := filepath.Join(dir, "tok")
	os.WriteFile(tokenPath, []byte("hf_fromfile"), 0o600)
	tests := []struct {
		name                   string
		env                    map[string]string
		cache, token, endpoint string
		offline                bool
	}{
		{"defaults from HOME", map[string]string{"HOME": "/home/u"}, "/home/u/.cache/huggingface/hub", "", "", false},
		{"XDG cache", map[string]string{"HOME": "/home/u", "XDG_CACHE_HOME": "/xdg"}, "/xdg/huggingface/hub", "", "", false},
		{"HF_HOME and offline", map[string]string{"HF_HOME": "/hf", "HF_HUB_OFFLINE": "yes"}, "/hf/hub", "", "", true},
		{"HF_HUB_CACHE wins", map[string]string{"HF_HOME": "/hf", "HF_HUB_CACHE": "/c"}, "/c", "", "", false},
		{"token and endpoint", map[string]string{"HF_TOKEN": " hf_env ", "HF_ENDPOINT": "https://mirror.example"}, "", "hf_env", "https://mirror.example", false},
		{"token path", map[string]string{"HF_TOKEN_PATH": tokenPath}, "", "hf_fromfile", "", false},
		{"offline false", map[string]string{"HF_HUB_OFFLINE": "0"}, "", "", "", false},
		{"download timeout", map[string]string{"HF_HUB_DOWNLOAD_TIMEOUT": "2.5"}, "", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := hubConfig(func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if cfg.CacheDir != filepath.FromSlash(tc.cache) || string(cfg.Token) != tc.token || cfg.Endpoint != tc.endpoint || cfg.Offline != tc.offline {
				t.Errorf("got cache %q token %v endpoint %q offline %v", cfg.CacheDir, string(cfg.Token) == tc.token, cfg.Endpoint, cfg.Offline)
			}
			if tc.env["HF_HUB_DOWNLOAD_TIMEOUT"] != "" && cfg.Timeout != 2500*time.Millisecond {
				t.Errorf("timeout = %v, want 2.5s", cfg.Timeout)
			}
		})
	}
	for _, bad := range []string{"soon", "-1", "0", "1e9"} {
		if _, err := hubConfig(func(k string) string {
			if k == "HF_HUB_DOWNLOAD_TIMEOUT" {
				return bad
			}
			return ""
		}); err == nil || !strings.Contains(err.Error(), "HF_HUB_DOWNLOAD_TIMEOUT") {
			t.Errorf("HF_HUB_DOWNLOAD_TIMEOUT=%q: %v", bad, err)
		}
	}
}

func TestResolveUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", "org/na..me@main"}, "model id"},
		{[]string{"inspect", "org/tiny@a..b"}, "revision"},
		{[]string{"inspect", "org/tiny@v1", "--revision", "v2"}, "revision given twice"},
		{[]string{"inspect"}, "no model given"},
		{[]string{"inspect", "org/tiny", "--ctx-size", "-1"}, "--ctx-size"},
	} {
		_, errOut, code := runWithEnv(t, map[string]string{"HF_HUB_OFFLINE": "1"}, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// ggufBytes returns a minimal GGUF v3 file: one llama layer with GQA and
// one F32 tensor of token embeddings (of a 10-token vocabulary); split > 0
// makes it shard split-1 of two, the second holding the output matrix.
func ggufBytes(split int) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	w := func(v any) { binary.Write(&b, le, v) }
	str := func(s string) { w(uint64(len(s))); b.WriteString(s) }
	type ukv struct {
		k string
		v uint32
	}
	kvs := []ukv{{"llama.block_count", 1}, {"llama.context_length", 1024}, {"llama.embedding_length", 64}, {"llama.attention.head_count", 4}, {"llama.attention.head_count_kv", 2}}
	if split > 0 {
		kvs = append(kvs, ukv{"split.no", uint32(split - 1)}, ukv{"split.count", 2})
	}
	w(uint32(0x46554747))
	w(uint32(3))
	w(uint64(1)) // tensors
	w(uint64(len(kvs) + 1))
	str("general.architecture")
	w(uint32(8))
	str("llama")
	for _, e := range kvs {
		str(e.k)
		w(uint32(4))
		w(e.v)
	}
	name := "token_embd.weight"
	if split == 2 {
		name = "output.weight"
	}
	str(name)
	w(uint32(2))
	w([]uint64{64, 10})
	w(uint32(0)) // F32
	w(uint64(0))
	b.Write(make([]byte, 32-b.Len()%32))
	b.Write(make([]byte, 64*10*4))
	return b.Bytes()
}

func writeGGUF(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, ggufBytes(0), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInspectHubGGUF covers GGUF-only repositories: one split model is
// picked and all its shards read; several models need --file.
func TestInspectHubGGUF(t *testing.T) {
	repos := map[string]map[string][]byte{
		"org/one-GGUF": {"tiny-00001-of-00002.gguf": ggufBytes(1), "tiny-00002-of-00002.gguf": ggufBytes(2), "README.md": []byte("hi")},
		"org/two-GGUF": {"a-Q4_K_M.gguf": ggufBytes(0), "a-Q8_0.gguf": ggufBytes(0)},
	}
	srv := serveRepos(t, repos)
	env := map[string]string{"HF_ENDPOINT": srv.URL, "HF_HOME": t.TempDir()}

	out, errOut, code := runWithEnv(t, env, "inspect", "org/one-GGUF", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got inspection
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.GGUF == nil || len(got.Files) != 2 || got.GGUF.WeightsBytes != 2*2560 || got.Commit != fakeCommit {
		t.Errorf("split model: files %v, gguf %+v", got.Files, got.GGUF)
	}

	_, errOut, code = runWithEnv(t, env, "inspect", "org/two-GGUF")
	if code != 2 || !strings.Contains(errOut, "--file") || !strings.Contains(errOut, "a-Q8_0.gguf") {
		t.Errorf("two models: exit %d, %s", code, errOut)
	}
	out, errOut, code = runWithEnv(t, env, "inspect", "org/two-GGUF", "--file", "a-Q8_0.gguf")
	if code != 0 || !strings.Contains(out, "KV cache") {
		t.Errorf("--file: exit %d, %s %s", code, out, errOut)
	}
}

func TestInspectLocalGGUF(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny-F32.gguf")
	writeGGUF(t, path)
	out, errOut, code := runWithEnv(t, nil, "inspect", path, "--ctx-size", "256", "--cache-type-k", "q8_0", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got inspection
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	// K: 32 values (2 heads × 16) as q8_0 = 34 bytes per cell; V: 32 f16 = 64 bytes.
	if g := got.GGUF; g == nil || g.WeightsBytes != 2560 || g.KVCacheBytes != (34+64)*256 || g.CacheTypeK != "Q8_0" {
		t.Errorf("gguf = %+v", got.GGUF)
	}
	out, _, code = runWithEnv(t, nil, "inspect", path)
	if code != 0 || !strings.Contains(out, "KV cache") || !strings.Contains(out, "1024 cells") || !strings.Contains(out, "compute buffer") {
		t.Errorf("table:\n%s", out)
	}
}

func TestInspectLocalFolderAndBadFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(tinyConfig), 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), tinyCheckpoint(t), 0o644)
	out, errOut, code := runWithEnv(t, nil, "inspect", dir, "--format", "json")
	if code != 0 || !strings.Contains(out, `"unexplained": 0`) {
		t.Errorf("folder: exit %d, %s %s", code, out, errOut)
	}
	bad := filepath.Join(dir, "bad.safetensors")
	os.WriteFile(bad, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{'}, 0o644)
	_, errOut, code = runWithEnv(t, nil, "inspect", bad)
	if code != 1 || !strings.Contains(errOut, "bad.safetensors") || !strings.Contains(errOut, "exceeds the 100000000-byte limit") {
		t.Errorf("bad file: exit %d, %s", code, errOut)
	}
}

// serveRepos is a fake Hub serving whole repositories: resolve URLs (with
// Range) and the model-info API.
func serveRepos(t *testing.T, repos map[string]map[string][]byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/api/models/"); ok {
			parts := strings.Split(rest, "/")
			var sib []map[string]string
			for name := range repos[parts[0]+"/"+parts[1]] {
				sib = append(sib, map[string]string{"rfilename": name})
			}
			json.NewEncoder(w).Encode(map[string]any{"sha": fakeCommit, "siblings": sib})
			return
		}
		parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 5)
		if len(parts) < 5 {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Repo-Commit", fakeCommit)
		data, ok := repos[parts[0]+"/"+parts[1]][parts[4]]
		if !ok {
			w.Header().Set("X-Error-Code", "EntryNotFound")
			http.Error(w, "entry not found", http.StatusNotFound)
			return
		}
		http.ServeContent(w, r, parts[4], time.Time{}, bytes.NewReader(data))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestInspectHubSharded reads a sharded checkpoint through its index;
// the index lands in the cache next to config.json.
func TestInspectHubSharded(t *testing.T) {
	whole := tinyCheckpoint(t)
	n := binary.LittleEndian.Uint64(whole)
	var header map[string]json.RawMessage
	if err := json.Unmarshal(whole[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	// Split the tensors over two shards, each a valid safetensors file.
	shard := func(keep func(string) bool) []byte {
		var ts []string
		for name := range header {
			if name != "__metadata__" && keep(name) {
				ts = append(ts, name)
			}
		}
		h := map[string]any{}
		var off int64
		for _, name := range ts {
			var e struct {
				DType   string  `json:"dtype"`
				Shape   []int64 `json:"shape"`
				Offsets []int64 `json:"data_offsets"`
			}
			json.Unmarshal(header[name], &e)
			size := e.Offsets[1] - e.Offsets[0]
			h[name] = map[string]any{"dtype": e.DType, "shape": e.Shape, "data_offsets": []int64{off, off + size}}
			off += size
		}
		js, _ := json.Marshal(h)
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, uint64(len(js)))
		b.Write(js)
		b.Write(make([]byte, off))
		return b.Bytes()
	}
	layer0 := func(name string) bool { return strings.HasPrefix(name, "model.layers.0.") }
	weightMap := map[string]string{}
	for name := range header {
		if name == "__metadata__" {
			continue
		}
		weightMap[name] = "model-00002-of-00002.safetensors"
		if layer0(name) {
			weightMap[name] = "model-00001-of-00002.safetensors"
		}
	}
	index, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 2 * (tinyParams + 16)}, "weight_map": weightMap})
	srv := serveRepos(t, map[string]map[string][]byte{"org/sharded": {
		"config.json":                      []byte(tinyConfig),
		"model.safetensors.index.json":     index,
		"model-00001-of-00002.safetensors": shard(layer0),
		"model-00002-of-00002.safetensors": shard(func(s string) bool { return !layer0(s) }),
	}})
	home := t.TempDir()
	out, errOut, code := runWithEnv(t, map[string]string{"HF_ENDPOINT": srv.URL, "HF_HOME": home}, "inspect", "org/sharded", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got inspection
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Files) != 2 || got.Summary.Params != tinyParams || got.Comparison.Unexplained != 0 || len(got.Warnings) != 0 {
		t.Errorf("files %v, summary %+v, comparison %+v, warnings %v", got.Files, got.Summary, got.Comparison, got.Warnings)
	}
	if _, err := os.Stat(filepath.Join(home, "hub", "models--org--sharded", "snapshots", fakeCommit, "model.safetensors.index.json")); err != nil {
		t.Errorf("index not cached: %v", err)
	}
}

func TestProgressOnlyOnTerminal(t *testing.T) {
	var tty, piped bytes.Buffer
	newProgress(&tty, true).Update("safetensors headers", 1, 2)
	newProgress(&tty, true).Update("safetensors headers", 2, 2)
	newProgress(&piped, false).Update("safetensors headers", 1, 2)
	if want := "\r\033[Ksafetensors headers 1/2\r\033[K"; tty.String() != want {
		t.Errorf("terminal output %q, want %q", tty.String(), want)
	}
	if piped.Len() != 0 {
		t.Errorf("piped output %q, want none", piped.String())
	}
}

func TestInspectLocalGGUFFolder(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m-00001-of-00002.gguf"), ggufBytes(1), 0o644)
	os.WriteFile(filepath.Join(dir, "m-00002-of-00002.gguf"), ggufBytes(2), 0o644)
	out, errOut, code := runWithEnv(t, nil, "inspect", dir, "--format", "json")
	var got inspection
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.GGUF == nil || len(got.Files) != 2 {
		t.Fatalf("split folder: exit %d, %s %s", code, out, errOut)
	}
	os.WriteFile(filepath.Join(dir, "other.gguf"), ggufBytes(0), 0o644)
	if _, errOut, code := runWithEnv(t, nil, "inspect", dir); code != 2 || !strings.Contains(errOut, "2 GGUF models") {
		t.Errorf("two models: exit %d, %s", code, errOut)
	}
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "pytorch_model.bin"), []byte("x"), 0o644)
	if _, errOut, code := runWithEnv(t, nil, "inspect", empty); code != 1 || !strings.Contains(errOut, ".bin and .pt checkpoints are not read") {
		t.Errorf("no weights: exit %d, %s", code, errOut)
	}
}

func TestResolveLocalPathWithAt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "model@v2")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(tinyConfig), 0o644)
	out, errOut, code := runWithEnv(t, map[string]string{"HF_HUB_OFFLINE": "1"}, "params", dir, "--format", "json")
	if code != 0 || !strings.Contains(out, fmt.Sprint(tinyParams)) {
		t.Errorf("exit %d, %s %s", code, out, errOut)
	}
}

func TestInspectMissingLocalPath(t *testing.T) {
	for _, p := range []string{"./nope", "/no/such/model.gguf", "x.safetensors", "../../etc"} {
		_, errOut, code := runWithEnv(t, map[string]string{"HF_HUB_OFFLINE": "1"}, "inspect", p)
		if code != 1 || !strings.Contains(errOut, "no such file or directory") {
			t.Errorf("%s: exit %d, %s", p, code, errOut)
		}
	}
}

func TestInspectExtraLayersNote(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(tinyConfig), 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), tinyCheckpoint(t, stTensor{"model.layers.2.eh_proj.weight", []int64{64, 128}}), 0o644)
	out, errOut, code := runWithEnv(t, nil, "inspect", dir)
	if code != 0 || !strings.Contains(out, "8192 elements in 1 tensors belong to layers numbered 2 and up") {
		t.Errorf("exit %d:\n%s%s", code, out, errOut)
	}
}

// A checkpoint whose tensors overlap is refused over HTTP Range as it is
// locally: 64 tensors listed over the same 64 KiB came out as 4 MiB of
// weights.
func TestInspectHubOverlappingTensors(t *testing.T) {
	data, err := os.ReadFile("../../testdata/bad/safetensors-overlapping-offsets/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := fakeHub(t, data)
	env := map[string]string{"HF_ENDPOINT": srv.URL, "HF_HOME": t.TempDir()}
	_, errOut, code := runWithEnv(t, env, "inspect", "org/tiny")
	if code != ExitError || !strings.Contains(errOut, "model.safetensors") || !strings.Contains(errOut, "overlaps the tensor before it") {
		t.Errorf("exit %d, stderr %s", code, errOut)
	}
}

// TestInspectGGUFLlamaFlags runs inspect with llama.cpp's own spellings,
// the multi-letter short flags included (pflag alone would read -ctk as
// -c with the value "tk").
func TestInspectGGUFLlamaFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny-F32.gguf")
	writeGGUF(t, path)
	out, errOut, code := runWithEnv(t, nil, "inspect", path, "-c", "1000", "-ctk", "q8_0", "-ctv=q8_0", "-fa", "on",
		"-np", "2", "-ngl", "0", "-ub", "256", "-b", "1024", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got inspection
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	g := got.GGUF
	// 1000 tokens pad to 1024; two streams of pad(512, 256) = 512 cells.
	if g == nil || g.CacheTypeK != "Q8_0" || g.CacheTypeV != "Q8_0" || !g.FlashAttention || g.FlashAssumed ||
		g.ContextSize != 1024 || g.ContextPerSeq != 512 || g.KVStreams != 2 || g.GPULayers != 0 || g.UBatch != 256 || g.Batch != 1000 {
		t.Errorf("gguf = %+v", g)
	}
	if g != nil && (g.GPU.TotalBytes != 0 || g.Host.KVCacheBytes != g.KVCacheBytes) {
		t.Errorf("-ngl 0 left memory on the GPU: %+v", g.GPU)
	}
	if v := got.LlamaCpp; v == nil || v.Version != "b8390" || !v.Assumed {
		t.Errorf("llama.cpp version = %+v, want b8390 assumed", v)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-ctv", "q8_0", "-fa", "off"}, 1, "quantized V cache requires flash_attn"},
		{[]string{"-ctk", "q4_K"}, 1, "is not a KV-cache type llama.cpp accepts (want f32, f16, bf16, q8_0"},
		{[]string{"-ngl", "many"}, 2, `--n-gpu-layers "many": want a number of layers, or all`},
		{[]string{"-np", "0"}, 2, "--parallel 0"},
		{[]string{"--gpu-layers", "99"}, 0, ""},
		{[]string{"--stack", "llama.cpp=b6000"}, 2, "llama.cpp b6000 is older than b8390, the oldest llama.cpp the memory model covers"},
		{[]string{"--stack", "llama.cpp=4.1"}, 2, "want a build number such as b6000"},
		{[]string{"--stack", "llama.cpp=b9000"}, 0, ""},
	} {
		_, errOut, code := runWithEnv(t, nil, append([]string{"inspect", path}, tc.args...)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

// TestEstimateGGUFPointsToInspect: estimate reads config.json models; a
// GGUF file, by name or by content, is pointed to inspect.
func TestEstimateGGUFPointsToInspect(t *testing.T) {
	dir := t.TempDir()
	named := filepath.Join(dir, "m-Q4_K_M.gguf")
	writeGGUF(t, named)
	unnamed := filepath.Join(dir, "weights.bin")
	writeGGUF(t, unnamed)
	for _, ref := range []string{named, unnamed} {
		_, errOut, code := runWithEnv(t, nil, "estimate", "--model", ref, "--mode", "inference")
		if code != 2 || !strings.Contains(errOut, "is a GGUF file") || !strings.Contains(errOut, "'gpumem inspect "+ref+"'") {
			t.Errorf("%s: exit %d, stderr %q", ref, code, errOut)
		}
	}
}
