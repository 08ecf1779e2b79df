package memory

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Stack is the software a job runs on: package name → version, as
// `pip freeze` would print it ("transformers": "4.48.1", "torch":
// "2.4.1+cu121"). torchtitan, which publishes no regular releases, is
// dated: "2025-06" or "2025-06-15". A package the stack leaves out runs
// its newest release known to gpumem ([DefaultStack]); the resolved job
// lists every version used and marks those that were assumed.
//
// The memory model reads the stack only through named version rules
// ([Rules]): each says which package and version range it covers, what
// changes in memory, and where that comes from.
type Stack map[string]string

// StackPackage describes one package the memory model has version rules
// or a default for.
type StackPackage struct {
	// Name is the package's PyPI name, lower case ("bitsandbytes").
	Name string `json:"name"`
	// Aliases are other spellings accepted on input ("bnb", "pytorch").
	Aliases []string `json:"aliases,omitempty"`
	// Default is the version assumed when a job states none.
	Default string `json:"default"`
	// DefaultSource says where the default version comes from.
	DefaultSource string `json:"default_source"`
	// Oldest is the oldest version the memory model covers: the rules
	// say nothing about what came before it, so an older stated version is
	// an error rather than a guess.
	Oldest string `json:"oldest"`
	// Dated is true for packages versioned by date (torchtitan).
	Dated bool `json:"dated,omitempty"`
	// Build is true for packages versioned by build number (llama.cpp's
	// releases are tagged b6000, b8390, ...; llama-cli --version prints the
	// number alone).
	Build bool `json:"build,omitempty"`
}

// stackPackages are the packages the memory model knows versions of.
// Their defaults are the newest releases the version rules were checked
// against; a newer release than these is read as behaving like the
// newest rule boundary says.
var stackPackages = []StackPackage{
	{Name: "torch", Oldest: "1.10", Aliases: []string{"pytorch"}, Default: "2.11.0",
		DefaultSource: "PyTorch 2.11 release (pytorch/pytorch tag v2.11.0)"},
	{Name: "transformers", Oldest: "4.18", Default: "5.3.0",
		DefaultSource: "transformers v5.3.0 release (huggingface/transformers tag v5.3.0)"},
	{Name: "peft", Oldest: "0.3", Default: "0.18.0",
		DefaultSource: "PEFT v0.18.0 release (huggingface/peft tag v0.18.0)"},
	{Name: "bitsandbytes", Oldest: "0.37", Aliases: []string{"bnb"}, Default: "0.48.0",
		DefaultSource: "bitsandbytes 0.48.0 release (bitsandbytes-foundation/bitsandbytes tag 0.48.0)"},
	{Name: "trl", Oldest: "0.4", Default: "0.24.0",
		DefaultSource: "TRL v0.24.0 release (huggingface/trl tag v0.24.0)"},
	{Name: "accelerate", Oldest: "0.20", Default: "1.11.0",
		DefaultSource: "Accelerate v1.11.0 release (huggingface/accelerate tag v1.11.0)"},
	{Name: "deepspeed", Oldest: "0.8", Default: "0.18.0",
		DefaultSource: "DeepSpeed v0.18.0 release (deepspeedai/DeepSpeed tag v0.18.0)"},
	{Name: "vllm", Oldest: "0.4", Default: "0.33.0",
		DefaultSource: "vLLM v0.33.0 release (vllm-project/vllm tag v0.33.0), the newest on PyPI in November 2026"},
	{Name: "torchao", Oldest: "0.4", Aliases: []string{"ao"}, Default: "0.15.0",
		DefaultSource: "torchao v0.15.0 release (pytorch/ao tag v0.15.0)"},
	{Name: "torchtitan", Oldest: "2024-01", Default: "2025-10", Dated: true,
		DefaultSource: "pytorch/torchtitan main as of 2025-10 (no regular releases; dated by commit)"},
	// SGLang's serving memory (its default mem_fraction_static) follows
	// the reserved-memory heuristic of sgl-project/sglang PR #10975
	// (2025-09-27), read at commit 037c3982 of December 2025; releases
	// before it derived the fraction from the TP size alone, which is
	// not modelled.
	{Name: "sglang", Oldest: "0.5.4", Default: "0.5.6",
		DefaultSource: "SGLang v0.5.6 release (sgl-project/sglang, version bump PR #14316); python/sglang/srt/server_args.py _handle_gpu_memory_settings and model_executor/model_runner.py profile_max_num_token as of commit 037c3982"},
	// llama.cpp: the context padded to a multiple of 256 (PR #17046,
	// November 2025) and a quantized V cache refused without flash
	// attention hold in every build from the oldest covered here; older
	// builds padded the KV cache by flash attention (256 or 32) and, for
	// a few builds after PR #16812, not at all, which is not modelled.
	{Name: "llama.cpp", Aliases: []string{"llamacpp", "llama-cpp"}, Oldest: "b8390", Default: "b8390", Build: true,
		DefaultSource: "llama.cpp release b8390 (ggml-org/llama.cpp tag b8390, March 2026, the build node-llama-cpp v3.18.1 ships), which carries PR #17046"},
}

