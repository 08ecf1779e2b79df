package web_test

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/gpumem/gpumem/internal/web"
	"github.com/gpumem/gpumem/memory"
)

// TestDefaultSeqLenAgrees checks that the CLI, the API and the page
// assume one sequence length when a job gives none: memory.DefaultSeqLen,
// which the page shows as the field's placeholder and does not override
// in its default job.
func TestDefaultSeqLenAgrees(t *testing.T) {
	js, err := os.ReadFile("static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	ph := regexp.MustCompile(`k: 'seq_len',[^}]*ph: '(\d+)'`).FindSubmatch(js)
	if ph == nil {
		t.Fatal("app.js: no placeholder for seq_len")
	}
	if n, _ := strconv.Atoi(string(ph[1])); n != memory.DefaultSeqLen {
		t.Errorf("page placeholder %d, memory.DefaultSeqLen %d", n, memory.DefaultSeqLen)
	}
	def := regexp.MustCompile(`const DEFAULT_JOB = (\{[^;]*\});`).FindSubmatch(js)
	if def == nil {
		t.Fatal("app.js: no DEFAULT_JOB")
	}
	if regexp.MustCompile(`seq_len`).Match(def[1]) {
		t.Errorf("the page's default job %s sets seq_len: it must take the API's default", def[1])
	}
	var cli memory.Result
	if err := json.Unmarshal(runCLI(t, "estimate", "llama2-7b", "--format", "json"), &cli); err != nil {
		t.Fatal(err)
	}
	h := web.New(web.Options{}).Handler()
	rec := do(t, h, http.MethodGet, "/api/estimate?model=llama2-7b", "")
	var api memory.Result
	if err := json.Unmarshal(rec.Body.Bytes(), &api); err != nil {
		t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
	}
	for name, r := range map[string]memory.Result{"CLI": cli, "API": api} {
		if r.Job.SeqLen != memory.DefaultSeqLen || !r.Assumed.Has("seq_len") {
			t.Errorf("%s: seq_len %d (assumed %v), want the default %d", name, r.Job.SeqLen, r.Assumed.Has("seq_len"), memory.DefaultSeqLen)
		}
	}
	// /api/plan states the resolved job, its assumptions and the decision.
	rec = do(t, h, http.MethodGet, "/api/plan?model=llama2-7b&gpus=H100-SXM&seq_len=512", "")
	var p web.PlanReport
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
	}
	if p.Job.Optimizer != "adamw_torch" || !p.Assumed.Has("optimizer") || p.Assumed.Has("seq_len") || p.DecidedOn != memory.DecideUpper ||
		len(p.GPUs) != 1 || p.GPUs[0].Fit.DecidedOn != memory.DecideUpper {
		t.Errorf("/api/plan: job %+v, assumed %v, decided on %q", p.Job, p.Assumed.Keys(), p.DecidedOn)
	}
	rec = do(t, h, http.MethodGet, "/api/plan?model=llama2-7b&gpus=H100-SXM&seq_len=512&decide_on=point", "")
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.DecidedOn != memory.DecidePoint || p.GPUs[0].Fit.DecidedOn != memory.DecidePoint {
		t.Errorf("/api/plan decide_on=point: %s", rec.Body)
	}
}
