package cli

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/plan"
)

// TestEstimateStatesTheResolvedJob checks the estimate command's outputs:
// the table ends with the assumed settings, the JSON carries the whole
// resolved job with the assumed keys, and a default sequence length is
// memory.DefaultSeqLen (the API and the page use the same, see the web
// tests).
func TestEstimateStatesTheResolvedJob(t *testing.T) {
	out, errOut, code := runCommand(t, "estimate", "llama2-7b")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"\nassumed: dtype=bf16,", "seq_len=2048", "optimizer=adamw_torch", "attn=sdpa", "transformers=", "loading (before the first step):"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	r := estimateJSON(t, "llama2-7b")
	if r.Job.SeqLen != memory.DefaultSeqLen || !r.Assumed.Has("seq_len") || r.Job.Optimizer != "adamw_torch" || r.Job.Dtype != "bf16" ||
		r.Job.Framework != "hf" || r.Job.GradCheckpoint != "none" || r.Loading == nil {
		t.Errorf("JSON job %+v, assumed %v", r.Job, r.Assumed.Keys())
	}
	// What the command line states is not assumed.
	r = estimateJSON(t, "llama2-7b", "--seq-len", "512", "--optimizer", "adamw_torch")
	if r.Assumed.Has("seq_len") || r.Assumed.Has("optimizer") {
		t.Errorf("stated settings listed as assumed: %v", r.Assumed.Keys())
	}
	// QLoRA checkpoints unless told not to, and says so.
	r = estimateJSON(t, "llama2-7b", "--method", "qlora", "--seq-len", "512")
	if r.Job.GradCheckpoint != "full" || !strings.Contains(strings.Join(r.Warnings, "\n"), "prepare_model_for_kbit_training") {
		t.Errorf("QLoRA: grad_checkpoint %q, warnings %q", r.Job.GradCheckpoint, r.Warnings)
	}
	r = estimateJSON(t, "llama2-7b", "--method", "qlora", "--seq-len", "512", "--grad-checkpoint", "false")
	if r.Job.GradCheckpoint != "none" || r.Assumed.Has("grad_checkpoint") {
		t.Errorf("QLoRA told not to checkpoint: %q", r.Job.GradCheckpoint)
	}
}

// TestEstimateVerdict checks that estimate --gpu always prints a verdict,
// fits included, and that --decide-on picks the figure: a job whose
// estimate fits but whose band's upper edge does not is tight on the
// upper edge and fits on the point.
func TestEstimateVerdict(t *testing.T) {
	out, errOut, code := runCommand(t, "estimate", "qwen2.5-0.5b", "--seq-len", "512", "--gpu", "h100")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "verdict on H100") || !strings.Contains(out, ": fits — ") || !strings.Contains(out, "the band's upper edge") {
		t.Errorf("no fitting verdict:\n%s", out)
	}
	out, _, code = runCommand(t, "estimate", "llama2-7b", "--seq-len", "4096", "--gpu", "l4")
	if code != 0 || !strings.Contains(out, "does NOT fit") {
		t.Errorf("exit %d, want a 'does NOT fit' verdict:\n%s", code, out)
	}
	// Find a sequence length whose point fits an L4 and whose upper edge
	// does not, from the estimates themselves.
	var seq int
	for s := 256; s <= 65536 && seq == 0; s += 256 {
		r := estimateJSON(t, "qwen2.5-0.5b", "--seq-len", itoa(s), "--gpu", "l4", "--allow-long")
		f := plan.Check(r, mustGPU(t, "l4"))
		if f.PointBytes <= plan.Budget(mustGPU(t, "l4")) && f.Verdict == plan.Tight {
			seq = s
		}
	}
	if seq == 0 {
		t.Fatal("no sequence length between 256 and 64k puts the band's upper edge alone over the margin")
	}
	upper, _, _ := runCommand(t, "estimate", "qwen2.5-0.5b", "--seq-len", itoa(seq), "--gpu", "l4", "--allow-long")
	point, _, _ := runCommand(t, "estimate", "qwen2.5-0.5b", "--seq-len", itoa(seq), "--gpu", "l4", "--allow-long", "--decide-on", "point")
	if !strings.Contains(upper, ": tight — ") || !strings.Contains(point, ": fits — ") || !strings.Contains(point, "the estimate") {
		t.Errorf("seq %d: upper edge\n%s\npoint\n%s", seq, lastLines(upper), lastLines(point))
	}
	if _, errOut, code := runCommand(t, "estimate", "llama2-7b", "--decide-on", "median"); code != 2 || !strings.Contains(errOut, "--decide-on") {
		t.Errorf("bad --decide-on: exit %d, %q", code, errOut)
	}
}

// TestPlanningOutputsStateTheJob checks that fit, plan and serve-plan
// print the resolved job (JSON) and the assumed settings (tables), and
// say which figure their verdicts decided on.
func TestPlanningOutputsStateTheJob(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"fit one GPU", []string{"fit", "qwen2.5-0.5b", "--gpu", "l4", "--seq-len", "512"}},
		{"fit several", []string{"fit", "qwen2.5-0.5b", "--gpu", "l4,h100", "--seq-len", "512"}},
		{"plan", []string{"plan", "qwen2.5-0.5b", "--gpu", "l4", "--max-gpus", "2", "--seq-len", "512", "--engines", "single,ddp"}},
		{"serve-plan", []string{"serve-plan", "qwen2.5-0.5b", "--gpu", "l4", "--max-gpus", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCommand(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, "\nassumed: ") || !strings.Contains(out, "decide on") {
				t.Errorf("table lacks the assumed line or the decision:\n%s", out)
			}
			js, errOut, code := runCommand(t, append(tc.args, "--format", "json")...)
			if code != 0 {
				t.Fatalf("json: exit %d: %s", code, errOut)
			}
			var v struct {
				Job     *memory.Job    `json:"job"`
				Assumed []string       `json:"assumed"`
				Result  *memory.Result `json:"result"`
			}
			if err := json.Unmarshal([]byte(js), &v); err != nil {
				t.Fatal(err)
			}
			job, assumed := v.Job, v.Assumed
			if v.Result != nil {
				job, assumed = &v.Result.Job, v.Result.Assumed.Keys()
			}
			if job == nil || job.Dtype == "" || job.Attention == "" || len(assumed) == 0 {
				t.Errorf("JSON job %+v, assumed %v", job, assumed)
			}
		})
	}
}

func lastLines(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-6):], "\n")
}

func itoa(n int) string { return strconv.Itoa(n) }

func mustGPU(t *testing.T, name string) gpu.GPU {
	t.Helper()
	g, err := gpu.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
