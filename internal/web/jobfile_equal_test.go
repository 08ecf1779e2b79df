package web_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpumem/gpumem/internal/web"
	"github.com/gpumem/gpumem/jobfile"
)

// TestBodyEqualsConfigFile posts each job file of testdata/jobs as the
// body of /api/estimate and compares the answer, byte for byte, with
// gpumem estimate --config FILE --format json: a body is read as a job
// file, by the same parser.
func TestBodyEqualsConfigFile(t *testing.T) {
	files, err := filepath.Glob("testdata/jobs/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 8 {
		t.Fatalf("%d job files in testdata/jobs, want at least 8", len(files))
	}
	h := web.New(web.Options{}).Handler()
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			body, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want := runCLI(t, "estimate", "--config", file, "--format", "json")
			matchesCLI(t, h, "POST", "/api/estimate", string(body), want)
		})
	}
}

// TestBodyProblemsEqualValidate checks that an invalid body gets a 400
// listing the problems gpumem validate lists for the same file, in the
// same order, and naming the first one's key in field.
func TestBodyProblemsEqualValidate(t *testing.T) {
	h := web.New(web.Options{}).Handler()
	for _, tc := range []struct {
		name, body string
		field      string
		count      int
	}{
		{"batch of zero", `{"model": "llama3-8b", "per_device_batch": 0}`, "per_device_batch", 1},
		{"many mistakes", `{"model": "llama3-8b", "seqlen": 5, "zero": 5, "packed": "yes", "gpu_memory": "80G",
			"optimizer": "adamx", "lora_dropout": 1.5, "constants": {"fragmentaton": 0.1}}`, "constants", 7},
		{"no model", `{"seq_len": 512, "mode": "dance"}`, "mode", 2},
		{"size not a count", `{"model": {"num_parameters": "seven"}, "seq_len": 128}`, "model", 2},
		{"trainable count with a bad suffix", `{"model": "gpt2", "method": "frozen", "trainable_params": "1.2Q"}`, "trainable_params", 1},
		{"two spellings", `{"model": "gpt2", "seq_len": 64, "Seq-Len": 128}`, "seq_len", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "job.json")
			if err := os.WriteFile(file, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			var v struct {
				Valid    bool              `json:"valid"`
				Problems []jobfile.Problem `json:"problems"`
			}
			out := runCLIExit(t, 1, "validate", file, "--format", "json")
			if err := json.Unmarshal(out, &v); err != nil {
				t.Fatalf("validate output: %v\n%s", err, out)
			}
			rec := do(t, h, "POST", "/api/estimate", tc.body)
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400; body %s", rec.Code, rec.Body)
			}
			e := decodeError(t, rec.Body.Bytes())
			if d := cmp.Diff(v.Problems, e.Problems); d != "" {
				t.Errorf("problems (-validate +API):\n%s", d)
			}
			if len(e.Problems) != tc.count || e.Field != tc.field {
				t.Errorf("%d problems, field %q; want %d, %q", len(e.Problems), e.Field, tc.count, tc.field)
			}
			for _, p := range e.Problems {
				if !strings.Contains(e.Message, p.String()) {
					t.Errorf("message %q does not list %q", e.Message, p)
				}
			}
			// /api/plan reads the body the same way.
			plan := decodeError(t, do(t, h, "POST", "/api/plan", tc.body).Body.Bytes())
			if d := cmp.Diff(e.Problems, plan.Problems); d != "" {
				t.Errorf("plan problems (-estimate +plan):\n%s", d)
			}
		})
	}
}

// TestBodyAsJobFile covers the three ways the API's own decoding used to
// part from job files: gpu_memory with a human size, a human parameter
// count, and a zero batch.
func TestBodyAsJobFile(t *testing.T) {
	h := web.New(web.Options{}).Handler()
	for _, tc := range []struct {
		name, body string
		flags      []string // the same job on the command line; nil when the body is refused
		field, msg string
	}{
		{"gpu_memory as a size", `{"model": "llama3-8b", "mode": "serving", "gpu_memory": "40GiB", "max_model_len": 4096}`,
			[]string{"--mode", "serving", "--gpu-memory", "40GiB", "--max-model-len", "4096"}, "", ""},
		{"trainable_params as 1.2M", `{"model": "llama3-8b", "method": "frozen", "trainable_params": "1.2M", "seq_len": 512}`,
			[]string{"--method", "frozen", "--trainable-params", "1200000", "--seq-len", "512"}, "", ""},
		{"per_device_batch of 0", `{"model": "llama3-8b", "per_device_batch": 0}`, nil,
			"per_device_batch", "request body: per_device_batch: want a positive whole number, got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(t, h, "POST", "/api/estimate", tc.body)
			if tc.flags == nil {
				if rec.Code != http.StatusBadRequest {
					t.Fatalf("status %d, want 400; body %s", rec.Code, rec.Body)
				}
				if e := decodeError(t, rec.Body.Bytes()); e.Field != tc.field || e.Message != tc.msg {
					t.Errorf("error %q on %q, want %q on %q", e.Message, e.Field, tc.msg, tc.field)
				}
				return
			}
			want := runCLI(t, append([]string{"estimate", "--model", "llama3-8b", "--format", "json"}, tc.flags...)...)
			matchesCLI(t, h, "POST", "/api/estimate", tc.body, want)
		})
	}
}
