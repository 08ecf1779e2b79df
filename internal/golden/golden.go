// Package golden compares a test's output with a file under the test's
// testdata directory, for the tests of several packages.
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// showLimit is the largest output a failure prints in full; larger
// outputs (charts) are named by path only.
const showLimit = 4 << 10

// Check compares got with testdata/<name>.golden. With update set (the
// package's -update flag) it first writes got there.
func Check(t testing.TB, name string, got []byte, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	if len(got) <= showLimit && len(want) <= showLimit {
		t.Errorf("%s differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", name, path, got, want)
		return
	}
	t.Errorf("%s differs from %s (go test -update rewrites it; read the diff)", name, path)
}
