package fsutil

import (
	"errors"
	"testing"
)

// A /proc file reports size 0 to stat: the bound must come from the read.
func TestReadFileUnreportedSize(t *testing.T) {
	const path = "/proc/self/status"
	_, err := ReadFile(path, 10)
	tl, ok := errors.AsType[*TooLargeError](err)
	if !ok {
		t.Fatalf("err = %v, want a *TooLargeError", err)
	}
	if want := (TooLargeError{Path: path, Size: 11, Limit: 10}); *tl != want {
		t.Errorf("error = %+v, want %+v", *tl, want)
	}
}
