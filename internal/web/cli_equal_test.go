package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpumem/gpumem/internal/cli"
	"github.com/gpumem/gpumem/internal/web"
	"github.com/gpumem/gpumem/jobfile"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/plan"
)

// runCLI runs the gpumem command line with args, which must succeed, and
// returns stdout.
func runCLI(t *testing.T, args ...string) []byte {
	t.Helper()
	return runCLIExit(t, 0, args...)
}

// runCLIExit runs the gpumem command line, which must exit with code
// want, and returns stdout.
func runCLIExit(t *testing.T, want int, args ...string) []byte {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &cli.Factory{
		IO:         &cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Getenv:     func(string) string { return "" },
		HTTPClient: &http.Client{Timeout: time.Second},
		Now:        time.Now,
	}
	if code := cli.Main(context.Background(), args, f); code != want {
		t.Fatalf("gpumem %s: exit code %d, want %d; stderr: %s", strings.Join(args, " "), code, want, errOut.String())
	}
	return out.Bytes()
}

// do sends one request through the server's handler.
func do(t *testing.T, h http.Handler, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	var req *http.Request
	if body != "" {
		req = httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	} else {
		req = httptest.NewRequest(method, target, nil)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// matchesCLI sends a request twice: with ?pretty, whose answer must be the
// CLI's bytes (cli), and without, whose answer must be those bytes made
// compact. It returns the compact answer.
func matchesCLI(t *testing.T, h http.Handler, method, target, body string, cli []byte) *httptest.ResponseRecorder {
	t.Helper()
	pretty := target + "?pretty"
	if strings.Contains(target, "?") {
		pretty = target + "&pretty"
	}
	rec := do(t, h, method, pretty, body)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s %s: status %d, body %s", method, pretty, rec.Code, rec.Body)
	}
	if got := rec.Body.Bytes(); !bytes.Equal(got, cli) {
		t.Errorf("%s %s %s differs from the CLI:\nAPI: %s\nCLI: %s", method, pretty, body, got, cli)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, cli); err != nil {
		t.Fatal(err)
	}
	want.WriteByte('\n')
	rec = do(t, h, method, target, body)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s %s: status %d, body %s", method, target, rec.Code, rec.Body)
	}
	if got := rec.Body.Bytes(); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("%s %s %s is not the CLI's JSON made compact:\nAPI: %s\nCLI: %s", method, target, body, got, want.Bytes())
	}
	return rec
}

// estimateCases are jobs given three ways: CLI flags, API query and API
// JSON body. All three must print the same bytes.
var estimateCases = []struct {
	name  string
	args  []string
	query string
	body  string
}{
	{"full fine-tuning", []string{"--seq-len", "4096"}, "model=llama3-8b&seq_len=4096", `{"model":"llama3-8b","seq_len":4096}`},
	{"lora all-linear flash checkpointed",
		[]string{"--method", "lora", "--lora-rank", "16", "--lora-target-modules", "all-linear", "--attn", "flash", "--grad-checkpoint", "full", "--seq-len", "4096"},
		"model=llama3-8b&method=lora&lora_rank=16&lora_target_modules=all-linear&attn=flash&grad_checkpoint=full&seq_len=4096",
		`{"model":"llama3-8b","method":"lora","lora_rank":16,"lora_target_modules":["all-linear"],"attn":"flash","grad_checkpoint":"full","seq_len":4096}`},
	{"qlora paged 8-bit",
		[]string{"--method", "qlora", "--optimizer", "paged_adamw_8bit", "--seq-len", "2048", "--per-device-batch", "2"},
		"model=llama3-8b&method=qlora&optimizer=paged_adamw_8bit&seq_len=2048&per_device_batch=2",
		`{"model":"llama3-8b","method":"qlora","optimizer":"paged_adamw_8bit","seq_len":2048,"per_device_batch":2}`},
	{"zero-3 on 8 GPUs with constants",
		[]string{"--engine", "deepspeed", "--zero", "3", "--num-gpus", "8", "--seq-len", "4096", "--set", "fragmentation=0.1"},
		"model=llama3-8b&engine=deepspeed&zero=3&num_gpus=8&seq_len=4096&constants.fragmentation=0.1",
		`{"model":"llama3-8b","engine":"deepspeed","zero":3,"num_gpus":8,"seq_len":4096,"constants":{"fragmentation":0.1}}`},
	{"inference with a KV cache",
		[]string{"--mode", "inference", "--batch-size", "8", "--prompt-len", "4096", "--gen-len", "1024"},
		"model=llama3-8b&mode=inference&batch=8&prompt_len=4096&gen_len=1024",
		`{"model":"llama3-8b","mode":"inference","batch":8,"prompt_len":4096,"gen_len":1024}`},
	{"vllm serving on H100",
		[]string{"--mode", "serving", "--gpu", "H100-SXM", "--max-model-len", "8192", "--gpu-memory-utilization", "0.85", "--packed=false"},
		"model=llama3-8b&mode=serving&gpu=H100-SXM&max_model_len=8192&gpu_memory_utilization=0.85&packed=false",
		`{"model":"llama3-8b","mode":"serving","gpu":"H100-SXM","max_model_len":8192,"gpu_memory_utilization":0.85,"packed":false}`},
	{"vllm serving on MI300X (catalog memory)",
		[]string{"--mode", "serving", "--gpu", "mi300x", "--max-model-len", "8192"},
		"model=llama3-8b&mode=serving&gpu=mi300x&max_model_len=8192",
		`{"model":"llama3-8b","mode":"serving","gpu":"mi300x","max_model_len":8192}`},
	{"training on H20 (sm90 workspace)",
		[]string{"--gpu", "H20", "--seq-len", "2048"},
		"model=llama3-8b&gpu=H20&seq_len=2048",
		`{"model":"llama3-8b","gpu":"H20","seq_len":2048}`},
}

