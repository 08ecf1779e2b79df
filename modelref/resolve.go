package modelref

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/gpumem/gpumem/hub"
	"github.com/gpumem/gpumem/internal/fsutil"
	"github.com/gpumem/gpumem/model"
)

// MaxConfigBytes bounds a config file read from this machine. Release
// configs are a few KB; the largest seen, with thousands of id2label
// entries, are around 1 MB.
const MaxConfigBytes = 16 << 20

// Source is a resolved model: where it was read from, the config.json
// as read, and the model it describes.
type Source struct {
	// Location is where the model was read from. For a stand-in it is the
	// stand-in's location, with Ref the reference as given.
	Location
	// Model is the parsed model. Its Warnings end with Notes.
	Model *model.Model `json:"-"`
	// Config is the config.json the model was parsed from, byte for byte.
	Config []byte `json:"-"`
	// Commit is the Hub commit the files come from (Hub), "" when unknown.
	Commit string `json:"commit,omitempty"`
	// Checkpoint is what the safetensors headers say, with
	// [Options.Checkpoint]; nil otherwise or without safetensors weights.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// Notes say how the reference was read when not literally (a
	// stand-in for a model that could not be read, and why) and where
	// the checkpoint's count differs from config.json's.
	Notes []string `json:"notes,omitempty"`
}

// note records how the reference was read, on the source and its model.
func (s *Source) note(format string, args ...any) *Source {
	n := fmt.Sprintf(format, args...)
	s.Notes = append(s.Notes, n)
	s.Model.Warnings = append(s.Model.Warnings, n)
	return s
}

// Resolve reads the model ref names, as [Locate] decides, with the
// stand-ins of the package documentation unless [Options.Exact] is set.
func Resolve(ctx context.Context, ref string, o Options) (*Source, error) {
	loc, err := Locate(ref, o)
	if err != nil {
		return o.recoverLocate(ctx, loc, err)
	}
	src, err := o.load(ctx, loc)
	if err != nil && loc.Kind == Hub {
		return o.recoverHub(loc, err)
	}
	if err == nil && o.Checkpoint {
		err = o.readCheckpoint(ctx, src)
	}
	if err != nil {
		return nil, err
	}
	return src, nil
}

// load reads a located model.
func (o Options) load(ctx context.Context, loc Location) (*Source, error) {
	switch loc.Kind {
	case Catalog:
		return loadCatalog(loc)
	case File:
		data, err := fsutil.ReadFile(loc.Path, MaxConfigBytes)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", loc.Path, err)
		}
		m, err := model.ParseFile(loc.Path, data)
		if err != nil {
			return nil, err
		}
		return &Source{Location: loc, Model: m, Config: data}, nil
	case Folder:
		return loadFolder(loc)
	case Hub:
		return o.loadHub(ctx, loc)
	}
	return nil, fmt.Errorf("%s: unknown location kind %q", loc.Ref, loc.Kind)
}

// loadCatalog reads a catalog model; loc.Hub.Repo is its id.
func loadCatalog(loc Location) (*Source, error) {
	m, err := model.Lookup(loc.Hub.Repo)
	if err != nil {
		return nil, err
	}
	data, err := model.CatalogConfig(loc.Hub.Repo)
	if err != nil {
		return nil, err
	}
	return &Source{Location: loc, Model: m, Config: data}, nil
}

// loadFolder reads config.json, and preprocessor_config.json when
// present, from a model folder.
func loadFolder(loc Location) (*Source, error) {
	files := memFS{}
	for _, name := range []string{model.ConfigFile, model.PreprocessorFile} {
		data, err := fsutil.ReadFile(filepath.Join(loc.Path, name), MaxConfigBytes)
		switch {
		case err == nil:
			files[name] = data
		case name == model.PreprocessorFile && errors.Is(err, fs.ErrNotExist):
			// Most models have none.
		default:
			return nil, fmt.Errorf("load %s: %w", loc.Path, err)
		}
	}
	m, err := model.ParseFS(files, ".")
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", loc.Path, err)
	}
	m.ID = loc.Path
	return &Source{Location: loc, Model: m, Config: files[model.ConfigFile]}, nil
}

// errNoHub is the failure of a Hub id when no Hub client is given.
var errNoHub = errors.New("no Hub client")

// loadHub fetches a Hub model's config files.
func (o Options) loadHub(ctx context.Context, loc Location) (*Source, error) {
	h := o.hub()
	if h == nil {
		return nil, errNoHub
	}
	snap, err := h.FetchConfig(ctx, loc.Hub)
	if err != nil {
		return nil, err
	}
	m, err := model.ParseFS(snap, ".")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc.Hub, err)
	}
	m.ID = loc.Hub.String()
	m.Warnings = append(m.Warnings, snap.Warnings...)
	return &Source{Location: loc, Model: m, Config: snap.Files[hub.ConfigFile], Commit: snap.Commit}, nil
}

// memFS is config files read into memory, as an fs.FS for
// [model.ParseFS].
type memFS map[string][]byte

// Open opens a file; the root is the only folder.
func (m memFS) Open(name string) (fs.File, error) {
	if name == "." {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	data, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{name: name, r: bytes.NewReader(data), size: int64(len(data))}, nil
}

// ReadFile returns a file's content.
func (m memFS) ReadFile(name string) ([]byte, error) {
	data, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return bytes.Clone(data), nil
}

type memFile struct {
	name string
	r    *bytes.Reader
	size int64
}

func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{f}, nil }
func (f *memFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *memFile) Close() error               { return nil }

type memInfo struct{ f *memFile }

func (i memInfo) Name() string       { return i.f.name }
func (i memInfo) Size() int64        { return i.f.size }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
