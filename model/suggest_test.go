package model

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string // the suggestions, in order; nil: none
	}{
		// A variant of a catalog model: the base model, alone.
		{"meta-llama/Llama-3.1-70B-Instruct", []string{"meta-llama/Llama-3.1-70B"}},
		{"llama3.1-70b-instruct", []string{"meta-llama/Llama-3.1-70B"}},
		{"meta-llama/Llama-2-7b-chat-hf", []string{"meta-llama/Llama-2-7b-hf"}},
		{"Qwen/Qwen2.5-7B-Instruct", []string{"Qwen/Qwen2.5-7B"}},
		{"mistralai/Mistral-7B-Instruct-v0.3", []string{"mistralai/Mistral-7B-v0.1"}},
		{"gemma-3-4b", []string{"google/gemma-3-4b-it"}},
		{"mistralai/Mistral-Nemo-Instruct-2407", []string{"mistralai/Mistral-Nemo-Base-2407"}},
		// Another organisation's copy of the same name.
		{"someone/Llama-2-7b-hf", []string{"meta-llama/Llama-2-7b-hf"}},
		// A typo, with the digits right.
		{"lama3-8b", []string{"meta-llama/Meta-Llama-3-8B"}},
		{"llama3-8bb", []string{"meta-llama/Meta-Llama-3-8B"}},
		// Another size is another model, however close the spelling.
		{"llama3-9b", nil},
		{"meta-llama/Llama-3.1-75B", nil},
		{"foo", nil},
		{"", nil},
		{"-instruct", nil},
	} {
		got := Suggest(tc.name, 3)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Suggest(%q) = %q, want %q", tc.name, got, tc.want)
		}
		for _, id := range got {
			if _, err := Lookup(id); err != nil {
				t.Errorf("Suggest(%q) gave %q, which the catalog does not load: %v", tc.name, id, err)
			}
		}
	}
	if got := Suggest("llama3-8b-instruct", 0); got != nil {
		t.Errorf("n = 0: got %q, want none", got)
	}
	// Several variants of one base: at most n, sorted.
	if got := Suggest("Qwen/Qwen2.5-VL-7B-Instruct-AWQ", 1); len(got) > 1 {
		t.Errorf("n = 1: got %q", got)
	}
}

// TestLookupNamesClosest checks that a name missing from the catalog is
// an ErrNotFound error naming the closest catalog model when there is one.
func TestLookupNamesClosest(t *testing.T) {
	_, err := Lookup("meta-llama/Llama-3.1-8B-Instruct")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "closest: meta-llama/Llama-3.1-8B") {
		t.Errorf("got %v, want ErrNotFound naming meta-llama/Llama-3.1-8B", err)
	}
	_, err = Lookup("no-such-model")
	if !errors.Is(err, ErrNotFound) || strings.Contains(err.Error(), "closest") {
		t.Errorf("got %v, want ErrNotFound with no suggestion", err)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"kitten", "sitting", 3}, {"llama38b", "lama38b", 1}, {"abc", "abc", 0},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := editDistance(tc.b, tc.a); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.b, tc.a, got, tc.want)
		}
	}
}
