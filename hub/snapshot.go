package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"time"
)

// Config file names fetched by [Client.FetchConfig].
const (
	ConfigFile       = "config.json"
	PreprocessorFile = "preprocessor_config.json"
)

// Snapshot holds the configuration files of one model revision.
type Snapshot struct {
	// Ref is the requested repository and revision.
	Ref Ref
	// Commit is the commit hash the files come from; "" when unknown.
	Commit string
	// Files maps file names to contents: config.json, and
	// preprocessor_config.json when the repository has one.
	Files map[string][]byte
	// Warnings are non-fatal notes from fetching.
	Warnings []string
}

// FetchConfig fetches config.json of ref, and preprocessor_config.json
// when the repository has one (a VLM's image size lives there). The
// second file is read at the commit the first resolved to, so both come
// from the same revision even if the branch moves in between.
func (c *Client) FetchConfig(ctx context.Context, ref Ref) (*Snapshot, error) {
	cfg, err := c.Get(ctx, ref, ConfigFile)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{Ref: ref, Commit: cfg.Commit, Files: map[string][]byte{ConfigFile: cfg.Data}}
	s.warn(cfg.Warning)
	pinned := ref
	if cfg.Commit != "" {
		pinned.Revision = cfg.Commit
	}
	pre, err := c.Get(ctx, pinned, PreprocessorFile)
	switch {
	case err == nil:
		s.Files[PreprocessorFile] = pre.Data
		s.warn(pre.Warning)
	case errors.Is(err, fs.ErrNotExist):
		// Most models have none.
	case errors.Is(err, ErrOffline):
		s.warn(fmt.Sprintf("%s is not in the cache; image sizes use config defaults", PreprocessorFile))
	default:
		return nil, err
	}
	return s, nil
}

func (s *Snapshot) warn(w string) {
	if w != "" {
		s.Warnings = append(s.Warnings, w)
	}
}

// Open opens a file of the snapshot; with it a Snapshot is an [fs.FS]
// whose root holds the fetched files, for parsers that read a model folder.
func (s *Snapshot) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return &memDir{s: s}, nil
	}
	data, ok := s.Files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{info: memInfo{name: path.Base(name), size: int64(len(data))}, r: bytes.NewReader(data)}, nil
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

type memFile struct {
	info memInfo
	r    *bytes.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *memFile) Close() error               { return nil }

type memDir struct {
	s    *Snapshot
	read bool
}

func (d *memDir) Stat() (fs.FileInfo, error) { return memInfo{name: ".", dir: true}, nil }
func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: ".", Err: fs.ErrInvalid}
}
func (d *memDir) Close() error { return nil }

// ReadDir lists the snapshot's files (all at once).
func (d *memDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if d.read {
		if n > 0 {
			return nil, io.EOF
		}
		return nil, nil
	}
	d.read = true
	var out []fs.DirEntry
	for name, data := range d.s.Files {
		out = append(out, fs.FileInfoToDirEntry(memInfo{name: name, size: int64(len(data))}))
	}
	return out, nil
}
