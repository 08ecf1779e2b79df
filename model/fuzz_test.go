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
		checkPartialSums(t, m, total)
		if len(m.Text.LayerTypes) != m.Text.Layers {
			t.Fatalf("%d layer types for %d layers", len(m.Text.LayerTypes), m.Text.Layers)
		}
	})
}

// checkPartialSums asserts that the per-component and per-stack totals
// are non-negative and add up to the model's total, and that every
// per-layer count is non-negative and at most the total: sums over
// modules never wrap.
func checkPartialSums(t *testing.T, m *Model, total int64) {
	t.Helper()
	var byComp int64
	for _, c := range m.ByComponent() {
		if c.Params < 0 || c.Params > total {
			t.Fatalf("component %s: %d parameters of %d", c.Component, c.Params, total)
		}
		byComp += c.Params
	}
	if byComp != total {
		t.Fatalf("components sum to %d, total %d", byComp, total)
	}
	var byStack int64
	for _, st := range []string{StackText, StackEncoder, StackVision, StackProjector} {
		n := m.StackParams(st)
		if n < 0 || n > total {
			t.Fatalf("stack %s: %d parameters of %d", st, n, total)
		}
		byStack += n
	}
	if byStack != total {
		t.Fatalf("stacks sum to %d, total %d", byStack, total)
	}
	if l := m.LinearParams(); l < 0 || l > total {
		t.Fatalf("linear %d, total %d", l, total)
	}
	for i := range min(m.Text.Layers, 64) {
		if n := m.LayerParams(StackText, i); n < 0 || n > total {
			t.Fatalf("layer %d: %d parameters of %d", i, n, total)
		}
	}
	if n := m.OutsideLayerParams(StackText); n < 0 || n > total {
		t.Fatalf("outside the layers: %d parameters of %d", n, total)
	}
}
