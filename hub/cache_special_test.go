//go:build unix

package hub

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/fsutil"
)

// A cache whose refs/main is a device or a FIFO (a broken or hostile
// cache) fails naming the ref, at once, instead of reading without
// bound or waiting for a writer; so does a snapshot file that is one.
func TestCacheSpecialFiles(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	for _, target := range []string{"/dev/zero", "fifo"} {
		t.Run(target, func(t *testing.T) {
			dir := t.TempDir()
			repo := filepath.Join(dir, "models--org--name")
			if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
				t.Fatal(err)
			}
			if target == "fifo" {
				target = filepath.Join(dir, "fifo")
				if err := syscall.Mkfifo(target, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(target, filepath.Join(repo, "refs", "main")); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := Cache{Dir: dir}.Commit("org/name", "main")
				done <- err
			}()
			select {
			case err := <-done:
				if _, ok := errors.AsType[*fsutil.NotRegularError](err); !ok {
					t.Fatalf("err = %v, want a *fsutil.NotRegularError", err)
				}
				if want := "cache ref org/name@main"; err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Commit blocked")
			}
			snap := filepath.Join(repo, "snapshots", commit)
			if err := os.MkdirAll(snap, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(snap, "model.safetensors")); err != nil {
				t.Fatal(err)
			}
			c, err := New(Config{CacheDir: dir, Offline: true})
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				_, err := c.openCached(Cache{Dir: dir}, "org/name", commit, "model.safetensors")
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("a special file in the snapshot was opened")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("openCached blocked")
			}
		})
	}
}
