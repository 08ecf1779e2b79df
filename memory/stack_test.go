package memory

import (
	"slices"
	"strings"
	"testing"
)

func TestParseVersionOrder(t *testing.T) {
	// Each version is strictly after the one before it.
	ordered := []string{"0.43.1", "0.43.2rc1", "0.43.2", "4.35.2", "4.36", "4.36.0.1", "4.48.1+cu121", "5.0.0.dev0", "5.0.0", "v5.3.0"}
	for i := 1; i < len(ordered); i++ {
		a, err := ParseVersion(ordered[i-1], false)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ParseVersion(ordered[i], false)
		if err != nil {
			t.Fatal(err)
		}
		if a.Compare(b) >= 0 || b.Compare(a) <= 0 {
			t.Errorf("%s should sort before %s", ordered[i-1], ordered[i])
		}
	}
	same := [][2]string{{"4.48", "4.48.0"}, {"2.4.1+cu121", "2.4.1"}, {"0.6.3.post1", "0.6.3"}}
	for _, p := range same {
		a, _ := ParseVersion(p[0], false)
		b, _ := ParseVersion(p[1], false)
		if a.Compare(b) != 0 {
			t.Errorf("%s and %s should compare equal", p[0], p[1])
		}
	}
	d1, err := ParseVersion("2024-03", true)
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := ParseVersion("2024-04-02", true)
	if d1.Compare(d2) >= 0 {
		t.Errorf("2024-03 should sort before 2024-04-02")
	}
	if got := d2.String(); got != "2024-04-02" {
		t.Errorf("String = %q, want 2024-04-02", got)
	}
}

func TestParseVersionBad(t *testing.T) {
	for _, s := range []string{"", "four", "4..1", "4.x", ".4", "4.48.1.2.3", "1234567890.1", "4.48-foo"} {
		if _, err := ParseVersion(s, false); err == nil || !strings.Contains(err.Error(), "want numbers") {
			t.Errorf("ParseVersion(%q) = %v, want an error saying what it wants", s, err)
		}
	}
	for _, s := range []string{"2025", "2025-13", "2025-06-32", "1999-01", "june", "2025-+6"} {
		if _, err := ParseVersion(s, true); err == nil || !strings.Contains(err.Error(), "want a date") {
			t.Errorf("ParseVersion(%q, dated) = %v, want an error asking for a date", s, err)
		}
	}
}

func TestParseStack(t *testing.T) {
	st, err := ParseStack(" transformers=4.48.1, torch==2.4.1 ,bnb=0.43.3,torchtitan=2025-06,")
	if err != nil {
		t.Fatal(err)
	}
	want := Stack{"transformers": "4.48.1", "torch": "2.4.1", "bitsandbytes": "0.43.3", "torchtitan": "2025-06"}
	if st.String() != want.String() {
		t.Errorf("ParseStack = %v, want %v", st, want)
	}
	bad := map[string]string{
		"transformers=four":                  "transformers",
		"transformers=4.48.1,transformers=5": "two versions for transformers",
		"torch":                              "want package=version",
		"=2.4":                               "want package=version",
		"torchtitan=2.0":                     "want a date",
	}
	for in, frag := range bad {
		if _, err := ParseStack(in); err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("ParseStack(%q) = %v, want an error containing %q", in, err, frag)
		}
	}
}