// StackPackages lists the packages the memory model knows versions of,
// with their defaults and sources (`gpumem constants --rules`).
func StackPackages() []StackPackage { return slices.Clone(stackPackages) }

// parsePackageVersion reads a version of package p (nil when unknown): a
// build-numbered package takes "b6000" or the bare number llama-cli
// --version prints; any other package refuses a build number.
func parsePackageVersion(p *StackPackage, s string) (Version, error) {
	if p == nil {
		return ParseVersion(s, false)
	}
	if p.Build {
		t := strings.TrimSpace(s)
		if !strings.HasPrefix(t, "b") {
			t = "b" + t
		}
		return parseBuildVersion(s, t[1:])
	}
	v, err := ParseVersion(s, p.Dated)
	if err == nil && v.build {
		return Version{}, fmt.Errorf("version %q: want numbers separated by dots, such as 4.48.1", s)
	}
	return v, err
}

// stackPackage finds a known package by name or alias, folded.
func stackPackage(name string) (*StackPackage, bool) {
	n := strings.ReplaceAll(fold(name), "_", "-")
	for i := range stackPackages {
		p := &stackPackages[i]
		if p.Name == n || slices.Contains(p.Aliases, n) {
			return p, true
		}
	}
	return nil, false
}

// Version is a parsed package version: up to four numbers (major, minor,
// patch, build), a date (year, month, day) or a build number ("b6000"),
// plus whether it is a pre-release (rc, a, b, dev), which sorts before
// the release with the same numbers. Local labels ("+cu121") and
// post-releases are ignored: they do not change memory behaviour.
type Version struct {
	n     [4]int
	parts int
	pre   bool
	dated bool
	build bool
}

// ParseVersion reads s as a release version ("4.48.1", "2.4.1+cu121",
// "0.6.3.post1", "5.0.0rc1", "v0.11.0"), a build number ("b6000", as
// llama.cpp tags its releases) or, when dated, as a date ("2025-06",
// "2025-06-15"). The error says which syntax was expected.
func ParseVersion(s string, dated bool) (Version, error) {
	t := strings.TrimSpace(s)
	if dated {
		return parseDateVersion(t)
	}
	if rest, ok := strings.CutPrefix(t, "b"); ok {
		return parseBuildVersion(s, rest)
	}
	t = strings.TrimPrefix(strings.TrimPrefix(t, "v"), "V")
	if i := strings.IndexByte(t, '+'); i >= 0 {
		t = t[:i]
	}
	var v Version
	for i := 0; t != ""; i++ {
		j := 0
		for j < len(t) && t[j] >= '0' && t[j] <= '9' {
			j++
		}
		if j == 0 || j > 9 || i == len(v.n) {
			return Version{}, fmt.Errorf("version %q: want numbers separated by dots, such as 4.48.1", s)
		}
		v.n[i], _ = strconv.Atoi(t[:j])
		v.parts = i + 1
		t = t[j:]
		if t == "" {
			break
		}
		if t[0] == '.' && len(t) > 1 && t[1] >= '0' && t[1] <= '9' {
			t = t[1:]
			continue
		}
		// A suffix: pre-release, post-release or dev marker.
		suf := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(t, "."), "-"))
		switch {
		case strings.HasPrefix(suf, "post"):
		case strings.HasPrefix(suf, "rc"), strings.HasPrefix(suf, "dev"),
			strings.HasPrefix(suf, "a"), strings.HasPrefix(suf, "b"), strings.HasPrefix(suf, "alpha"), strings.HasPrefix(suf, "beta"):
			v.pre = true
		default:
			return Version{}, fmt.Errorf("version %q: want numbers separated by dots, such as 4.48.1, optionally with rc/dev/post", s)
		}
		break
	}
	if v.parts == 0 {
		return Version{}, fmt.Errorf("version %q: want numbers separated by dots, such as 4.48.1", s)
	}
	return v, nil
}

