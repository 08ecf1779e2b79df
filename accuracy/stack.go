package accuracy

import (
	"regexp"
	"strings"
	"sync"

	"github.com/gpumem/gpumem/memory"
)

// StackOf reads the software stack a record states into a memory.Stack:
// the versions its framework text, software note and reliability note
// name ("torch 2.4.1, transformers 4.48.1, peft 0.13.2", "bitsandbytes
// 0.41.1", "vLLM v0.19.0"), and the versions its notes imply without
// naming them:
//
//   - "torch 1.x" is torch 1.12.1, the last 1.x before lazy CUDA module
//     loading (the records are of 2022);
//   - "transformers ~4.18" is 4.18.0; "transformers < 4.36", the "4.3x
//     era" and a tuple KV cache rebuilt by torch.cat are 4.35.2, the last
//     release before the Cache classes; full-sequence prompt logits are
//     4.44.2, the last before generate kept only the last position;
//   - "PyTorch nightly (2.3 dev)" is 2.3.0.dev0;
//   - vLLM's V0 engine (VLLM_USE_V1=0, or a V0 worker log without a
//     version) is 0.7.3, the last release with V0 by default: the engine
//     choice is what the version rules read;
//   - torchtitan is dated: by the month the record names ("March 2024",
//     "(Dec 2024)", "(June 2025)"), by a torch nightly's date, or, for a
//     note that puts it before the 2025-04-02 change that compiles the
//     loss, as 2025-03.
//
// Packages a record does not state stay out of the stack: the estimate
// then assumes their current release and says so.
func StackOf(r Record) memory.Stack {
	text := r.Framework + " ; " + r.Job.SoftwareNote + " ; " + r.Job.ReliabilityNote
	low := strings.ToLower(text)
	st := memory.Stack{}
	set := func(pkg, v string) {
		if _, ok := st[pkg]; !ok && v != "" {
			st[pkg] = v
		}
	}
	v0 := strings.Contains(low, "vllm_use_v1=0")
	for _, m := range versionRE().FindAllStringSubmatch(text, -1) {
		pkg := packageOf(m[1])
		if pkg == "vllm" && v0 {
			continue // the V0 engine, below
		}
		set(pkg, m[2])
	}
	switch {
	case strings.Contains(low, "torch 1.x"):
		set("torch", "1.12.1")
	case strings.Contains(low, "2.3 dev"):
		set("torch", "2.3.0.dev0")
	}
	switch {
	case strings.Contains(low, "transformers ~4.18"):
		set("transformers", "4.18.0")
	case strings.Contains(low, "transformers < 4.36"), strings.Contains(low, "transformers 4.3x"),
		strings.Contains(low, "tuple kv cache"):
		set("transformers", "4.35.2")
	case strings.Contains(low, "full-sequence logits"):
		set("transformers", "4.44.2")
	}
	if v0 || strings.Contains(low, "model_runner/worker log") {
		set("vllm", "0.7.3")
	}
	if strings.Contains(low, "torchtitan") || strings.Contains(low, "torchtrain") {
		set("torchtitan", titanDate(low))
	}
	if len(st) == 0 {
		return nil
	}
	return st
}

// versionRE finds "package version" pairs: a package gpumem has version
// rules for, then a release number (a leading v, a pre-release or local
// suffix allowed).
var versionRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(pytorch|torch|transformers|peft|bitsandbytes|bnb|trl|accelerate|deepspeed|vllm)\s+(?:main around )?v?(\d+\.\d+(?:\.\d+)?(?:\.?(?:a|b|rc|dev|post)\d*)?)(?:\+[0-9a-z.]+)?\b`)
})

// packageOf is the stack name of a package as records spell it.
func packageOf(s string) string {
	switch s = strings.ToLower(s); s {
	case "pytorch":
		return "torch"
	case "bnb":
		return "bitsandbytes"
	}
	return s
}

// months are the month names records date torchtitan by.
var months = []string{"january", "february", "march", "april", "may", "june", "july",
	"august", "september", "october", "november", "december"}

// monthRE finds "March 2024", "(Dec 2024)", "June 2025".
var monthRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? (20\d\d)\b`)
})

// nightlyRE finds a torch nightly's date, "dev20250811".
var nightlyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`dev(20\d\d)(\d\d)\d\d`) })

// titanDate dates a torchtitan checkout from a record's lower-case text,
// or returns "" when the text gives no date.
func titanDate(low string) string {
	if m := monthRE().FindStringSubmatch(low); m != nil {
		for i, name := range months {
			if strings.HasPrefix(name, m[1]) {
				return m[2] + "-" + twoDigits(i+1)
			}
		}
	}
	if m := nightlyRE().FindStringSubmatch(low); m != nil {
		return m[1] + "-" + m[2]
	}
	if strings.Contains(low, "before the 2025-04-02") {
		return "2025-03"
	}
	return ""
}

// twoDigits writes a month number with two digits.
func twoDigits(n int) string {
	if n < 10 {
		return "0" + string(rune('0'+n))
	}
	return "1" + string(rune('0'+n-10))
}
