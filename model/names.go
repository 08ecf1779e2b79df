package model

import (
	"slices"
	"strings"
)

// CatalogID returns the Hub id of the catalog model named by a Hub id
// (case-insensitive) or an alias, without reading its config. A name not
// in the catalog returns an error wrapping [ErrNotFound] that names the
// closest catalog models, as [Lookup] does.
func CatalogID(name string) (string, error) {
	file, err := catalogFile(name)
	if err != nil {
		return "", err
	}
	return fileID(file), nil
}

// releaseWords are name words that mark a release of a checkpoint
// trained from the same config.json: an instruction or chat tune
// ("-Instruct", "-chat", "-it"), the pretrained base ("-Base", Gemma's
// "-pt"), and the "-hf" of a checkpoint converted to transformers. A
// narrower list than [Suggest]'s variantWords: a version ("-v0.3", whose
// vocabulary grew), a preview or a preference tune may change the
// architecture, and a quantization ("-AWQ", "-Int4") changes the
// weights, so those words keep two names apart.
var releaseWords = []string{"instruct", "chat", "it", "base", "pt", "hf"}

// VariantOf returns the Hub id of the catalog model that name is a
// release of: the same name once release words and release dates are
// dropped ("meta-llama/Llama-3.1-8B-Instruct" is a release of
// meta-llama/Llama-3.1-8B, "Mistral-Nemo-Instruct-2407" of
// mistralai/Mistral-Nemo-Base-2407, "gemma-3-4b-pt" of google/gemma-3-4b-it,
// "DeepSeek-V3-0324" of deepseek-ai/DeepSeek-V3). A name written with an
// organisation matches only that organisation's models; a bare name also
// matches aliases. ok is false when no catalog model, or more than one,
// matches.
//
// Such releases share the base model's architecture, but gpumem cannot
// check that without their config.json; callers that use the answer in
// place of the model's own config must say so.
func VariantOf(name string) (id string, ok bool) {
	idx, err := catalogIndex()
	if err != nil {
		return "", false
	}
	org, base := splitOrg(strings.ToLower(strings.TrimSpace(name)))
	key := releaseKey(base)
	if key == "" {
		return "", false
	}
	var found []string
	for lower, file := range idx {
		o, n := splitOrg(lower)
		if (org == "" || org == o) && releaseKey(n) == key {
			found = append(found, fileID(file))
		}
	}
	if org == "" {
		for alias, target := range aliases {
			if releaseKey(alias) == key {
				if file, ok := idx[strings.ToLower(target)]; ok {
					found = append(found, fileID(file))
				}
			}
		}
	}
	slices.Sort(found)
	found = slices.Compact(found)
	if len(found) != 1 {
		return "", false
	}
	return found[0], true
}

// PublisherOf returns the organisation that publishes the catalog model
// whose name shares the longest start with name, among those whose first
// word (leading letters) is name's: "Qwen" for "Qwen2-7B-Instruct",
// "meta-llama" for "Llama-3.3-70B-Instruct" (closer to Llama-3.1 than to
// huggyllama's llama-65b), "google" for "gemma-2-2b-it". ok is false when
// no catalog model starts with that word, or when models of several
// organisations are equally close.
func PublisherOf(name string) (org string, ok bool) {
	idx, err := catalogIndex()
	if err != nil {
		return "", false
	}
	_, base := splitOrg(strings.ToLower(strings.TrimSpace(name)))
	word, flat := leadingLetters(base), flatten(base)
	if word == "" {
		return "", false
	}
	best, orgs := 0, map[string]int{}
	for lower, file := range idx {
		o, n := splitOrg(lower)
		if o == "" || leadingLetters(n) != word {
			continue
		}
		p := commonPrefix(flat, flatten(n))
		if p < best {
			continue
		}
		if p > best {
			best, orgs = p, map[string]int{}
		}
		o, _ = splitOrg(fileID(file)) // as the catalog spells it
		orgs[o]++
	}
	top := 0
	for o, n := range orgs {
		switch {
		case n > top:
			org, top, ok = o, n, true
		case n == top:
			ok = false
		}
	}
	if !ok {
		return "", false
	}
	return org, true
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// splitOrg splits "org/name" into its parts; a name without "/" has no
// organisation.
func splitOrg(s string) (org, name string) {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return "", s
}

// releaseKey is a lower-case model name without its release words and
// release dates (after the first word) and without separators:
// "llama-3.1-8b-instruct" and "llama-3.1-8b" both give "llama318b".
func releaseKey(name string) string {
	words := strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' || r == ' ' })
	if len(words) > 1 {
		words = append(words[:1], slices.DeleteFunc(words[1:], func(w string) bool {
			return slices.Contains(releaseWords, w) || isReleaseDate(w)
		})...)
	}
	return flatten(strings.Join(words, ""))
}

// isReleaseDate reports whether a name word is a release date: four
// digits read as YYMM (Mistral's "2407", Qwen's "2507") or MMDD
// (DeepSeek's "0324", OLMoE's "0924"), or eight as YYYYMMDD. Sizes and
// versions carry letters or dots ("7b", "v0.3", "3.1"), so they are not
// taken for dates.
func isReleaseDate(w string) bool {
	for _, r := range w {
		if r < '0' || r > '9' {
			return false
		}
	}
	num := func(s string) int {
		n := 0
		for _, r := range s {
			n = n*10 + int(r-'0')
		}
		return n
	}
	month := func(s string) bool { m := num(s); return m >= 1 && m <= 12 }
	day := func(s string) bool { d := num(s); return d >= 1 && d <= 31 }
	switch len(w) {
	case 4:
		yymm := num(w[:2]) >= 20 && num(w[:2]) <= 39 && month(w[2:])
		mmdd := month(w[:2]) && day(w[2:])
		return yymm || mmdd
	case 8:
		return num(w[:4]) >= 2020 && num(w[:4]) <= 2039 && month(w[4:6]) && day(w[6:])
	}
	return false
}

// leadingLetters returns the letters a lower-case name starts with:
// "qwen" for "qwen2.5-7b", "llama" for "llama-3.1-8b".
func leadingLetters(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r < 'a' || r > 'z' })
	if i < 0 {
		return s
	}
	return s[:i]
}