func TestResolveStackDefaults(t *testing.T) {
	r, err := ResolveStack(Stack{"transformers": "4.35.0", "left-pad": "1.0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var assumed, stated []string
	for _, v := range r.Versions {
		if v.Assumed {
			assumed = append(assumed, v.Package)
		} else {
			stated = append(stated, v.Package)
		}
	}
	if !slices.Equal(stated, []string{"transformers", "left-pad"}) {
		t.Errorf("stated = %v, want transformers then the unknown left-pad", stated)
	}
	if len(assumed) != len(stackPackages)-1 {
		t.Errorf("assumed %d packages, want every known package but transformers (%d)", len(assumed), len(stackPackages)-1)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "left-pad") {
		t.Errorf("warnings = %q, want one naming the unknown package", r.Warnings)
	}
	if !r.Active("transformers-tuple-kv-cache") || !r.Active("transformers-full-prompt-logits") {
		t.Errorf("transformers 4.35 should activate both generation rules, got %v", r.Rules)
	}
	if r.Active("torch-zero-grad-keeps-grads") {
		t.Errorf("the default torch should not keep gradients")
	}
}

func TestResolveStackEras(t *testing.T) {
	// Each era activates exactly the rules it stood for before versions,
	// and the allocator rules added since that hold for its version (torch
	// 1.12 has no expandable segments; torchtitan's launch script did not
	// set them in early 2024).
	cases := map[string][]string{
		"torch1":            {"torch-zero-grad-keeps-grads", "torch-eager-module-loading", "torch-1x-fragmentation", "torch-no-expandable-segments"},
		"transformers<4.36": {"transformers-tuple-kv-cache", "transformers-full-prompt-logits"},
		"transformers<4.45": {"transformers-full-prompt-logits"},
		"bnb<0.43.2":        {"bnb-4bit-saves-input"},
		"vllm<0.8":          {"vllm-v0-sampler-warmup", "vllm-cudagraph-outside-budget"},
		// torchtitan 2024-03 also predates per-parameter FSDP (PR #165,
		// 2024-03-28) and context parallelism (PR #592).
		"torchtitan-2024q1": {"torchtitan-logits-through-backward", "torchtitan-default-allocator", "torchtitan-fsdp1", "torchtitan-no-context-parallel"},
	}
	for era, want := range cases {
		r, err := ResolveStack(nil, []string{era})
		if err != nil {
			t.Fatalf("%s: %v", era, err)
		}
		if !slices.Equal(r.Rules, want) {
			t.Errorf("era %s: rules %v, want %v", era, r.Rules, want)
		}
	}
	// Two eras of one package hold for the older version, and a stated
	// version wins over an era.
	r, _ := ResolveStack(nil, []string{"transformers<4.45", "transformers<4.36"})
	if !r.Active("transformers-tuple-kv-cache") {
		t.Errorf("transformers<4.45 with <4.36 should read as the older")
	}
	r, _ = ResolveStack(Stack{"transformers": "4.40"}, []string{"transformers<4.36"})
	if r.Active("transformers-tuple-kv-cache") || !r.Active("transformers-full-prompt-logits") {
		t.Errorf("a stated transformers 4.40 should win over the era, got %v", r.Rules)
	}
	if _, err := ResolveStack(nil, []string{"torch0"}); err == nil || !strings.Contains(err.Error(), "torch0") {
		t.Errorf("unknown era: err = %v, want one naming it", err)
	}
}

func TestResolveStackTooOld(t *testing.T) {
	_, err := ResolveStack(Stack{"transformers": "2.11.0"}, nil)
	if err == nil || !strings.Contains(err.Error(), "transformers 2.11.0 is older than 4.18") {
		t.Errorf("err = %v, want one saying transformers 2.11.0 predates the oldest covered version", err)
	}
}

func TestStackTables(t *testing.T) {
	names := map[string]bool{}
	for _, p := range stackPackages {
		if names[p.Name] {
			t.Errorf("package %s listed twice", p.Name)
		}
		names[p.Name] = true
		if p.DefaultSource == "" {
			t.Errorf("package %s: default %s has no source", p.Name, p.Default)
		}
		d, err := ParseVersion(p.Default, p.Dated)
		if err != nil {
			t.Errorf("package %s: default: %v", p.Name, err)
		}
		o, err := ParseVersion(p.Oldest, p.Dated)
		if err != nil {
			t.Errorf("package %s: oldest: %v", p.Name, err)
		}
		if o.Compare(d) > 0 {
			t.Errorf("package %s: oldest %s is after the default %s", p.Name, p.Oldest, p.Default)
		}
	}
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.Name] {
			t.Errorf("rule %s listed twice", r.Name)
		}
		seen[r.Name] = true
		if !names[r.Package] {
			t.Errorf("rule %s: package %q has no entry in the package table", r.Name, r.Package)
		}
		if r.Source == "" || r.Effect == "" {
			t.Errorf("rule %s: needs an effect and a source", r.Name)
		}
		if r.From == "" && r.Before == "" {
			t.Errorf("rule %s: no version bound", r.Name)
		}
	}
	if defaultRules != 0 {
		r, _ := ResolveStack(nil, nil)
		t.Errorf("the default stack activates rules %v; defaults should be the newest releases, past every legacy boundary", r.Rules)
	}
}

