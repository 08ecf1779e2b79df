package model

import (
	"slices"
	"strings"
)

// variantWords are name endings that mark a fine-tuned or repackaged
// variant of a base checkpoint, which usually has the same architecture
// ("Llama-3.1-8B-Instruct" and "Llama-3.1-8B" share their config.json
// but for the token ids): the base model is the closest catalog entry.
var variantWords = []string{"instruct", "it", "chat", "hf", "base", "preview", "sft", "dpo", "rlhf"}

// Suggest returns up to n catalog ids whose names are closest to name,
// best first: ids that differ from it only by variant words
// ("-Instruct", "-it", "-chat", "-hf", "-Base", "-v0.3") or by its organisation,
// else ids and aliases a few edits away with the same digits. It returns
// nil when nothing is close.
func Suggest(name string, n int) []string {
	idx, err := catalogIndex()
	if err != nil || n <= 0 {
		return nil
	}
	q := strings.ToLower(strings.TrimSpace(name))
	qBase, qFlat := variantBase(q), flatten(q)
	if qFlat == "" {
		return nil
	}
	type cand struct {
		id   string
		cost int
	}
	best := map[string]int{} // id → lowest cost over the id and its aliases
	offer := func(id, key string) {
		cost := -1
		switch {
		case variantBase(key) == qBase:
			cost = 0
		default:
			f := flatten(key)
			// A few edits, relative to the length: a typo or a missing
			// separator, not a different model. The digits (version and
			// size) must agree: "8b" is not "70b".
			if digits(f) != digits(qFlat) {
				break
			}
			if d := editDistance(qFlat, f); d <= max(1, min(len(qFlat), len(f))/5) {
				cost = d
			}
		}
		if cost < 0 {
			return
		}
		if c, ok := best[id]; !ok || cost < c {
			best[id] = cost
		}
	}
	for key, file := range idx {
		offer(fileID(file), key)
	}
	for alias, id := range aliases {
		if file, ok := idx[strings.ToLower(id)]; ok {
			offer(fileID(file), alias)
		}
	}
	cands := make([]cand, 0, len(best))
	for id, c := range best {
		cands = append(cands, cand{id, c})
	}
	// A variant of the same base model is the answer; near spellings
	// are offered only when there is none.
	if slices.ContainsFunc(cands, func(c cand) bool { return c.cost == 0 }) {
		cands = slices.DeleteFunc(cands, func(c cand) bool { return c.cost > 0 })
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if a.cost != b.cost {
			return a.cost - b.cost
		}
		return strings.Compare(a.id, b.id)
	})
	out := make([]string, 0, min(n, len(cands)))
	for _, c := range cands[:min(n, len(cands))] {
		out = append(out, c.id)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// variantBase is a lower-case name without its organisation, its
// variant words (after the first word) and its separators:
// "meta-llama/llama-3.1-8b-instruct" and "llama-3.1-8b" both give
// "llama318b", "mistral-nemo-instruct-2407" and "Mistral-Nemo-Base-2407"
// "mistralnemo2407".
func variantBase(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	words := strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '_' || r == ' ' })
	if len(words) > 1 {
		words = append(words[:1], slices.DeleteFunc(words[1:], func(w string) bool {
			return slices.Contains(variantWords, w) || isVersion(w)
		})...)
	}
	return flatten(strings.Join(words, ""))
}

// isVersion reports whether a name word is a release tag such as "v0.1"
// or "v3". Releases may differ (Mistral-7B v0.3 has a larger vocabulary
// than v0.1), but another release of the model is the closest entry.
func isVersion(w string) bool {
	if len(w) < 2 || w[0] != 'v' {
		return false
	}
	for _, r := range w[1:] {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

// digits keeps the digits of s.
func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// flatten keeps the letters and digits of a lower-case name, without its
// organisation.
func flatten(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// editDistance is the Levenshtein distance between two ASCII strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
