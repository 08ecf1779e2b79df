package model

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// catalogModels parses every embedded config, failing the test on error.
func catalogModels(t testing.TB) map[string]*Model {
	t.Helper()
	files, err := fs.Glob(catalogFS, "catalog/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no embedded catalog configs: %v", err)
	}
	out := map[string]*Model{}
	for _, f := range files {
		m, err := loadCatalogFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[m.ID] = m
	}
	return out
}

func TestCatalogInvariants(t *testing.T) {
	for id, m := range catalogModels(t) {
		t.Run(id, func(t *testing.T) {
			for _, w := range m.Warnings {
				if !strings.Contains(w, "not set: using the architecture's default") {
					t.Errorf("unexpected warning on a supported model: %s", w)
				}
			}
			checkInvariants(t, m)
		})
	}
}

// checkInvariants checks what must hold for any parsed model.
func checkInvariants(t *testing.T, m *Model) {
	t.Helper()
	total := m.TotalParams()
	if total <= 0 {
		t.Fatalf("TotalParams = %d, want > 0", total)
	}
	var sumMods, sumComp int64
	for _, mod := range m.Modules {
		if mod.Instances <= 0 || mod.Each <= 0 || mod.Each*int64(mod.Instances) != mod.Params {
			t.Errorf("%s: Each %d × Instances %d != Params %d", mod.Name, mod.Each, mod.Instances, mod.Params)
		}
		if mod.Kind == KindLinear && (mod.In <= 0 || mod.Out <= 0 || mod.Short == "") {
			t.Errorf("%s: Linear without in/out/short name: %+v", mod.Name, mod)
		}
		if mod.Expert && (mod.Experts <= 0 || mod.Instances%mod.Experts != 0) {
			t.Errorf("%s: expert group with Experts %d, Instances %d", mod.Name, mod.Experts, mod.Instances)
		}
		if mod.Layer >= 0 && mod.Instances != mod.Layers*max(mod.Experts, 1) {
			t.Errorf("%s: Instances %d != Layers %d × Experts %d", mod.Name, mod.Instances, mod.Layers, mod.Experts)
		}
		if m.Text.TiedEmbeddings && mod.Component == CompLMHead && mod.Kind == KindLinear && mod.Out == m.Text.Vocab {
			t.Errorf("tied model has an output matrix %s", mod.Name)
		}
		sumMods += mod.Params
	}
	for _, c := range m.ByComponent() {
		sumComp += c.Params
	}
	if sumMods != total || sumComp != total {
		t.Errorf("total %d, sum of modules %d, sum of components %d", total, sumMods, sumComp)
	}
	if a := m.ActiveParams(); a <= 0 || a > total || (m.Text.MoE == nil && a != total) || (m.Text.MoE != nil && a >= total) {
		t.Errorf("ActiveParams %d vs TotalParams %d (MoE %v)", a, total, m.Text.MoE != nil)
	}
	var stacks int64
	for _, st := range []string{StackText, StackEncoder, StackVision, StackProjector} {
		p := m.StackParams(st)
		stacks += p
		sum := m.OutsideLayerParams(st)
		for i := 0; i < 1<<12; i++ {
			sum += m.LayerParams(st, i)
		}
		if sum != p {
			t.Errorf("stack %s: layers + outside = %d, StackParams = %d", st, sum, p)
		}
	}
	if stacks != total {
		t.Errorf("sum over stacks %d != total %d", stacks, total)
	}
	checkStack(t, "text", &m.Text)
	if m.Encoder != nil {
		checkStack(t, "encoder", m.Encoder)
	}
	if m.Vision != nil {
		checkStack(t, "vision", &m.Vision.Stack)
		if m.Vision.TokensPerImage <= 0 || m.Vision.PatchSize <= 0 {
			t.Errorf("vision: tokens per image %d, patch %d", m.Vision.TokensPerImage, m.Vision.PatchSize)
		}
	}
}

func checkStack(t *testing.T, name string, s *Stack) {
	t.Helper()
	if s.Layers <= 0 || s.Hidden <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.HeadDim <= 0 {
		t.Errorf("%s: non-positive dimension: %+v", name, s)
	}
	if s.KVHeads > 0 && s.Heads%s.KVHeads != 0 {
		t.Errorf("%s: KV heads %d do not divide heads %d", name, s.KVHeads, s.Heads)
	}
	if len(s.LayerTypes) != s.Layers {
		t.Errorf("%s: %d layer types for %d layers", name, len(s.LayerTypes), s.Layers)
	}
	for i, lt := range s.LayerTypes {
		if lt.Attention == "" {
			t.Errorf("%s: layer %d has no attention kind", name, i)
		}
		if lt.MoE && s.MoE == nil {
			t.Errorf("%s: layer %d is MoE but the stack has no MoE", name, i)
		}
	}
	if s.MoE != nil && (s.MoE.ExpertsPerToken > s.MoE.Experts || s.MoE.ExpertFFN <= 0) {
		t.Errorf("%s: bad MoE %+v", name, s.MoE)
	}
}

