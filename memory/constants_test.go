package memory

import (
	"math"
	"strings"
	"testing"
)

func TestConstantsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Constants() {
		if c.Name == "" || c.Source == "" || c.Description == "" || c.Unit == "" {
			t.Errorf("constant %+v lacks a name, source, description or unit", c)
		}
		if seen[c.Name] {
			t.Errorf("duplicate constant %q", c.Name)
		}
		seen[c.Name] = true
		if c.Default < c.Min || c.Default > c.Max {
			t.Errorf("%s default %v outside [%v, %v]", c.Name, c.Default, c.Min, c.Max)
		}
		// A derived constant's default 0 means "derived": 0 must be its
		// floor, so no value below it can be set.
		if c.Derived && (c.Default != 0 || c.Min != 0 || !strings.Contains(c.Source, "derived by default")) {
			t.Errorf("derived constant %s: default %v, min %v, source %q", c.Name, c.Default, c.Min, c.Source)
		}
	}
	for _, want := range []string{"activation_scale", "fragmentation", "cuda_context_mib", "workspace_mib", "misc_overhead_mib"} {
		if !seen[want] {
			t.Errorf("constant %q missing", want)
		}
	}
}

func TestResolveConstants(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]float64
		errWith string
	}{
		{"none", nil, ""},
		{"ok", map[string]float64{"activation_scale": 1.2, "FRAGMENTATION": 0.1}, ""},
		{"unknown", map[string]float64{"frag": 0.1}, `"frag"`},
		{"negative", map[string]float64{"fragmentation": -0.1}, "fragmentation"},
		{"nan", map[string]float64{"activation_scale": math.NaN()}, "activation_scale"},
		{"inf", map[string]float64{"cuda_context_mib": math.Inf(1)}, "cuda_context_mib"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := resolveConstants(tt.in)
			if tt.errWith == "" && err != nil {
				t.Fatal(err)
			}
			if tt.errWith != "" && (err == nil || !strings.Contains(err.Error(), tt.errWith)) {
				t.Errorf("err = %v, want one containing %s", err, tt.errWith)
			}
		})
	}
	v, err := ConstantValue(map[string]float64{"activation_scale": 1.5}, "activation_scale")
	if err != nil || v != 1.5 {
		t.Errorf("ConstantValue = %v, %v; want 1.5", v, err)
	}
	if v, _ := ConstantValue(nil, "cuda_context_mib"); v != 500 {
		t.Errorf("default cuda_context_mib = %v, want 500", v)
	}
}
