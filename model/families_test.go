package model

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestFamiliesTable checks that the family table and the readers table
// name the same model_types, so every supported family has its covers
// and source, and no row describes a family nothing reads.
func TestFamiliesTable(t *testing.T) {
	var noRow, noReader []string
	for mt := range readers {
		if _, refused := unreadVLMs[mt]; refused {
			if _, ok := families[mt]; ok {
				t.Errorf("%s: a row in families for a family unreadVLMs refuses", mt)
			}
			continue
		}
		if _, ok := families[mt]; !ok {
			noRow = append(noRow, mt)
		}
	}
	for mt := range families {
		if _, ok := readers[mt]; !ok {
			noReader = append(noReader, mt)
		}
	}
	sort.Strings(noRow)
	sort.Strings(noReader)
	if len(noRow) > 0 {
		t.Errorf("readers without a row in families (model/families.go): %s — add {covers, source} for each", strings.Join(noRow, ", "))
	}
	if len(noReader) > 0 {
		t.Errorf("rows of families (model/families.go) with no reader in readers (model/registry.go): %s", strings.Join(noReader, ", "))
	}
	known := []string{CoversText, CoversMoE, CoversHybrid, CoversVision, CoversAudio, CoversEncoder}
	for mt, f := range families {
		if len(f.covers) == 0 || f.source == "" {
			t.Errorf("%s: row without covers or source: %+v", mt, f)
		}
		for _, c := range f.covers {
			if !slices.Contains(known, c) {
				t.Errorf("%s: covers %q, want one of %v", mt, c, known)
			}
		}
		if !strings.Contains(f.source, "@") && !strings.Contains(f.source, "remote code") {
			t.Errorf("%s: source %q names no revision", mt, f.source)
		}
	}
	for mt := range refusedFamilies {
		if _, ok := readers[mt]; ok {
			t.Errorf("%s is both read and refused", mt)
		}
	}
}

func TestFamilies(t *testing.T) {
	fs := Families()
	read := 0
	for mt := range readers {
		if _, refused := unreadVLMs[mt]; !refused {
			read++
		}
	}
	if len(fs) != read {
		t.Fatalf("Families() lists %d, readers reads %d", len(fs), read)
	}
	if !slices.IsSortedFunc(fs, func(a, b Family) int {
		return strings.Compare(strings.ToLower(a.ModelType), strings.ToLower(b.ModelType))
	}) {
		t.Error("Families() is not sorted by model_type")
	}
	fs[0].Covers[0] = "changed"
	if Families()[0].Covers[0] == "changed" {
		t.Error("Families() shares its covers with the table")
	}
}

// TestRefusedFamilies checks that a refused family fails by model_type
// and by architecture, naming both and the reason, with
// ErrUnsupportedArchitecture.
func TestRefusedFamilies(t *testing.T) {
	for _, cfg := range []string{
		`{"model_type": "deepseek_v4", "architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 43, "num_attention_heads": 64, "vocab_size": 129280}`,
		`{"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 43, "num_attention_heads": 64, "vocab_size": 129280}`,
	} {
		_, err := Parse([]byte(cfg))
		if !errors.Is(err, ErrUnsupportedArchitecture) {
			t.Fatalf("error %v, want ErrUnsupportedArchitecture", err)
		}
		for _, want := range []string{"DeepseekV4ForCausalLM", "compressed", "KV cache"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
	}
}
