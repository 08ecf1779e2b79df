package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records failures instead of stopping.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }
func (r *recorder) Helper()               {}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	check := func(name, got string, update bool) bool {
		r := &recorder{TB: t}
		Check(r, name, []byte(got), update)
		return !r.failed
	}
	if check("missing", "x", false) {
		t.Error("a missing golden file passed")
	}
	if !check("a", "hello\n", true) {
		t.Error("update then compare failed")
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "a.golden")); err != nil || string(b) != "hello\n" {
		t.Errorf("update wrote %q, %v", b, err)
	}
	if !check("a", "hello\n", false) {
		t.Error("equal output failed")
	}
	if check("a", "hello!\n", false) {
		t.Error("different output passed")
	}
}
