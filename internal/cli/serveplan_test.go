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
