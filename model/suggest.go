package model

import (
	"slices"
	"strings"

	"github.com/gpumem/gpumem/internal/textdist"
)

// variantWords are name endings that mark a fine-tuned or repackaged
// variant of a base checkpoint, which usually has the same architecture
// ("Llama-3.1-8B-Instruct" and "Llama-3.1-8B" share their config.json
// but for the token ids): the base model is the closest catalog entry.
var variantWords = []string{"instruct", "it", "chat", "hf", "base", "preview", "sft", "dpo", "rlhf"}

// Suggest returns up to n catalog names closest to name, best first:
// models that differ from it only by variant words ("-Instruct", "-it",
// "-chat", "-hf", "-Base", "-v0.3") or by its organisation, else names a
// few edits away with the same digits. Each model is named once, as a
// Hub id when name is written as one ("org/name"), else by the alias or
// id that matched. It returns nil when nothing is close.
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
	hubForm := strings.Contains(q, "/")
	type cand struct {
		name string
		cost int
		form int // 0: written as name is (an id for an id, else an alias)
	}
	best := map[string]cand{} // by id: the closest spelling of the model
	offer := func(id, key string, alias bool) {
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
			if d := textdist.Levenshtein(qFlat, f); d <= max(1, min(len(qFlat), len(f))/5) {
				cost = d
			}
		}
		if cost < 0 {
			return
		}
		c := cand{name: id, cost: cost}
		if alias {
			c.name = key
		}
		if alias == hubForm {
			c.form = 1
		}
		if b, ok := best[id]; !ok || c.cost < b.cost || c.cost == b.cost && c.form < b.form {
			best[id] = c
		}
	}
	for _, file := range idx {
		id := fileID(file)
		offer(id, strings.ToLower(id), false)
	}
	for alias, id := range aliases {
		if file, ok := idx[strings.ToLower(id)]; ok {
			offer(fileID(file), alias, true)
		}
	}
	cands := make([]cand, 0, len(best))
	for _, c := range best {
		cands = append(cands, c)
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
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, 0, min(n, len(cands)))
	for _, c := range cands[:min(n, len(cands))] {
		out = append(out, c.name)
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