// parseBuildVersion reads the digits of a build number ("6000" of "b6000").
func parseBuildVersion(s, digits string) (Version, error) {
	n, err := strconv.Atoi(digits)
	if err != nil || digits == "" || digits[0] < '0' || digits[0] > '9' || len(digits) > 9 {
		return Version{}, fmt.Errorf("version %q: want a build number such as b6000", s)
	}
	return Version{n: [4]int{n}, parts: 1, build: true}, nil
}

// parseDateVersion reads "2025-06" or "2025-06-15".
func parseDateVersion(s string) (Version, error) {
	bad := fmt.Errorf("version %q: want a date, 2025-06 or 2025-06-15", s)
	f := strings.Split(s, "-")
	if len(f) < 2 || len(f) > 3 {
		return Version{}, bad
	}
	v := Version{dated: true, parts: len(f)}
	limits := [3][2]int{{2000, 2100}, {1, 12}, {1, 31}}
	for i, p := range f {
		n, err := strconv.Atoi(p)
		if err != nil || p == "" || p[0] == '+' || p[0] == '-' || n < limits[i][0] || n > limits[i][1] {
			return Version{}, bad
		}
		v.n[i] = n
	}
	return v, nil
}

// Compare returns -1, 0 or +1 as v is before, equal to or after w.
// Missing numbers count as 0 ("4.48" == "4.48.0"); a pre-release is
// before its release.
func (v Version) Compare(w Version) int {
	if c := slices.Compare(v.n[:], w.n[:]); c != 0 {
		return c
	}
	switch {
	case v.pre == w.pre:
		return 0
	case v.pre:
		return -1
	}
	return 1
}

// String writes the version back in its canonical form.
func (v Version) String() string {
	var b strings.Builder
	if v.build {
		return "b" + strconv.Itoa(v.n[0])
	}
	sep := "."
	if v.dated {
		sep = "-"
	}
	for i := 0; i < v.parts; i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		if v.dated && i > 0 {
			fmt.Fprintf(&b, "%02d", v.n[i])
		} else {
			b.WriteString(strconv.Itoa(v.n[i]))
		}
	}
	if v.pre {
		b.WriteString("rc")
	}
	return b.String()
}

