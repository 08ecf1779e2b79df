package modelref

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
)

// FuzzLocate checks the reference parser: any reference is located
// without a panic, never on the disk without LocalPaths, a reference
// spelt as a path is refused as one, and what is located can be read
// (a catalog model loads, a Hub id is valid). Resolve without a Hub or
// local paths reads nothing outside the catalog either.
func FuzzLocate(f *testing.F) {
	for _, s := range []string{"llama3-8b", "org/name", "org/name@rev", "org/name@refs/pr/1", "llama3-8b@main",
		"./x", "/a/b", `C:\x`, "a/b/c", "~/m", "m.gguf", "x/config.json", "", "@", "x@", "org/", "/", "org/na..me",
		"Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", "İ:x", " llama3-8b "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		if len(ref) > 1024 {
			return
		}
		loc, err := Locate(ref, Options{})
		spelt := parse(strings.TrimSpace(ref))
		if err != nil {
			if spelt.path && !errors.Is(err, ErrLocalPath) {
				t.Fatalf("Locate(%q): %v, want ErrLocalPath for a path", ref, err)
			}
			return
		}
		switch loc.Kind {
		case Catalog:
			if _, err := model.Lookup(loc.Hub.Repo); err != nil {
				t.Fatalf("Locate(%q) = catalog %s, which does not load: %v", ref, loc.Hub.Repo, err)
			}
		case Hub:
			if err := loc.Hub.Validate(); err != nil || spelt.path {
				t.Fatalf("Locate(%q) = Hub %s: %v", ref, loc.Hub, err)
			}
		default:
			t.Fatalf("Locate(%q) = %s %q without LocalPaths", ref, loc.Kind, loc.Path)
		}
		src, err := Resolve(context.Background(), ref, Options{})
		if err == nil && (src.Kind != Catalog || src.Model == nil || len(src.Config) == 0) {
			t.Fatalf("Resolve(%q) without a Hub = %+v", ref, src.Location)
		}
	})
}
