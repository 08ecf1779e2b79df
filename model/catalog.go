package model

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gpumem/gpumem/internal/fsutil"
)

// catalogFS holds the real config.json of every catalog model, named
// org__name.json after the Hub id.
//
//go:embed catalog/*.json
var catalogFS embed.FS

// CatalogEntry describes one model of the embedded catalog.
type CatalogEntry struct {
	// ID is the Hugging Face Hub id, e.g. "meta-llama/Llama-2-7b-hf".
	ID string `json:"id"`
	// Aliases are the short names that also select it, e.g. "llama2-7b".
	Aliases []string `json:"aliases,omitempty"`
	// ModelType is config.json's model_type.
	ModelType string `json:"model_type"`
	// Architecture is architectures[0] of config.json.
	Architecture string `json:"architecture"`
	// TotalParams is the parameter count (as [Model.TotalParams]).
	TotalParams int64 `json:"total_params"`
	// ActiveParams is the per-token parameter count (as [Model.ActiveParams]).
	ActiveParams int64 `json:"active_params"`
}

// catalogIndex maps a lower-case id to its file name, built once from the
// embedded folder's listing, so a config added to model/catalog is found
// with no other change. fs.ReadDir on an embed.FS returns the stored,
// sorted entries; fs.Glob would match a pattern against each name, which
// cost ten times the lookup itself at the start of every command.
var catalogIndex = sync.OnceValues(func() (map[string]string, error) {
	entries, err := fs.ReadDir(catalogFS, "catalog")
	if err != nil {
		return nil, err
	}
	idx := make(map[string]string, len(entries))
	for _, e := range entries {
		if name := e.Name(); !e.IsDir() && strings.HasSuffix(name, ".json") {
			idx[strings.ToLower(fileID(name))] = "catalog/" + name
		}
	}
	return idx, nil
})

// fileID turns "catalog/org__name.json" into "org/name".
func fileID(file string) string {
	return strings.Replace(strings.TrimSuffix(path.Base(file), ".json"), "__", "/", 1)
}

// Catalog lists the embedded models, sorted by id. The caller may modify
// the returned slice.
func Catalog() []CatalogEntry {
	return slices.Clone(catalogEntries())
}

