package safetensors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/gpumem/gpumem/internal/fsutil"
)

// File is one file of a checkpoint opened for random access: a local
// file, or a remote one read with HTTP Range requests.
type File interface {
	io.ReaderAt
	io.Closer
	// Size is the file's length in bytes.
	Size() int64
}

// Opener opens a checkpoint file by its plain name ("model.safetensors",
// "model-00001-of-00004.safetensors", "model.safetensors.index.json").
// A missing file is reported with an error wrapping [fs.ErrNotExist].
type Opener func(ctx context.Context, name string) (File, error)

// Checkpoint is the header inventory of a whole (possibly sharded) checkpoint.
type Checkpoint struct {
	// Index is the parsed index of a sharded checkpoint; nil for a single file.
	Index *Index `json:"index,omitempty"`
	// Files are the headers of each file, in shard order.
	Files []FileHeader `json:"files"`
	// Tensors are all tensors of all files.
	Tensors []Tensor `json:"-"`
	// Warnings note inconsistencies that do not stop the reading.
	Warnings []string `json:"warnings,omitempty"`
}

// FileHeader is the header of one checkpoint file.
type FileHeader struct {
	Name   string  `json:"name"`
	Header *Header `json:"header"`
}

// Options tune [ReadCheckpoint]. The zero value is ready to use.
type Options struct {
	// Concurrency is how many shard headers are read at once (default 4).
	Concurrency int
	// Progress, when set, is called after each shard with the number of
	// shards read so far and the total. It may be called concurrently.
	Progress func(done, total int)
}

// defaultConcurrency keeps a handful of Range requests in flight: enough
// to hide latency on checkpoints of 100+ shards without hammering the Hub.
const defaultConcurrency = 4

// ReadCheckpoint reads the headers of a checkpoint: the shards listed by
// model.safetensors.index.json when it exists, else model.safetensors.
// Only headers are read, never tensor data.
func ReadCheckpoint(ctx context.Context, open Opener, opts Options) (*Checkpoint, error) {
	idx, err := readIndex(ctx, open)
	if err != nil {
		return nil, err
	}
	names := []string{SingleName}
	if idx != nil {
		names = idx.Shards()
	}
	files, err := readHeaders(ctx, open, names, opts)
	if err != nil {
		return nil, err
	}
	ck := &Checkpoint{Index: idx, Files: files}
	for _, f := range files {
		ck.Tensors = append(ck.Tensors, f.Header.Tensors...)
	}
	ck.Warnings = ck.check()
	return ck, nil
}

// readIndex returns the parsed index, or nil when the checkpoint has none.
func readIndex(ctx context.Context, open Opener) (*Index, error) {
	f, err := open(ctx, IndexName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", IndexName, err)
	}
	defer f.Close()
	const maxIndex = 64 << 20 // the largest real indexes are a few MiB
	if f.Size() > maxIndex {
		return nil, fmt.Errorf("%s: %d bytes exceeds the %d-byte limit", IndexName, f.Size(), maxIndex)
	}
	data := make([]byte, f.Size())
	if err := readFull(f, data, 0); err != nil {
		return nil, fmt.Errorf("read %s: %w", IndexName, err)
	}
	return ParseIndex(data)
}

// readHeaders reads the header of each named file, a few at a time. The
// first failure stops the rest: no shard is opened after it, reads in
// flight are cancelled, and the error is that one failure, not one line
// per shard (a 100,000-shard index made a 12 MB message, and a missing
// shard of 3,000 still cost 3,000 requests).
func readHeaders(ctx context.Context, open Opener, names []string, opts Options) ([]FileHeader, error) {
	n := opts.Concurrency
	if n <= 0 {
		n = defaultConcurrency
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	out := make([]FileHeader, len(names))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	done := 0
	for i, name := range names {
		sem <- struct{}{}
		if ctx.Err() != nil {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = FileHeader{Name: name}
			h, err := readOne(ctx, open, name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
					cancel(err)
				}
				return
			}
			out[i].Header = h
			done++
			if opts.Progress != nil {
				opts.Progress(done, len(names))
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

func readOne(ctx context.Context, open Opener, name string) (*Header, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	f, err := open(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	defer f.Close()
	h, err := ReadHeader(f, f.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return h, nil
}

// check compares the index with the shards' contents.
func (ck *Checkpoint) check() []string {
	var warns []string
	seen := map[string]string{}
	for _, f := range ck.Files {
		for _, t := range f.Header.Tensors {
			if prev, ok := seen[t.Name]; ok {
				warns = append(warns, fmt.Sprintf("tensor %q is stored in both %s and %s", t.Name, prev, f.Name))
			}
			seen[t.Name] = f.Name
		}
	}
	if ck.Index == nil {
		return warns
	}
	missing := 0
	for name, shard := range ck.Index.WeightMap {
		if seen[name] != shard {
			missing++
		}
	}
	if missing > 0 {
		warns = append(warns, fmt.Sprintf("%d tensors listed in %s are not in the shard it names", missing, IndexName))
	}
	var total int64
	for _, t := range ck.Tensors {
		total = satAdd(total, t.Bytes)
	}
	if ck.Index.TotalSize != 0 && ck.Index.TotalSize != total {
		warns = append(warns, fmt.Sprintf("%s: metadata.total_size is %d bytes, the shards hold %d", IndexName, ck.Index.TotalSize, total))
	}
	return warns
}

// DirOpener opens checkpoint files inside a local folder. Names are
// checked with [CheckFileName] so none escapes the folder.
func DirOpener(dir string) Opener {
	return func(_ context.Context, name string) (File, error) {
		if err := CheckFileName(name); err != nil {
			return nil, err
		}
		return OpenFile(filepath.Join(dir, name))
	}
}

// OpenFile opens a local file as a [File].
func OpenFile(path string) (File, error) {
	f, err := fsutil.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: is a directory", path)
	}
	return &localFile{File: f, size: st.Size()}, nil
}

type localFile struct {
	*os.File
	size int64
}

func (f *localFile) Size() int64 { return f.size }
