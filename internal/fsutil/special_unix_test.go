//go:build unix

package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// specialFiles makes, in a temporary folder, the paths a wrong or hostile
// argument may name: a device, a FIFO, symbolic links to both, a
// directory and a symbolic-link loop. Each maps to whether reading it must
// fail with a *NotRegularError (a loop fails on its own).
func specialFiles(t *testing.T) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	link := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	loopA := filepath.Join(dir, "loop-a")
	link("loop-b", loopA)
	link("loop-a", filepath.Join(dir, "loop-b"))
	return map[string]bool{
		"/dev/zero":                    true,
		"/dev/null":                    true,
		fifo:                           true,
		link("zero.json", "/dev/zero"): true,
		link("config.json", fifo):      true,
		dir:                            true,
		loopA:                          false,
	}
}

// Devices, FIFOs, links to them and directories are refused at once,
// naming the file; none is read and none blocks.
func TestReadFileSpecialFiles(t *testing.T) {
	for path, notRegular := range specialFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := ReadFile(path, 1<<20)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("ReadFile(%s) blocked", path)
			}
			if err == nil {
				t.Fatalf("ReadFile(%s) succeeded", path)
			}
			nr, ok := errors.AsType[*NotRegularError](err)
			if ok != notRegular {
				t.Fatalf("err = %v (%T), want a *NotRegularError: %v", err, err, notRegular)
			}
			if ok && nr.Path != path {
				t.Errorf("error names %q, want %q", nr.Path, path)
			}
		})
	}
}

// The same paths inside a folder read through DirFS and ReadFS.
func TestReadFSSpecialFiles(t *testing.T) {
	for path, notRegular := range specialFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := ReadFS(DirFS(filepath.Dir(path)), filepath.Base(path), 1<<20)
				done <- err
			}()
			select {
			case err := <-done:
				if _, ok := errors.AsType[*NotRegularError](err); err == nil || ok != notRegular {
					t.Fatalf("err = %v, want a *NotRegularError: %v", err, notRegular)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("ReadFS(%s) blocked", path)
			}
		})
	}
}

func TestNotRegularErrorMessage(t *testing.T) {
	st, err := os.Stat("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	got := (&NotRegularError{Path: "/dev/zero", Mode: st.Mode()}).Error()
	if want := "/dev/zero: a character device, not a regular file (only regular files are read)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