func TestJobStackReachesEstimate(t *testing.T) {
	m := catalogModel(t, "llama3-8b")
	base, err := Estimate(m, Job{Mode: Inference, PromptLen: 512, GenLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	old, err := Estimate(m, Job{Mode: Inference, PromptLen: 512, GenLen: 64, Stack: Stack{"transformers": "4.35.2"}})
	if err != nil {
		t.Fatal(err)
	}
	if old.PerGPU.AllocatedPeakBytes <= base.PerGPU.AllocatedPeakBytes {
		t.Errorf("transformers 4.35 (tuple cache, full logits) peak %v should be above the default's %v", old.PerGPU.AllocatedPeakBytes, base.PerGPU.AllocatedPeakBytes)
	}
	if _, err := Estimate(m, Job{Stack: Stack{"torch": "nope"}}); err == nil || !strings.Contains(err.Error(), "torch") {
		t.Errorf("a bad stack version should fail naming the package, got %v", err)
	}
	r, err := Estimate(m, Job{Stack: Stack{"left-pad": "1.0"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "left-pad") }) {
		t.Errorf("warnings %q should name the unknown package", r.Warnings)
	}
}

func FuzzParseStack(f *testing.F) {
	for _, s := range []string{"transformers=4.48.1,torch=2.4.1", "torchtitan=2025-06", "bnb==0.43.3", "a=b=c", ",,=", "torch=1.2.3.4.5", "llama.cpp=b9000,sglang=0.5.6", "llamacpp=8390", "llama-cpp=b1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseStack(s)
		if err != nil {
			return
		}
		r, err := ResolveStack(st, nil)
		if err != nil {
			return
		}
		if len(r.Versions) < len(stackPackages) {
			t.Fatalf("resolved %d versions, want at least the %d known packages", len(r.Versions), len(stackPackages))
		}
		// The written stack parses back to the same stack.
		again, err := ParseStack(st.String())
		if err != nil || again.String() != st.String() {
			t.Fatalf("round trip of %q: %v, %v", st.String(), again, err)
		}
	})
}

// TestBuildVersions covers packages versioned by build number: llama.cpp
// takes its release tags (b8390) or the bare number llama-cli --version
// prints; a build number is no version of a dotted package, and dotted
// versions are no llama.cpp build.
func TestBuildVersions(t *testing.T) {
	a, err := ParseVersion("b6000", false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ParseVersion("b10760", false)
	if a.Compare(b) >= 0 || a.String() != "b6000" || b.String() != "b10760" {
		t.Errorf("b6000 vs b10760: compare %d, strings %s %s", a.Compare(b), a, b)
	}
	for _, bad := range []string{"b", "b6x", "b-1", "b+3", "b1234567890"} {
		if _, err := ParseVersion(bad, false); err == nil || !strings.Contains(err.Error(), "want a build number") {
			t.Errorf("ParseVersion(%q) = %v, want an error asking for a build number", bad, err)
		}
	}
	ok := map[string]string{"llama.cpp": "b9000", "llamacpp": "9000", "llama-cpp": " b12274 ", "sglang": "0.5.6.post2"}
	for pkg, ver := range ok {
		st := Stack{}
		if err := st.Set(pkg, ver); err != nil {
			t.Errorf("Set(%s, %s): %v", pkg, ver, err)
		}
		if _, err := ResolveStack(st, nil); err != nil {
			t.Errorf("ResolveStack(%s=%s): %v", pkg, ver, err)
		}
	}
	bad := map[[2]string]string{
		{"llama.cpp", "4.48"}:         "want a build number such as b6000",
		{"transformers", "b5000"}:     "want numbers separated by dots",
		{"llama.cpp", "b6000"}:        "llama.cpp b6000 is older than b8390, the oldest llama.cpp the memory model covers",
		{"sglang", "0.4.9"}:           "sglang 0.4.9 is older than 0.5.4, the oldest sglang the memory model covers",
		{"sglang", "b100"}:            "want numbers separated by dots",
		{"llama.cpp", "b8390,x=1"}:    "want a build number",
		{"llama.cpp", "latest"}:       "want a build number",
		{"llama.cpp", "b99999999999"}: "want a build number",
	}
	for in, want := range bad {
		st := Stack{}
		err := st.Set(in[0], in[1])
		if err == nil {
			_, err = ResolveStack(st, nil)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: %v, want an error containing %q", in[0], in[1], err, want)
		}
	}
	r, err := ResolveStack(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range r.Versions {
		if (v.Package == "llama.cpp" && v.Version != "b8390") || (v.Package == "sglang" && v.Version != "0.5.6") || !v.Assumed {
			if v.Package == "llama.cpp" || v.Package == "sglang" {
				t.Errorf("default %s %s (assumed %v)", v.Package, v.Version, v.Assumed)
			}
		}
	}
}
