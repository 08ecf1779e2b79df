package memory

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
)

// The fast paths of the estimator must give the answers of the general
// code they short-cut; these tests pin that, and the benchmarks below
// time the estimates the fast paths serve.

// TestCanonicalDTypeAgreesWithScan checks the fast path of ParseDType
// against the alias scan: every canonical name maps to its own dtype and
// no alias of one dtype is another's canonical name.
func TestCanonicalDTypeAgreesWithScan(t *testing.T) {
	for _, d := range DTypes() {
		got := canonicalDType(d.Name)
		if got == nil || got.Name != d.Name {
			t.Errorf("canonicalDType(%q) = %v, want %s", d.Name, got, d.Name)
		}
		for _, e := range DTypes() {
			for _, a := range e.Aliases {
				if strings.EqualFold(a, d.Name) && e.Name != d.Name {
					t.Errorf("alias %q of %s is the canonical name of %s", a, e.Name, d.Name)
				}
			}
		}
	}
	for _, s := range []string{"BF16", " bf16", "bfloat16", "", "fp32 "} {
		if d := canonicalDType(s); d != nil {
			t.Errorf("canonicalDType(%q) = %s, want no match", s, d.Name)
		}
	}
}

// TestFold checks fold against strings.ToLower(strings.TrimSpace(s)).
func TestFold(t *testing.T) {
	for _, s := range []string{"", "flash", "Flash", " sdpa", "sdpa ", "\tfull\n", "every-2", "EVERY-2", "hf", "Ünïcode", "a b", " A B ", "\u00a0x", "x\u0085", "zero3", "\x01ctl"} {
		if got, want := fold(s), strings.ToLower(strings.TrimSpace(s)); got != want {
			t.Errorf("fold(%q) = %q, want %q", s, got, want)
		}
	}
}

// FuzzFold compares fold with the two-step normalisation on any input.
func FuzzFold(f *testing.F) {
	for _, s := range []string{"", "Flash", " x ", "\u00a0", "every-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := fold(s), strings.ToLower(strings.TrimSpace(s)); got != want {
			t.Errorf("fold(%q) = %q, want %q", s, got, want)
		}
	})
}

// TestUniformLayersSeesEveryField guards the field-by-field comparison
// of uniformLayers: a new field of model.LayerType must be compared too.
func TestUniformLayersSeesEveryField(t *testing.T) {
	// NoPE changes no size and is not compared.
	if n := reflect.TypeFor[model.LayerType]().NumField(); n != 10 {
		t.Fatalf("model.LayerType has %d fields; uniformLayers compares 9 (Attention, CrossAttention, MoE, KVHeads, HeadDim, SharedKV, State, FFN, NoFFN) and ignores NoPE: update it", n)
	}
	full, sliding := model.FullAttention, model.AttnKind(strings.Clone(string(model.SlidingAttention)))
	for _, tt := range []struct {
		a, b model.AttnKind
		want bool
	}{
		{full, full, true},
		{full, model.AttnKind(strings.Clone("full")), true},
		{full, sliding, false},
		{"", "", true},
		{"full", "fuli", false},
	} {
		if got := sameAttn(tt.a, tt.b); got != tt.want {
			t.Errorf("sameAttn(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// benchCases returns the golden jobs of one mode family ("train",
// "infer" or "serve") that succeed on m.
func benchCases(b *testing.B, m *model.Model, prefix string) []Job {
	b.Helper()
	var jobs []Job
	for _, c := range goldenCases() {
		if strings.HasPrefix(c.name, prefix) {
			if _, err := Estimate(m, c.job); err == nil {
				jobs = append(jobs, c.job)
			}
		}
	}
	if len(jobs) == 0 {
		b.Fatalf("no %s golden job runs on %s", prefix, m.ID)
	}
	return jobs
}

// BenchmarkEstimateMix times the golden jobs on Llama-2-7B in turn, one
// estimate per iteration: every training method, precision, engine and
// layout of the corpus rather than one fixed job.
func BenchmarkEstimateMix(b *testing.B) {
	m := catalogModel(b, "meta-llama/Llama-2-7b-hf")
	for _, family := range []string{"train", "infer", "serve"} {
		jobs := benchCases(b, m, family)
		b.Run(family, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := Estimate(m, jobs[i%len(jobs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// TestGlobContains checks the wildcard match against its definition:
// every '*'-separated part occurs in name, in order, without overlap.
func TestGlobContains(t *testing.T) {
	ref := func(name, pattern string) bool {
		for _, part := range strings.Split(pattern, "*") {
			i := strings.Index(name, part)
			if i < 0 {
				return false
			}
			name = name[i+len(part):]
		}
		return true
	}
	names := []string{"", "model.layers.*.self_attn.q_proj", "lm_head", "aaa", "model.embed_tokens"}
	patterns := []string{"", "*", "**", "q_proj", "self_attn*q_proj", "layers.*.mlp", "a*a*a", "a*a*a*a", "lm_head*", "*embed", "x"}
	for _, n := range names {
		for _, p := range patterns {
			if got, want := globContains(n, p), ref(n, p); got != want {
				t.Errorf("globContains(%q, %q) = %v, want %v", n, p, got, want)
			}
		}
	}
}

// TestOptimizerNamesUnambiguous backs the exact-name fast path of
// lookupOptimizer: no optimizer's canonical name matches an earlier
// optimizer's name or alias under the lookup's folding, so the fast path
// finds the optimizer the full scan finds.
func TestOptimizerNamesUnambiguous(t *testing.T) {
	for i := range optimizerTable {
		name := optimizerTable[i].info.Name
		for k := range i {
			o := &optimizerTable[k].info
			for _, other := range append([]string{o.Name}, o.Aliases...) {
				if optNameEq(name, other) {
					t.Errorf("optimizer %s matches %q of the earlier %s", name, other, o.Name)
				}
			}
		}
		if got, err := lookupOptimizer(name); err != nil || got != &optimizerTable[i] {
			t.Errorf("lookupOptimizer(%q) = %v, %v; want entry %d", name, got, err, i)
		}
	}
}

// TestTrainingAllocations pins the allocation budget of a plain
// training estimate: the job (the setup points to it, and escape analysis
// moves it to the heap), the model's inventory table, the breakdown, and
// one block for the phases and the band (an [Estimator] reuses the last
// three and reads the caller's job; see TestEstimatorAllocations). The breakdown is allocated at its exact size for every golden
// training job (no regrowth while the rows are appended).
func TestTrainingAllocations(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	job := Job{SeqLen: 4096, MicroBatch: 2, GradCheckpoint: "full", Attention: "flash"}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := Estimate(m, job); err != nil {
			t.Fatal(err)
		}
	}); n > 4 {
		t.Errorf("training estimate: %v allocations, want at most 4", n)
	}
	for _, id := range []string{"meta-llama/Llama-2-7b-hf", "Qwen/Qwen3-30B-A3B", "google-t5/t5-base", "Qwen/Qwen2-VL-7B-Instruct"} {
		m := catalogModel(t, id)
		for _, c := range goldenCases() {
			if c.job.Mode != "" && c.job.Mode != Train {
				continue
			}
			r, err := Estimate(m, c.job)
			if err != nil {
				continue
			}
			if l, k := len(r.PerGPU.Components), cap(r.PerGPU.Components); l != k {
				t.Errorf("%s %s: breakdown len %d, cap %d", id, c.name, l, k)
			}
		}
	}
}
