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
		{"llama3.1-70b-instruct", []string{"llama3.1-70b"}}, // as written: an alias
		{"meta-llama/Llama-2-7b-chat-hf", []string{"meta-llama/Llama-2-7b-hf"}},
		{"Qwen/Qwen2.5-7B-Instruct", []string{"Qwen/Qwen2.5-7B"}},
		{"mistralai/Mistral-7B-Instruct-v0.3", []string{"mistralai/Mistral-7B-v0.1"}},
		{"gemma-3-4b", []string{"gemma3-4b"}},
		{"mistralai/Mistral-Nemo-Instruct-2407", []string{"mistralai/Mistral-Nemo-Base-2407"}},
		// Another organisation's copy of the same name.
		{"someone/Llama-2-7b-hf", []string{"meta-llama/Llama-2-7b-hf"}},
		// A typo, with the digits right.
		{"lama3-8b", []string{"llama3-8b"}},
		{"llama3-8bb", []string{"llama3-8b"}},
		{"meta-llama/Meta-Llama-3-8BB", []string{"meta-llama/Meta-Llama-3-8B"}}, // as written: an id
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
		for _, name := range got {
			if _, err := Lookup(name); err != nil {
				t.Errorf("Suggest(%q) gave %q, which the catalog does not load: %v", tc.name, name, err)
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

// FuzzSuggest checks that any name gets at most n suggestions, each a
// name the catalog loads, without panicking.
func FuzzSuggest(f *testing.F) {
	for _, s := range []string{"llama3.1-70b-instruct", "meta-llama/Llama-2-7b-chat-hf", "", "-", "v0.1", "a/b/c", "x-it-it-it"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, name string, n int) {
		if len(name) > 300 || n > 100 {
			return
		}
		got := Suggest(name, n)
		if len(got) > max(n, 0) {
			t.Fatalf("Suggest(%q, %d) = %d names", name, n, len(got))
		}
		for _, s := range got {
			if _, err := Lookup(s); err != nil {
				t.Fatalf("Suggest(%q) gave %q: %v", name, s, err)
			}
		}
	})
}
