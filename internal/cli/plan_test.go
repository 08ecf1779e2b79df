package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/plan"
)

func TestPlanRanksLayouts(t *testing.T) {
	out, errOut, code := runCommand(t, "plan", "Qwen/Qwen2.5-0.5B", "--gpu", "l4", "--max-gpus", "4", "--seq-len", "1024", "--top", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"on up to 4 x L4", "layouts fit", "score", "engine"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, errOut, code = runCommand(t, "plan", "Qwen/Qwen2.5-0.5B", "--gpu", "l4", "--max-gpus", "4", "--seq-len", "1024",
		"--engines", "single,ddp", "--checkpointing", "none,full", "--micro-batches", "1,2,4", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if p.GPU != "L4" || p.Feasible == 0 || len(p.Candidates) == 0 {
		t.Fatalf("plan %+v", p)
	}
	for _, c := range p.Candidates {
		if c.Engine != memory.EngineSingle && c.Engine != memory.EngineDDP || c.GradCheckpoint == "selective" || c.MicroBatch > 4 {
			t.Errorf("candidate %v outside the requested space", c.Layout)
		}
	}
}

func TestPlanAcrossGPUs(t *testing.T) {
	out, errOut, code := runCommand(t, "plan", "Qwen/Qwen2.5-0.5B", "--gpu", "t4,l4,h100", "--max-gpus", "2", "--seq-len", "1024")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"highest-scoring layout on up to 2 GPUs of each kind", "T4", "L4", "H100-SXM"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, code = runCommand(t, "plan", "Qwen/Qwen2.5-0.5B", "--gpu", "t4,h100", "--max-gpus", "2", "--seq-len", "1024", "--format", "json")
	var rep struct {
		Plans []plan.Plan `json:"plans"`
	}
	err := json.Unmarshal([]byte(out), &rep)
	plans := rep.Plans
	if err != nil || code != 0 || len(plans) != 2 {
		t.Fatalf("exit %d, %v, %d plans", code, err, len(plans))
	}
	for _, p := range plans {
		if len(p.Candidates) > 1 {
			t.Errorf("%s: %d candidates, want the best one", p.GPU, len(p.Candidates))
		}
	}
}

func TestPlanUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown gpu", []string{"plan", "gpt2", "--gpu", "tpu"}, "--gpu"},
		{"inference", []string{"plan", "gpt2", "--gpu", "h100", "--mode", "inference"}, "training layouts"},
		{"bad engine", []string{"plan", "gpt2", "--gpu", "h100", "--engines", "horovod"}, "--engines"},
		{"bad stage", []string{"plan", "gpt2", "--gpu", "h100", "--zero-stages", "4"}, "--zero-stages"},
		{"bad tp", []string{"plan", "gpt2", "--gpu", "h100", "--tp-sizes", "1,x"}, "--tp-sizes"},
		{"count above budget", []string{"plan", "gpt2", "--gpu", "h100", "--max-gpus", "4", "--gpu-counts", "8"}, "--gpu-counts"},
		{"top", []string{"plan", "gpt2", "--gpu", "h100", "--top", "0"}, "--top"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCommand(t, tc.args...)
			if code != ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q, want code %d mentioning %q", code, errOut, ExitUsage, tc.want)
			}
		})
	}
}