func TestCatalogEntries(t *testing.T) {
	entries := Catalog()
	files, _ := fs.Glob(catalogFS, "catalog/*.json")
	if len(entries) != len(files) {
		t.Fatalf("Catalog() has %d entries for %d files", len(entries), len(files))
	}
	for _, e := range entries {
		if len(e.Aliases) == 0 {
			t.Errorf("%s has no alias", e.ID)
		}
		if e.TotalParams <= 0 || e.ActiveParams <= 0 || e.ActiveParams > e.TotalParams || e.ModelType == "" || e.Architecture == "" {
			t.Errorf("bad entry %+v", e)
		}
	}
}

func TestInCatalog(t *testing.T) {
	for _, e := range Catalog() {
		for _, name := range append([]string{e.ID, strings.ToUpper(e.ID)}, e.Aliases...) {
			if !InCatalog(name) {
				t.Errorf("InCatalog(%q) = false", name)
			}
		}
	}
	for _, name := range []string{"", "all-linear", "q_proj", "meta-llama/Llama-2-7b", "org/name", "llama3-8b-instruct"} {
		_, err := Lookup(name)
		if got := InCatalog(name); got != (err == nil) {
			t.Errorf("InCatalog(%q) = %v, Lookup error %v", name, got, err)
		}
	}
}

func TestExactCatalogFileRefuses(t *testing.T) {
	for _, id := range []string{"", "meta-llama", "/Llama-2-7b-hf", "meta-llama/", "meta-llama/Llama-2-7b-hf/x",
		"../catalog/meta-llama__Llama-2-7b-hf", "meta-llama/../x", "meta-llama/Llama-2-7b-hf.json", "meta__llama/x", "meta-llama/llama-2-7b-hf"} {
		if got, ok := exactCatalogFile(id); ok {
			t.Errorf("exactCatalogFile(%q) = %q", id, got)
		}
	}
}

// TestCatalogIndexListsEveryFile checks that the index holds every config
// in the catalog folder on disk, so a file added there needs no other step.
func TestCatalogIndexListsEveryFile(t *testing.T) {
	idx, err := catalogIndex()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.ReadDir("catalog")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range dir {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		n++
		want := "catalog/" + e.Name()
		if got := idx[strings.ToLower(fileID(e.Name()))]; got != want {
			t.Errorf("index entry for %s = %q, want %q", e.Name(), got, want)
		}
		// The id as spelled opens its file without the index; other
		// spellings go through it.
		id := fileID(e.Name())
		for _, ref := range []string{id, strings.ToUpper(id), " " + strings.ToLower(id) + " "} {
			if got, err := catalogFile(ref); err != nil || got != want {
				t.Errorf("catalogFile(%q) = %q, %v; want %q", ref, got, err, want)
			}
		}
		if got, ok := exactCatalogFile(id); !ok || got != want {
			t.Errorf("exactCatalogFile(%q) = %q, %v; want %q", id, got, ok, want)
		}
	}
	if n == 0 || len(idx) != n {
		t.Errorf("index has %d entries for %d files in catalog/", len(idx), n)
	}
}

func TestAliases(t *testing.T) {
	idx, err := catalogIndex()
	if err != nil {
		t.Fatal(err)
	}
	for alias, id := range aliases {
		if alias != strings.ToLower(alias) {
			t.Errorf("alias %q is not lower case", alias)
		}
		if _, ok := idx[strings.ToLower(id)]; !ok {
			t.Errorf("alias %q points to %q, not in the catalog", alias, id)
		}
		if _, clash := idx[alias]; clash {
			t.Errorf("alias %q is also a catalog id", alias)
		}
		m, err := Lookup(strings.ToUpper(alias))
		if err != nil || m.ID != id {
			t.Errorf("Lookup(%q) = %v, %v; want %s", strings.ToUpper(alias), m, err, id)
		}
	}
}

func TestCatalogConfig(t *testing.T) {
	data, err := CatalogConfig("Llama2-7B")
	if err != nil {
		t.Fatal(err)
	}
	want, err := catalogFS.ReadFile("catalog/meta-llama__Llama-2-7b-hf.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(want) {
		t.Error("CatalogConfig(llama2-7b) is not the embedded file")
	}
	if _, err := CatalogConfig("no/such-model"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown name: err = %v, want ErrNotFound", err)
	}
}