func TestEstimateMatchesCLI(t *testing.T) {
	h := web.New(web.Options{}).Handler()
	for _, tc := range estimateCases {
		t.Run(tc.name, func(t *testing.T) {
			model := "llama3-8b"
			want := runCLI(t, append([]string{"estimate", "--model", model, "--format", "json"}, tc.args...)...)
			get := matchesCLI(t, h, "GET", "/api/estimate?"+tc.query, "", want)
			matchesCLI(t, h, "POST", "/api/estimate", tc.body, want)
			if ct := get.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
}

func TestListsAndParamsMatchCLI(t *testing.T) {
	h := web.New(web.Options{}).Handler()
	for _, tc := range []struct {
		name   string
		args   []string
		target string
	}{
		{"params dense", []string{"params", "llama3-8b"}, "/api/params?model=llama3-8b"},
		{"params moe by hub id", []string{"params", "Qwen/Qwen3-30B-A3B"}, "/api/params?model=Qwen%2FQwen3-30B-A3B"},
		{"params vlm", []string{"params", "qwen2-vl-7b"}, "/api/params?model=qwen2-vl-7b"},
		{"models all", []string{"models"}, "/api/models"},
		{"models filtered", []string{"models", "--filter", "MoE"}, "/api/models?filter=MoE"},
		{"models none", []string{"models", "--filter", "no-such-model"}, "/api/models?filter=no-such-model"},
		{"gpus all", []string{"gpus"}, "/api/gpus"},
		{"gpus filtered", []string{"gpus", "--filter", "hopper"}, "/api/gpus?filter=hopper"},
		{"optimizers", []string{"optimizers"}, "/api/optimizers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := runCLI(t, append(tc.args, "--format", "json")...)
			matchesCLI(t, h, "GET", tc.target, "", want)
		})
	}
}

// TestPlanMatchesFit checks each GPU entry of /api/plan against what
// gpumem fit --gpu X --format json prints for the same job: the same fit
// and the same searches, key for key.
func TestPlanMatchesFit(t *testing.T) {
	h := web.New(web.Options{}).Handler()
	for _, tc := range []struct {
		name  string
		args  []string
		query url.Values
	}{
		{"lora on H100", []string{"--method", "lora", "--seq-len", "4096"}, url.Values{"method": {"lora"}, "seq_len": {"4096"}}},
		{"full on L4", []string{"--seq-len", "1024"}, url.Values{"seq_len": {"1024"}}},
		{"inference on A100", []string{"--mode", "inference", "--batch-size", "4", "--prompt-len", "2048", "--gen-len", "256"},
			url.Values{"mode": {"inference"}, "batch": {"4"}, "prompt_len": {"2048"}, "gen_len": {"256"}}},
		{"lora with the GPU's memory given", []string{"--method", "lora", "--gpu-memory", "70GiB"}, url.Values{"method": {"lora"}, "gpu_memory_bytes": {"75161927680"}}},
	} {
		for _, g := range []string{"H100-SXM", "L4", "A100-SXM-80GB"} {
			t.Run(tc.name+"/"+g, func(t *testing.T) {
				cliOut := runCLI(t, append([]string{"fit", "llama3-8b", "--gpu", g, "--format", "json"}, tc.args...)...)
				q := url.Values{"model": {"llama3-8b"}, "gpus": {g}}
				for k, v := range tc.query {
					q[k] = v
				}
				rec := do(t, h, "GET", "/api/plan?"+q.Encode(), "")
				if rec.Code != http.StatusOK {
					t.Fatalf("status %d, body %s", rec.Code, rec.Body)
				}
				var want map[string]json.RawMessage
				if err := json.Unmarshal(cliOut, &want); err != nil {
					t.Fatal(err)
				}
				var got struct {
					GPUs []map[string]json.RawMessage `json:"gpus"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
					t.Fatal(err)
				}
				if len(got.GPUs) != 1 {
					t.Fatalf("got %d GPU entries, want 1", len(got.GPUs))
				}
				if tc.name == "full on L4" && len(got.GPUs[0]["suggestions"]) == 0 {
					t.Error("a full fine-tune of an 8B model on one GPU: want suggestions")
				}
				for _, k := range []string{"gpu", "fit", "max_batch", "max_seq_len", "min_gpus", "suggestions", "warning"} {
					g, w := got.GPUs[0][k], want[k]
					if k == "gpu" {
						// The API names its own key as the memory's source.
						g = bytes.Replace(g, []byte(`"gpu_memory_bytes"`), []byte(`"--gpu-memory"`), 1)
					}
					if len(g) == 0 && len(w) == 0 {
						continue
					}
					if !bytes.Equal(compact(t, g), compact(t, w)) {
						t.Errorf("%s: API %s, CLI %s", k, got.GPUs[0][k], want[k])
					}
				}
				post := do(t, h, "POST", "/api/plan", planBody(t, q))
				if !bytes.Equal(post.Body.Bytes(), rec.Body.Bytes()) {
					t.Errorf("POST /api/plan differs from GET:\nPOST: %s\nGET: %s", post.Body, rec.Body)
				}
			})
		}
	}
}

func compact(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("compact %s: %v", raw, err)
	}
	return b.Bytes()
}

// planBody turns plan query values into the equivalent JSON body.
func planBody(t *testing.T, q url.Values) string {
	t.Helper()
	body := map[string]any{}
	for k, v := range q {
		switch k {
		case "model", "mode", "method":
			body[k] = v[0]
		case "gpus":
			body[k] = v
		default:
			var n int
			if err := json.Unmarshal([]byte(v[0]), &n); err != nil {
				t.Fatalf("%s=%s: %v", k, v[0], err)
			}
			body[k] = n
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBodiesAreJobFiles checks that a POST body (the page's exported job)
// is a job file gpumem reads the same way: the same estimate per GPU.
func TestBodiesAreJobFiles(t *testing.T) {
	h := web.New(web.Options{}).Handler()
	for _, tc := range estimateCases {
		t.Run(tc.name, func(t *testing.T) {
			jf, err := jobfile.Parse([]byte(tc.body), "job.json")
			if err != nil {
				t.Fatalf("the body is not a job file: %v", err)
			}
			m, err := model.Load(jf.Model)
			if err != nil {
				t.Fatal(err)
			}
			// As gpumem estimate --config does, the GPU's facts come from the catalog.
			job, _, err := plan.ResolveGPU(nil, jf.Job)
			if err != nil {
				t.Fatal(err)
			}
			fromFile, err := memory.Estimate(m, job)
			if err != nil {
				t.Fatal(err)
			}
			var fromAPI memory.Result
			rec := do(t, h, "POST", "/api/estimate", tc.body)
			if err := json.Unmarshal(rec.Body.Bytes(), &fromAPI); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(fromFile.PerGPU, fromAPI.PerGPU); d != "" {
				t.Errorf("per-GPU memory of the job file vs the API (-file +api):\n%s", d)
			}
		})
	}
}
