package model

import (
	"io/fs"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the config parser: it must return a
// model or an error, never panic, and a model it returns must satisfy the
// inventory invariants. The catalog configs are the seed corpus; crashers
// found later live in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	files, err := fs.Glob(catalogFS, "catalog/*.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := catalogFS.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"model_type": "llava", "text_config": {"model_type": "llava"}}`))
	f.Add([]byte(`{"model_type": "deepseek_v3", "q_lora_rank": null, "n_routed_experts": 1, "num_experts_per_tok": 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			if m != nil {
				t.Fatalf("model and error both returned: %v", err)
			}
			return
		}
		total := m.TotalParams()
		var sum int64
		for _, mod := range m.Modules {
			if mod.Params <= 0 || mod.Each <= 0 || mod.Instances <= 0 {
				t.Fatalf("module %s with non-positive counts: %+v", mod.Name, mod)
			}
			sum += mod.Params
			if sum < 0 {
				t.Fatalf("sum of modules overflows")
			}
		}
		if sum != total || total <= 0 {
			t.Fatalf("total %d, sum %d", total, sum)
		}
		if a := m.ActiveParams(); a <= 0 || a > total {
			t.Fatalf("active %d, total %d", a, total)
		}
		if len(m.Text.LayerTypes) != m.Text.Layers {
			t.Fatalf("%d layer types for %d layers", len(m.Text.LayerTypes), m.Text.Layers)
		}
	})
}
