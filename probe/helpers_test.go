package probe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpumem/gpumem/units"
)

// installFake copies testdata/<script> into a fresh bin directory as name
// and puts that directory first on PATH.
func installFake(t *testing.T, script, name string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, name), src, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return bin
}

// fakeSMI installs the fake nvidia-smi replaying testdata/smi/<scenario>.txt.
// It returns the directory where the test's command writes child.pid and
// grandchild.pid (empty when pids is false).
func fakeSMI(t *testing.T, scenario string, pids bool) string {
	t.Helper()
	installFake(t, "fake-nvidia-smi", "nvidia-smi")
	abs, err := filepath.Abs(filepath.Join("testdata", "smi", scenario+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	t.Setenv("FAKE_SMI_SCENARIO", abs)
	t.Setenv("FAKE_SMI_STATE", filepath.Join(state, "frame"))
	if !pids {
		t.Setenv("FAKE_SMI_PIDDIR", "")
		return ""
	}
	dir := t.TempDir()
	t.Setenv("FAKE_SMI_PIDDIR", dir)
	return dir
}

// staticSampler returns the same snapshot every time and counts calls.
type staticSampler struct {
	mu    sync.Mutex
	snap  Snapshot
	err   error
	calls int
}

func (s *staticSampler) Sample(ctx context.Context) (Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return s.snap, s.err
}

func oneGPU() *staticSampler {
	return &staticSampler{snap: Snapshot{GPUs: []GPU{{Index: 0, UUID: "GPU-0", Used: 0, Total: 16 * units.GiB}}}}
}

// waitForFile waits until path exists and is not empty.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s did not appear", path)
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
