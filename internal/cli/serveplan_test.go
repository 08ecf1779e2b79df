package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/memory"
)

// runServePlan runs the serve-plan command on its own, with buffers.
func runServePlan(t *testing.T, format string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &Factory{
		IO:     &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Getenv: func(string) string { return "" },
		Now:    func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) },
	}
	cmd := newServePlanCmd(f, &globalOptions{Format: format, Units: "iec"})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestServePlanJSON(t *testing.T) {
	out, err := runServePlan(t, "json", "meta-llama/Llama-3.1-8B", "--gpu", "H100", "--max-model-len", "8192", "--max-gpus", "2")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Model   string                  `json:"model"`
		Layouts []memory.ServingPlanRow `json:"layouts"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Model != "meta-llama/Llama-3.1-8B" {
		t.Fatalf("output is not the JSON of the plan: %v\n%s", err, out)
	}
	rows := rep.Layouts
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3 layouts (1 GPU; tp 2; pp 2)", len(rows))
	}
	one := rows[0].Serving
	if one == nil || one.MaxModelLen != 8192 || one.KVTokens <= 0 || !one.MaxModelLenFits {
		t.Errorf("single H100 row: %+v", rows[0])
	}
	if !strings.Contains(out, `"kv_pool_bytes"`) || !strings.Contains(out, `"max_concurrent_seqs"`) {
		t.Errorf("JSON keys missing: %s", out)
	}
}

func TestServePlanTable(t *testing.T) {
	out, err := runServePlan(t, "table", "--model", "meta-llama/Llama-3.1-8B", "--gpu-memory", "24GiB", "--max-model-len", "131072", "--max-gpus", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kv pool/gpu", "tp 1 pp 1", "does not fit"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestServePlanUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no gpu", []string{"gpt2"}, "--gpu"},
		{"unknown gpu", []string{"gpt2", "--gpu", "Voodoo5"}, "--gpu"},
		{"bad memory", []string{"gpt2", "--gpu-memory", "80G"}, "ambiguous"},
		{"zero gpus", []string{"gpt2", "--gpu", "H100", "--max-gpus", "0"}, "--max-gpus"},
		{"bad utilization", []string{"gpt2", "--gpu", "H100", "--gpu-memory-utilization", "1.2"}, "--gpu-memory-utilization"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runServePlan(t, "table", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestServePlanRegistered(t *testing.T) {
	out, errOut, code := runCommand(t, "serve-plan", "gpt2", "--gpu", "H100", "--max-gpus", "1", "--format", "json")
	if code != 0 || !strings.Contains(out, `"kv_tokens"`) {
		t.Errorf("gpumem serve-plan: code %d, stderr %q, out %.200q", code, errOut, out)
	}
	_, errOut, code = runCommand(t, "serve-plan", "gpt2")
	if code != ExitUsage || !strings.Contains(errOut, "--gpu") {
		t.Errorf("serve-plan without a GPU: code %d, stderr %q; want a usage error naming --gpu", code, errOut)
	}
}

// TestEstimateSGLang runs a serving estimate for SGLang with its own flag
// names and checks they reach the job and the answer speaks SGLang's log.
func TestEstimateSGLang(t *testing.T) {
	out, errOut, code := runCommand(t, "estimate", "--model", "llama3.1-8b", "--mode", "serving", "--engine", "sglang",
		"--gpu", "H100-SXM", "--mem-fraction-static", "0.85", "--context-length", "8192", "--max-running-requests", "128",
		"--chunked-prefill-size", "4096", "--page-size", "16", "--cuda-graph-max-bs", "64", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r memory.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	g := r.Serving.SGLang
	if g == nil || g.MemFractionStatic != 0.85 || g.MemFractionDerived || g.ContextLen != 8192 || g.MaxRunningRequests != 128 ||
		g.ChunkedPrefillSize != 4096 || g.PageSize != 16 || g.CUDAGraphMaxBS != 64 || g.MaxTotalNumTokens%16 != 0 || g.MaxTotalNumTokens == 0 {
		t.Errorf("sglang = %+v", g)
	}
	table, _, code := runCommand(t, "estimate", "--model", "llama3.1-8b", "--mode", "serving", "--inference-engine", "sglang", "--gpu", "H100-SXM")
	if code != 0 || !strings.Contains(table, "KV Cache is allocated. #tokens:") || !strings.Contains(table, "max_running_requests=") ||
		!strings.Contains(table, "mem_fraction_static 0.834 (SGLang's default)") {
		t.Errorf("table:\n%s", table)
	}
	_, errOut, code = runCommand(t, "estimate", "--model", "llama3.1-8b", "--mode", "serving", "--engine", "sglang", "--gpu", "H100-SXM", "--gpu-memory-utilization", "0.9")
	if code == 0 || !strings.Contains(errOut, "--mem-fraction-static") {
		t.Errorf("vLLM's utilization with SGLang: exit %d, %s", code, errOut)
	}
}