// ParseStack reads the --stack syntax, "transformers=4.48.1,torch=2.4.1",
// into a Stack. Spaces around names and versions are ignored; "==" is
// accepted as pip writes it. Two values for one package, a malformed
// entry or a version that does not parse are errors naming the package.
// Unknown packages are kept (they draw a warning when the job is
// estimated).
func ParseStack(s string) (Stack, error) {
	st := Stack{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, ver, ok := strings.Cut(item, "=")
		ver = strings.TrimPrefix(ver, "=")
		name, ver = strings.TrimSpace(name), strings.TrimSpace(ver)
		if !ok || name == "" || ver == "" {
			return nil, FieldErrorf("stack", "{stack} entry %q: want package=version, such as transformers=4.48.1", item)
		}
		if err := st.Set(name, ver); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// Set adds one package version to the stack, checking it as ParseStack
// does.
func (st Stack) Set(name, version string) error {
	key := strings.ReplaceAll(fold(name), "_", "-")
	p, known := stackPackage(key)
	if known {
		key = p.Name
	}
	if _, err := parsePackageVersion(p, version); err != nil {
		return FieldErrorf("stack", "{stack}: %s: %w", key, err)
	}
	if old, dup := st[key]; dup && old != version {
		return FieldErrorf("stack", "{stack}: two versions for %s (%s and %s)", key, old, version)
	}
	st[key] = version
	return nil
}

// StackVersion is one package of a resolved stack.
type StackVersion struct {
	// Package is the package's name.
	Package string `json:"package"`
	// Version is the version used.
	Version string `json:"version"`
	// Assumed is true when the job did not state it and the default was used.
	Assumed bool `json:"assumed,omitempty"`
}

// ResolvedStack is a job's stack with every known package's version
// filled in, the rules that apply to it and the warnings it drew.
type ResolvedStack struct {
	// Versions lists every known package (stated or assumed), then the
	// unknown packages the job stated, in name order.
	Versions []StackVersion `json:"versions"`
	// Rules names the version rules in effect (those whose range holds
	// the stack's version of their package).
	Rules []string `json:"rules,omitempty"`
	// Warnings are notes about the stack (unknown packages).
	Warnings []string `json:"warnings,omitempty"`

	active ruleSet
}

// Active reports whether the named rule applies.
func (r *ResolvedStack) Active(name string) bool {
	for i := range rules {
		if rules[i].Name == name {
			return r.active.has(ruleID(i))
		}
	}
	return false
}

// ResolveStack fills in the stack's defaults, checks it and evaluates the
// version rules. software is the older --software era list, each era
// read as the version it names (torch1 is torch 1.12, transformers<4.36
// is 4.35, ...); a stated version wins over an era.
func ResolveStack(st Stack, software []string) (ResolvedStack, error) {
	var r ResolvedStack
	stated := Stack{}
	for _, era := range software {
		pkg, ver, ok := eraVersion(era)
		if !ok {
			return r, FieldErrorf("software", "{software}: unknown software era %q (want torch1, transformers<4.36, transformers<4.45, bnb<0.43.2, vllm<0.8 or torchtitan-2024q1; {stack} states exact versions)", era)
		}
		// Two eras of one package (transformers<4.36 and <4.45) both
		// hold for the older version.
		if old, ok := stated[pkg]; ok {
			o, _ := ParseVersion(old, false)
			n, _ := ParseVersion(ver, false)
			if o.Compare(n) <= 0 {
				continue
			}
		}
		stated[pkg] = ver
	}
	for name, ver := range st {
		key := strings.ReplaceAll(fold(name), "_", "-")
		if p, ok := stackPackage(key); ok {
			key = p.Name
		}
		delete(stated, key) // a stated version wins over an era
		if err := stated.Set(key, ver); err != nil {
			return r, err
		}
	}
	versions := make(map[string]Version, len(stackPackages))
	for _, p := range stackPackages {
		ver, ok := stated[p.Name]
		if !ok {
			ver = p.Default
		}
		v, err := parsePackageVersion(&p, ver)
		if err != nil {
			return r, FieldErrorf("stack", "{stack}: %s: %w", p.Name, err)
		}
		versions[p.Name] = v
		r.Versions = append(r.Versions, StackVersion{Package: p.Name, Version: ver, Assumed: !ok})
	}
	var unknown []string
	for name := range stated {
		if _, ok := versions[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	for _, name := range unknown {
		r.Versions = append(r.Versions, StackVersion{Package: name, Version: stated[name]})
		r.Warnings = append(r.Warnings, fmt.Sprintf("stack: gpumem has no version rules for %q; its version changes nothing in the estimate", name))
	}
	for _, p := range stackPackages {
		oldest, err := parsePackageVersion(&p, p.Oldest)
		if err != nil {
			return r, FieldErrorf("stack", "{stack}: %s: oldest version: %w", p.Name, err)
		}
		if v := versions[p.Name]; v.Compare(oldest) < 0 {
			return r, FieldErrorf("stack", "{stack}: %s %s is older than %s, the oldest %s the memory model covers", p.Name, v, p.Oldest, p.Name)
		}
	}
	for i := range rules {
		id := ruleID(i)
		if id.covers(versions[rules[i].Package]) {
			r.active = r.active.with(id)
			r.Rules = append(r.Rules, rules[i].Name)
		}
	}
	return r, nil
}

// eraVersion maps an older --software era onto the package version it
// stands for: the last version inside the era.
func eraVersion(era string) (pkg, version string, ok bool) {
	switch fold(era) {
	case "torch1":
		// The torch 1.x records are of 2022 (transformers 4.18-era
		// docs), before lazy module loading became the default in 1.13.
		return "torch", "1.12.1", true
	case "transformers<4.36":
		return "transformers", "4.35.2", true
	case "transformers<4.45":
		return "transformers", "4.44.2", true
	case "bnb<0.43.2":
		return "bitsandbytes", "0.43.1", true
	case "vllm<0.8":
		return "vllm", "0.7.3", true
	case "torchtitan-2024q1":
		return "torchtitan", "2024-03", true
	}
	return "", "", false
}

// String writes the stack as --stack takes it, packages in name order.
func (st Stack) String() string {
	names := make([]string, 0, len(st))
	for n := range st {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n + "=" + st[n])
	}
	return b.String()
}
