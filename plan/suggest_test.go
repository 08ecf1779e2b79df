package plan

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
)

// TestSuggest checks each suggestion against a direct estimate of the
// job with that flag, that every one lowers the peak, that they come
// lowest first, and that changes the job already has are not offered.
func TestSuggest(t *testing.T) {
	m, err := model.Load("meta-llama/Llama-3.2-1B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Lookup("l4")
	est := For(m)
	job := memory.Job{SeqLen: 16384, MicroBatch: 2, Attention: "eager", AllowLong: true}
	base, err := est(OnGPU(job, g))
	if err != nil {
		t.Fatal(err)
	}
	got := Suggest(est, job, g)
	if len(got) < 3 {
		t.Fatalf("want several suggestions for a job at %s on an L4, got %+v", Need(base), got)
	}
	direct := map[string]func(j *memory.Job){
		"grad_checkpoint=full":       func(j *memory.Job) { j.GradCheckpoint = "full" },
		"attn=flash":                 func(j *memory.Job) { j.Attention = "flash" },
		"fused_loss=liger":           func(j *memory.Job) { j.FusedLoss = "liger" },
		"optimizer=paged_adamw_8bit": func(j *memory.Job) { j.Optimizer = "paged_adamw_8bit" },
		"method=lora":                func(j *memory.Job) { j.Method = "lora" },
		"method=qlora":               func(j *memory.Job) { j.Method = "qlora" },
	}
	for i, s := range got {
		if s.Combined {
			continue // TestSuggestCombined
		}
		set, ok := direct[s.Change]
		if !ok {
			t.Fatalf("unexpected change %q", s.Change)
		}
		if len(s.Settings) != 1 || s.Settings[0].String() != s.Change {
			t.Errorf("%s: settings %v", s.Change, s.Settings)
		}
		if jk, ok := memory.LookupJobKey(s.Settings[0].Key); !ok || jk.Name != s.Settings[0].Key {
			t.Errorf("%s: %q is not a job key", s.Change, s.Settings[0].Key)
		}
		j := OnGPU(job, g)
		set(&j)
		r, err := est(j)
		if err != nil {
			t.Fatal(err)
		}
		if Need(r) != s.NeedBytes || Check(r, g) != s.Fit {
			t.Errorf("%s: suggestion says %s, a direct estimate %s", s.Change, s.NeedBytes, Need(r))
		}
		if s.NeedBytes >= Need(base) {
			t.Errorf("%s does not lower the peak (%s vs %s)", s.Change, s.NeedBytes, Need(base))
		}
		if i > 0 && !got[i-1].Combined && s.NeedBytes < got[i-1].NeedBytes {
			t.Errorf("suggestions not lowest first at %d", i)
		}
		if s.Why == "" {
			t.Errorf("%s: no reason", s.Change)
		}
	}
	job.GradCheckpoint, job.Attention = "full", "flash"
	for _, s := range Suggest(est, job, g) {
		if strings.HasPrefix(s.Change, "grad_checkpoint=") || strings.HasPrefix(s.Change, "attn=") {
			t.Errorf("offered %q to a job that has it", s.Change)
		}
	}
	if s := Suggest(est, memory.Job{Mode: memory.Inference, PromptLen: 512}, g); s != nil {
		t.Errorf("inference: want no suggestions, got %+v", s)
	}
}

// TestAssessSuggestsOnlyWhenNeeded checks that a job that fits gets no
// suggestions and one that does not gets some.
func TestAssessSuggestsOnlyWhenNeeded(t *testing.T) {
	m, err := model.Load("meta-llama/Llama-3.2-1B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Lookup("h100")
	a, err := Assess(For(m), memory.Job{SeqLen: 512, Method: "lora"}, g, 8)
	if err != nil {
		t.Fatal(err)
	}
	if a.Fit.Verdict != Fits || len(a.Suggestions) != 0 {
		t.Errorf("a small LoRA job on an H100: verdict %s, %d suggestions; want fits and none", a.Fit.Verdict, len(a.Suggestions))
	}
	l4, _ := gpu.Lookup("l4")
	a, err = Assess(For(m), memory.Job{SeqLen: 16384, MicroBatch: 2, Attention: "eager", AllowLong: true}, l4, 8)
	if err != nil {
		t.Fatal(err)
	}
	if a.Fit.Verdict == Fits || len(a.Suggestions) == 0 {
		t.Errorf("a 16k-token full fine-tune on an L4: verdict %s, %d suggestions; want some", a.Fit.Verdict, len(a.Suggestions))
	}
}

// TestSuggestCombined checks the combined suggestion of a job no single
// change fits: it fits when applied directly, comes last, and needs each
// of its changes (without any one of them it does not fit).
func TestSuggestCombined(t *testing.T) {
	m, err := model.Load("meta-llama/Llama-3.1-8B")
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Lookup("l4")
	est := For(m)
	job := memory.Job{SeqLen: 4096}
	got := Suggest(est, job, g)
	if len(got) == 0 || !got[len(got)-1].Combined {
		t.Fatalf("want a combined suggestion last, got %+v", got)
	}
	for _, s := range got[:len(got)-1] {
		if s.Combined || s.Verdict == Fits {
			t.Fatalf("a single change fits or a second combination: %+v", s)
		}
	}
	c := got[len(got)-1]
	apply := func(changes []string) Fit {
		j := OnGPU(job, g)
		for _, ch := range changes {
			for _, k := range knobs {
				if k.set.String() == ch {
					k.apply(&j)
				}
			}
		}
		r, err := est(j)
		if err != nil {
			t.Fatal(err)
		}
		return Check(r, g)
	}
	var changes []string
	for _, k := range knobs {
		if strings.Contains(c.Change, k.set.String()) {
			changes = append(changes, k.set.String())
		}
	}
	if len(c.Settings) != len(changes) {
		t.Errorf("combined %q: settings %v", c.Change, c.Settings)
	}
	if len(changes) < 2 {
		t.Fatalf("combined %q: want at least two changes", c.Change)
	}
	if f := apply(changes); f.Verdict != Fits || f.NeedBytes != c.NeedBytes {
		t.Errorf("combined %q applied directly: %s %s, suggestion says %s", c.Change, f.Verdict, f.NeedBytes, c.NeedBytes)
	}
	for i := range changes {
		rest := append(append([]string(nil), changes[:i]...), changes[i+1:]...)
		if f := apply(rest); f.Verdict == Fits {
			t.Errorf("combined %q: fits without %s too", c.Change, changes[i])
		}
	}
}