// catalogEntries parses and counts every catalog config once. A config
// that fails to parse is a bug caught by the package tests, and is
// skipped here.
var catalogEntries = sync.OnceValue(func() []CatalogEntry {
	idx, _ := catalogIndex()
	byID := map[string][]string{}
	for a, id := range aliases {
		byID[strings.ToLower(id)] = append(byID[strings.ToLower(id)], a)
	}
	out := make([]CatalogEntry, 0, len(idx))
	for key, file := range idx {
		m, err := loadCatalogFile(file)
		if err != nil {
			continue
		}
		al := byID[key]
		sort.Strings(al)
		out = append(out, CatalogEntry{ID: m.ID, Aliases: al, ModelType: m.ModelType,
			Architecture: m.Architecture, TotalParams: m.TotalParams(), ActiveParams: m.ActiveParams()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
})

// loadCatalogFile parses one embedded config; the model's ID is its Hub id.
func loadCatalogFile(file string) (*Model, error) {
	data, err := catalogFS.ReadFile(file)
	if err != nil {
		return nil, err
	}
	id := fileID(file)
	m, err := ParseFile(id+"/"+ConfigFile, data)
	if err != nil {
		return nil, err
	}
	m.ID = id
	return m, nil
}

// Lookup returns the catalog model named by a Hub id (case-insensitive,
// e.g. "meta-llama/llama-2-7b-hf") or a short alias ("llama2-7b"). A name
// not in the catalog returns an error wrapping [ErrNotFound].
func Lookup(name string) (*Model, error) {
	file, err := catalogFile(name)
	if err != nil {
		return nil, err
	}
	return loadCatalogFile(file)
}

// CatalogConfig returns the embedded config.json of a catalog model, named
// by Hub id (case-insensitive) or alias, byte for byte as shipped. The
// synthetic probe hands these bytes to transformers to build the model. A
// name not in the catalog returns an error wrapping [ErrNotFound].
func CatalogConfig(name string) ([]byte, error) {
	file, err := catalogFile(name)
	if err != nil {
		return nil, err
	}
	return catalogFS.ReadFile(file)
}

// InCatalog reports whether name is a catalog id (in any case) or alias.
// Unlike [Lookup] it parses nothing and builds no suggestions, so it is
// cheap for telling model names from other words.
func InCatalog(name string) bool {
	key := strings.ToLower(strings.TrimSpace(name))
	if _, ok := aliases[key]; ok {
		return true
	}
	if _, ok := exactCatalogFile(strings.TrimSpace(name)); ok {
		return true
	}
	idx, err := catalogIndex()
	if err != nil {
		return false
	}
	_, ok := idx[key]
	return ok
}

// catalogFile resolves an id or alias to its embedded file.
func catalogFile(name string) (string, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	if id, ok := aliases[key]; ok {
		// An alias names the id as the catalog spells it, so its file opens
		// directly, without the index (and so do ids spelled that way).
		name = id
		key = strings.ToLower(id)
	}
	if file, ok := exactCatalogFile(strings.TrimSpace(name)); ok {
		return file, nil
	}
	idx, err := catalogIndex()
	if err != nil {
		return "", fmt.Errorf("read catalog: %w", err)
	}
	file, ok := idx[key]
	if !ok {
		if near := Suggest(name, 3); len(near) > 0 {
			return "", fmt.Errorf("%q is not in the built-in catalog (closest: %s): %w", name, strings.Join(near, ", "), ErrNotFound)
		}
		return "", fmt.Errorf("%q is not in the built-in catalog (see the catalog list for ids and aliases): %w", name, ErrNotFound)
	}
	return file, nil
}

// exactCatalogFile returns the file of a Hub id spelled as in the catalog
// ("meta-llama/Llama-2-7b-hf"), found by name: building the index of every
// file costs more than the rest of a catalog lookup.
func exactCatalogFile(id string) (string, bool) {
	org, name, ok := strings.Cut(id, "/")
	if !ok || org == "" || name == "" || strings.ContainsAny(name, "/\\") || strings.Contains(org, "__") {
		return "", false
	}
	file := "catalog/" + org + "__" + name + ".json"
	if !fs.ValidPath(file) {
		return "", false
	}
	if st, err := fs.Stat(catalogFS, file); err != nil || st.IsDir() {
		return "", false
	}
	return file, true
}

// Load resolves ref to a model: a catalog id or alias, a path to a
// config.json, or a path to a model folder holding config.json (and
// optionally preprocessor_config.json). A Hub id that is not in the
// catalog returns an error wrapping [ErrNotFound]; fetching it is the
// caller's job.
func Load(ref string) (*Model, error) {
	if ref == "" {
		return nil, fmt.Errorf("load model: empty name: %w", ErrNotFound)
	}
	m, err := Lookup(ref)
	if err == nil || !errors.Is(err, ErrNotFound) {
		return m, err
	}
	st, statErr := os.Stat(ref)
	switch {
	case statErr == nil && st.IsDir():
		abs, _ := filepath.Abs(ref)
		m, err := ParseFS(fsutil.DirFS(abs), ".")
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", ref, err)
		}
		m.ID = ref
		return m, nil
	case statErr == nil:
		data, err := fsutil.ReadFile(ref, MaxConfigSize)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", ref, err)
		}
		m, err := ParseFile(ref, data)
		if err != nil {
			return nil, err
		}
		return m, nil
	case looksLikePath(ref):
		return nil, fmt.Errorf("load %s: %w", ref, statErr)
	}
	return nil, err
}

// looksLikePath reports whether ref is meant as a file path rather than a
// Hub id ("org/name" has exactly one slash and no path punctuation).
func looksLikePath(ref string) bool {
	return strings.HasPrefix(ref, ".") || strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "~") ||
		strings.HasSuffix(ref, ".json") || strings.Count(ref, "/") > 1 || strings.Contains(ref, `\`)
}
