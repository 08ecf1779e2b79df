package fsutil

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), n), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name     string
		path     string
		limit    int64
		wantLen  int
		wantSize int64 // TooLargeError.Size; 0 when no such error is wanted
		wantErr  error // another error the result must match
	}{
		{"empty", write("empty", 0), 10, 0, 0, nil},
		{"below the limit", write("small", 9), 10, 9, 0, nil},
		{"at the limit", write("exact", 10), 10, 10, 0, nil},
		{"one byte over", write("over", 11), 10, 0, 11, nil},
		{"far over", write("big", 5000), 10, 0, 5000, nil},
		{"missing", filepath.Join(dir, "missing"), 10, 0, 0, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := ReadFile(tt.path, tt.limit)
			tl, isTooLarge := errors.AsType[*TooLargeError](err)
			switch {
			case tt.wantSize > 0:
				if !isTooLarge {
					t.Fatalf("err = %v, want a *TooLargeError", err)
				}
				want := TooLargeError{Path: tt.path, Size: tt.wantSize, Limit: tt.limit}
				if *tl != want {
					t.Errorf("error = %+v, want %+v", *tl, want)
				}
				if data != nil {
					t.Errorf("data = %d bytes, want none", len(data))
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("err = %v", err)
			case len(data) != tt.wantLen:
				t.Errorf("read %d bytes, want %d", len(data), tt.wantLen)
			}
		})
	}
}

func TestReadFileDirectory(t *testing.T) {
	if _, err := ReadFile(t.TempDir(), 10); err == nil {
		t.Error("reading a directory succeeded")
	}
}

func TestTooLargeErrorMessage(t *testing.T) {
	err := &TooLargeError{Path: "a.json", Size: 12, Limit: 10}
	if got, want := err.Error(), "a.json: 12 bytes exceeds the 10-byte limit"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
