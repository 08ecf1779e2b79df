package gpu

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/units"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadFileYAMLMergesOverBuiltins(t *testing.T) {
	p := writeFile(t, "site.yaml", `
gpus:
  - name: Site-Board-X
    vendor: nvidia
    nominal_gb: 48
    memory_mib: 49140
    arch: ampere
    compute_capability: "8.6"
    bf16: true
    aliases: [sbx]
    memory_source: nvidia-smi on our nodes
  - name: H100-SXM
    vendor: nvidia
    nominal_gb: 80
    memory: 79GiB
    arch: hopper
    compute_capability: "9.0"
    bf16: true
    fp8: true
    memory_source: MIG-free partition on our cluster
`)
	c, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.Lookup("sbx")
	if err != nil || g.Memory != 49140*units.MiB || g.SM() != 86 {
		t.Fatalf("sbx = %+v, %v", g, err)
	}
	// The override replaces the built-in, and the built-in aliases still
	// resolve to it.
	h, err := c.Lookup("h100")
	if err != nil || h.Memory != 79*units.GiB {
		t.Fatalf("h100 after override = %v, %v", h, err)
	}
	if n := len(c.All()); n != len(All())+1 {
		t.Errorf("merged catalog has %d GPUs, want %d", n, len(All())+1)
	}
	// The built-in catalog is untouched.
	if b, _ := Lookup("h100"); b.Memory != 81559*units.MiB {
		t.Errorf("built-in h100 changed to %v", b.Memory)
	}
}

func TestLoadFileJSONList(t *testing.T) {
	p := writeFile(t, "gpus.json", `[{"name": "X1", "vendor": "AMD", "memory_bytes": 1073741824, "arch": "cdna9"}]`)
	c, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.Lookup("x1")
	if err != nil || g.Memory != units.GiB || g.Vendor != "amd" {
		t.Fatalf("x1 = %+v, %v", g, err)
	}
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"empty", "", "empty file"},
		{"unknown key", `[{"name": "X", "vendor": "nvidia", "memory_mib": 1, "memroy_mib": 2}]`, `unknown field "memroy_mib"`},
		{"no memory", `[{"name": "X", "vendor": "nvidia"}]`, "no memory"},
		{"two memories", `[{"name": "X", "vendor": "nvidia", "memory_mib": 1, "memory": "1GiB"}]`, "only one"},
		{"negative", `[{"name": "X", "vendor": "nvidia", "memory_mib": -5}]`, "out of range"},
		{"huge", `[{"name": "X", "vendor": "nvidia", "memory_bytes": 9223372036854775807}]`, "out of range"},
		{"ambiguous unit", `[{"name": "X", "vendor": "nvidia", "memory": "80G"}]`, "ambiguous"},
		{"vendor", `[{"name": "X", "vendor": "acme", "memory_mib": 1}]`, `"vendor"`},
		{"no name", `[{"vendor": "nvidia", "memory_mib": 1}]`, `"name"`},
		{"bad cc", `[{"name": "X", "vendor": "nvidia", "memory_mib": 1, "compute_capability": "nine"}]`, "compute_capability"},
		{"alias clash", `[{"name": "X", "vendor": "nvidia", "memory_mib": 1, "aliases": ["q"]}, {"name": "Y", "vendor": "nvidia", "memory_mib": 1, "aliases": ["Q"]}]`, "same file"},
		{"not a list", `{"name": "X"}`, "unknown field"},
		{"yaml garbage", "name: [unclosed", "not JSON or YAML"},
		{"cuda above total", `[{"name": "X", "vendor": "nvidia", "memory_mib": 100, "cuda_memory": "1GiB"}]`, "cuda_memory"},
		{"two cuda totals", `[{"name": "X", "vendor": "nvidia", "memory_mib": 100, "cuda_memory": "1MiB", "cuda_memory_bytes": 5}]`, "only one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, "site.json", tt.content)
			_, err := LoadFile(p)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "site.json") {
				t.Errorf("error %q does not name the file and contain %q", err, tt.want)
			}
		})
	}
}

func TestLoadFileMissing(t *testing.T) {
	if _, err := LoadFile(filepath.Join(t.TempDir(), "nope.json")); err == nil {
		t.Fatal("no error for a missing file")
	}
}

func TestNewRejectsDuplicates(t *testing.T) {
	g := GPU{Name: "A", Vendor: "nvidia", Memory: units.GiB}
	if _, err := New([]GPU{g, g}); err == nil {
		t.Error("duplicate names accepted")
	}
	h := GPU{Name: "B", Vendor: "nvidia", Memory: units.GiB, Aliases: []string{"a"}}
	if _, err := New([]GPU{g, h}); err == nil {
		t.Error("alias equal to another GPU's name accepted")
	}
}

func TestDataTypes(t *testing.T) {
	p := writeFile(t, "data_types.json", `{"FP6": 0.75, "q4_k": 0.5625, "fp32": 4}`)
	got, err := LoadDataTypes(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []DataType{{"fp32", 4}, {"fp6", 0.75}, {"q4_k", 0.5625}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("got[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if got[2].Bits() != 4.5 {
		t.Errorf("q4_k bits = %v, want 4.5", got[2].Bits())
	}
}

func TestDataTypesErrors(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"zero", `{"x": 0}`, `"x"`},
		{"negative", `{"x": -1}`, `"x"`},
		{"too wide", `{"x": 17}`, `"x"`},
		{"string", `{"x": "wide"}`, "data_types.json"},
		{"list", `[1, 2]`, "want an object"},
		{"case clash", `{"X": 1, "x": 2}`, "same data type"},
		{"empty name", `{" ": 1}`, "empty data type name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDataTypes([]byte(tt.content), "data_types.json")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(builtinJSON)
	f.Add([]byte(`gpus: [{name: x, vendor: nvidia, memory: 1GiB}]`))
	f.Add([]byte(`[{"name": "X", "vendor": "amd", "memory_bytes": 1}]`))
	f.Add([]byte(`{"gpus": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		gs, err := Parse(data, "fuzz.json")
		if err != nil {
			return
		}
		for _, g := range gs {
			if g.Memory <= 0 || g.Memory > maxMemory {
				t.Fatalf("accepted memory %d", g.Memory)
			}
			if normalize(g.Name) == "" {
				t.Fatalf("accepted name %q", g.Name)
			}
		}
		c, err := Default().Merge(gs)
		if err != nil {
			return
		}
		for _, g := range gs {
			if _, err := c.Lookup(g.Name); err != nil {
				t.Fatalf("merged GPU %q not found: %v", g.Name, err)
			}
		}
	})
}

func FuzzParseDataTypes(f *testing.F) {
	f.Add([]byte(`{"fp6": 0.75}`))
	f.Add([]byte(`fp6: 0.75`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := ParseDataTypes(data, "fuzz.json")
		if err != nil {
			return
		}
		for _, d := range ds {
			if !(d.BytesPerParam > 0 && d.BytesPerParam <= maxBytesPerParam) || d.Name == "" {
				t.Fatalf("accepted %+v", d)
			}
		}
	})
}

func TestJSONOutputLoadsBack(t *testing.T) {
	data, err := json.Marshal(All())
	if err != nil {
		t.Fatal(err)
	}
	gs, err := Parse(data, "gpus.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gs, All()) {
		t.Error("the JSON of All() does not parse back to the same GPUs")
	}
}
