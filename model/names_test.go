package model

import (
	"errors"
	"testing"
)

func TestCatalogID(t *testing.T) {
	for name, want := range map[string]string{
		"llama3-8b":                 "meta-llama/Meta-Llama-3-8B",
		" META-LLAMA/Llama-3.1-8b ": "meta-llama/Llama-3.1-8B",
	} {
		if got, err := CatalogID(name); err != nil || got != want {
			t.Errorf("CatalogID(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := CatalogID("Llama-3.1-8B"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an id without its organisation: %v, want ErrNotFound", err)
	}
}

func TestVariantOf(t *testing.T) {
	for _, tc := range []struct {
		name, want string // want "": none
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B"},
		{"meta-llama/Meta-Llama-3-70B-Instruct", "meta-llama/Meta-Llama-3-70B"},
		{"meta-llama/Llama-2-7b-chat-hf", "meta-llama/Llama-2-7b-hf"},
		{"meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-1B-Instruct"},
		{"google/gemma-2-9b-it", "google/gemma-2-9b"},
		{"google/gemma-3-4b-pt", "google/gemma-3-4b-it"},
		{"Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B"},
		{"Qwen/Qwen-72B-Chat", "Qwen/Qwen-72B"},
		{"mistralai/Mistral-Nemo-Instruct-2407", "mistralai/Mistral-Nemo-Base-2407"},
		{"deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-V3"},
		{"deepseek-ai/DeepSeek-R1-0528", "deepseek-ai/DeepSeek-R1"},
		{"allenai/OLMoE-1B-7B-0125-Instruct", "allenai/OLMoE-1B-7B-0924"},
		{"Llama-3.1-8B", "meta-llama/Llama-3.1-8B"},         // a bare name
		{"llama3.1-8b-instruct", "meta-llama/Llama-3.1-8B"}, // an alias's release
		{"LLAMA-3.1-8B-INSTRUCT", "meta-llama/Llama-3.1-8B"},
		// Not releases: a version (Mistral v0.3 has a larger vocabulary),
		// a quantization, another size or context, another organisation,
		// a fine-tune that changes the model.
		{"mistralai/Mistral-7B-Instruct-v0.3", ""},
		{"Qwen/Qwen2.5-7B-Instruct-AWQ", ""},
		{"Qwen/Qwen-72B-Chat-Int4", "Qwen/Qwen-72B-Chat-Int4"},
		{"microsoft/Phi-3-mini-128k-instruct", ""},
		{"meta-llama/Llama-3.1-70B-Instruct-FP8", ""},
		{"someone/Llama-3.1-8B-Instruct", ""},
		{"deepseek-ai/DeepSeek-V3.1", ""},
		{"Qwen2-7B-Instruct", ""},
		{"", ""},
		{"-instruct", ""},
	} {
		got, ok := VariantOf(tc.name)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("VariantOf(%q) = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
}

// TestVariantOfCatalogIsItself checks that no two catalog models are
// releases of each other: each id names itself alone, so a stand-in is
// never a choice between two.
func TestVariantOfCatalogIsItself(t *testing.T) {
	for _, e := range Catalog() {
		if got, ok := VariantOf(e.ID); !ok || got != e.ID {
			t.Errorf("VariantOf(%q) = %q, %v", e.ID, got, ok)
		}
		for _, a := range e.Aliases {
			if got, ok := VariantOf(a); !ok || got != e.ID {
				t.Errorf("VariantOf(alias %q) = %q, %v; want %q", a, got, ok, e.ID)
			}
		}
	}
}

func TestPublisherOf(t *testing.T) {
	for _, tc := range []struct {
		name, want string
	}{
		{"Qwen2-7B-Instruct", "Qwen"},
		{"Qwen3-Coder-30B-A3B-Instruct", "Qwen"},
		{"Llama-3.3-70B-Instruct", "meta-llama"}, // not huggyllama's llama-65b
		{"Meta-Llama-3.1-8B-Instruct", "meta-llama"},
		{"gemma-2-2b-it", "google"},
		{"Mistral-Small-24B-Instruct-2501", "mistralai"},
		{"Mixtral-8x7B-Instruct-v0.1", "mistralai"},
		{"gpt-oss-safeguard-20b", "openai"},
		{"gpt2-small", "openai-community"},
		{"phi-4", "microsoft"},
		{"DeepSeek-R1-Distill-Qwen-7B", "deepseek-ai"},
		{"someorg/Qwen2-7B", "Qwen"}, // the organisation given is not used
		{"my-finetune", ""},
		{"7b-model", ""},
		{"", ""},
	} {
		got, ok := PublisherOf(tc.name)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("PublisherOf(%q) = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
}

func TestIsReleaseDate(t *testing.T) {
	for w, want := range map[string]bool{
		"2407": true, "2501": true, "0324": true, "0924": true, "1210": true, "20240620": true,
		"7b": false, "v0.3": false, "3.1": false, "128k": false, "4096": false, "2413": false,
		"1999": false, "123": false, "20241340": false, "": false,
	} {
		if got := isReleaseDate(w); got != want {
			t.Errorf("isReleaseDate(%q) = %v, want %v", w, got, want)
		}
	}
}

// FuzzVariantOf checks that any name gives, without panicking, a release
// answer the catalog loads and a publisher that publishes catalog models.
func FuzzVariantOf(f *testing.F) {
	for _, s := range []string{"meta-llama/Llama-3.1-8B-Instruct", "gemma-3-4b-pt", "DeepSeek-V3-0324", "Qwen2-7B", "a/b/c", "-", "", "x-2407-2501", "İ-it"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if id, ok := VariantOf(name); ok {
			if _, err := Lookup(id); err != nil {
				t.Fatalf("VariantOf(%q) = %q, which does not load: %v", name, id, err)
			}
		}
		if org, ok := PublisherOf(name); ok {
			found := false
			for _, e := range Catalog() {
				if o, _ := splitOrg(e.ID); o == org {
					found = true
				}
			}
			if !found {
				t.Fatalf("PublisherOf(%q) = %q, which publishes no catalog model", name, org)
			}
		}
	})
}
