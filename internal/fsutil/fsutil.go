// Package fsutil reads local files with a bound on their size, so that a
// wrong path (a checkpoint, a disk image, a device, a pipe) fails at once
// instead of filling memory or waiting forever. Every file the tool reads
// — model configs, job files, training configs, constants and calibration
// profiles, GPU catalogs, measurements, cached Hub files and refs, token
// files, checkpoint headers — is opened through [Open] (or read whole
// through [ReadFile] and [ReadFS]), which accept regular files only.
//
// A size check with stat alone is not enough: stat reports 0 bytes for
// /dev/zero, a FIFO and most /proc files, and opening a FIFO for reading
// blocks until a writer appears. So the mode is checked before the file
// is opened (a device is never opened), the open does not block
// (O_NONBLOCK where the system has it), the mode is checked again on the
// open file (the path may have changed in between), and the read itself
// stops one byte past the limit.
package fsutil

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// TooLargeError reports a file holding more bytes than the reader accepts.
type TooLargeError struct {
	// Path is the file as it was named.
	Path string
	// Size is the file's size in bytes as stat reports it; for a file
	// that grew while being read, it is the number of bytes read,
	// Limit+1, a lower bound.
	Size int64
	// Limit is the largest size accepted, in bytes.
	Limit int64
}

// Error names the file, its size and the limit.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: %d bytes exceeds the %d-byte limit", e.Path, e.Size, e.Limit)
}

// NotRegularError reports a path that names something other than a
// regular file (after following symbolic links): a directory, a device, a
// FIFO, a socket.
type NotRegularError struct {
	// Path is the file as it was named.
	Path string
	// Mode is the file's mode as stat reports it.
	Mode fs.FileMode
}

// Error names the file and what it is.
func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: %s, not a regular file (only regular files are read)", e.Path, kind(e.Mode))
}

// kind names a file type for messages.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "a special file"
}

// checkRegular returns a *NotRegularError unless st describes a regular file.
func checkRegular(path string, st fs.FileInfo) error {
	if !st.Mode().IsRegular() {
		return &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return nil
}

// Open opens the file at path for reading, as os.Open does, if it is a
// regular file (symbolic links are followed); anything else is a
// [*NotRegularError]. A device is never opened, and opening a FIFO does
// not block.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(path, st); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err == nil {
		err = checkRegular(path, st)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads the regular file at path, as os.ReadFile does, unless it
// holds more than limit bytes: the error is then a [*TooLargeError]. A
// path that is not a regular file is a [*NotRegularError]. Other errors
// opening or reading the file are the os package's, which name the file.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, path, limit)
}

// ReadFS is [ReadFile] for the file name in fsys: it must be a regular
// file of at most limit bytes. Its mode is checked before it is opened and
// again on the open file.
func ReadFS(fsys fs.FS, name string, limit int64) ([]byte, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(name, st); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if err := checkRegular(name, st); err != nil {
		return nil, err
	}
	return readLimited(f, name, limit)
}

// readLimited reads f whole, or fails with a *TooLargeError once it has
// read more than limit bytes.
func readLimited(f fs.File, name string, limit int64) ([]byte, error) {
	if st, err := f.Stat(); err == nil && st.Size() > limit {
		return nil, &TooLargeError{Path: name, Size: st.Size(), Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: name, Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}

// DirFS returns the tree of files under dir, as os.DirFS does, except
// that opening anything but a regular file fails with a
// [*NotRegularError] (and so does [fs.Stat]), and opening never blocks.
// It is for reading named files (a model folder's config.json), not for
// walking the tree.
func DirFS(dir string) fs.FS { return dirFS(dir) }

type dirFS string

// Open opens name, a slash-separated path relative to the folder.
func (d dirFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return Open(filepath.Join(string(d), filepath.FromSlash(name)))
}
