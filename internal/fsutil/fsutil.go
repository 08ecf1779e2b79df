// Package fsutil reads local files with a bound on their size, so that a
// wrong path (a checkpoint, a disk image, a device) fails at once instead
// of filling memory. Every file the tool reads whole — job files,
// constants profiles, GPU catalogs, cached Hub files, token files — goes
// through [ReadFile].
package fsutil

import (
	"fmt"
	"io"
	"os"
)

// TooLargeError reports a file holding more bytes than the reader accepts.
type TooLargeError struct {
	// Path is the file as it was named.
	Path string
	// Size is the file's size in bytes as stat reports it; for a file
	// whose size stat does not report (a pipe, a /proc file) or that grew
	// while being read, it is the number of bytes read, Limit+1, a lower
	// bound.
	Size int64
	// Limit is the largest size accepted, in bytes.
	Limit int64
}

// Error names the file, its size and the limit.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: %d bytes exceeds the %d-byte limit", e.Path, e.Size, e.Limit)
}

// ReadFile reads the file at path, as os.ReadFile does, unless it holds
// more than limit bytes: the error is then a [*TooLargeError]. Reading
// stops after limit+1 bytes, so a file stat misreports is bounded too.
// Errors opening or reading the file are the os package's, which name
// the file.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > limit {
		return nil, &TooLargeError{Path: path, Size: st.Size(), Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}
