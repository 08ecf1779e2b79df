package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/units"
)

// TestAssumedLine checks the "assumed:" line of a default estimate: it
// lists only the settings the job left to defaults, with their values,
// the stack versions assumed, and wraps at the width given (80 when
// unknown) with no line longer than that.
func TestAssumedLine(t *testing.T) {
	m, err := model.Load("meta-llama/Llama-2-7b-hf")
	if err != nil {
		t.Fatal(err)
	}
	r, err := memory.Estimate(m, memory.Job{SeqLen: 512, Optimizer: "adamw_torch_fused"})
	if err != nil {
		t.Fatal(err)
	}
	items := Assumed(r)
	for _, want := range []string{"dtype=bf16", "attn=sdpa", "grad_checkpoint=none", "per_device_batch=1", "framework=hf", "num_gpus=1",
		"device_map=none", "torch=", "transformers="} {
		if !slices.ContainsFunc(items, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("assumed %q lacks %s", items, want)
		}
	}
	for _, stated := range []string{"seq_len=", "optimizer=", "peft=", "vllm="} {
		if slices.ContainsFunc(items, func(s string) bool { return strings.HasPrefix(s, stated) }) {
			t.Errorf("assumed %q lists %s, which the job states or does not use", items, stated)
		}
	}
	for _, width := range []int{0, 40, 100} {
		var b strings.Builder
		if err := writeAssumed(&b, r, Options{Width: width}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.HasPrefix(out, "assumed: dtype=bf16,") {
			t.Errorf("width %d: %q", width, out)
		}
		limit := cmpOr(width, defaultWidth)
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if len(line) > limit {
				t.Errorf("width %d: line of %d columns: %q", width, len(line), line)
			}
		}
		if got := strings.Count(out, "="); got != len(items) {
			t.Errorf("width %d: %d items written, want %d", width, got, len(items))
		}
	}
	// The estimate's table ends with it, before the warnings; its title
	// names what was stated only.
	var b strings.Builder
	if err := Estimate(&b, r, Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "\nassumed: ") || !strings.Contains(out, "seq 512") || strings.Contains(strings.SplitN(out, "\n", 2)[0], "batch 1") {
		t.Errorf("estimate table:\n%s", out)
	}
	if !strings.Contains(out, "loading (before the first step): ") {
		t.Errorf("no loading line:\n%s", out)
	}
	// A job that states everything assumes nothing.
	r2, err := memory.Estimate(m, r.Job)
	if err != nil {
		t.Fatal(err)
	}
	if got := Assumed(r2); len(got) != 2 || !strings.HasPrefix(got[0], "torch=") {
		t.Errorf("resolved job still assumes %q (only the stack should remain)", got)
	}
}

func cmpOr(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}

// TestVerdictLine checks the verdict estimate --gpu prints: always one,
// naming the figure it decided on.
func TestVerdictLine(t *testing.T) {
	for _, tc := range []struct {
		fit  plan.Fit
		want []string
	}{
		{plan.Fit{GPU: "H100", GPUMemoryBytes: 80 * units.GiB, NeedBytes: 40 * units.GiB, FreeBytes: 40 * units.GiB, Utilization: 50, Verdict: plan.Fits, DecidedOn: "upper", Phase: "step"},
			[]string{"verdict on H100", "fits", "the band's upper edge", "40.00 GiB free"}},
		{plan.Fit{GPU: "H100", GPUMemoryBytes: 80 * units.GiB, NeedBytes: 78 * units.GiB, Utilization: 97.5, Verdict: plan.Tight, DecidedOn: "point", Phase: "step"},
			[]string{"tight", "the estimate", "may run out"}},
		{plan.Fit{GPU: "L4", GPUMemoryBytes: 22 * units.GiB, NeedBytes: 30 * units.GiB, ShortBytes: 8 * units.GiB, Verdict: plan.DoesNotFit, DecidedOn: "upper", Phase: "loading"},
			[]string{"does NOT fit", "while the model loads", "8.00 GiB short"}},
	} {
		got := VerdictLine(tc.fit, Options{})
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q lacks %q", got, w)
			}
		}
	}
}
