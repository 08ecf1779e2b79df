package probe

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestParentPID(t *testing.T) {
	tests := []struct {
		stat string
		want int
		ok   bool
	}{
		{"123 (bash) S 1 123 123 0 -1", 1, true},
		{"77 (python3 train.py) R 42 77 1", 42, true},
		{"78 (a) b) (c) S 77 1 1", 77, true},
		{"79 (noparen S 1", 0, false},
		{"80 (x) S", 0, false},
		{"81 (x) S -3", 0, false},
	}
	for _, tt := range tests {
		got, ok := parentPID([]byte(tt.stat))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parentPID(%q) = %d, %v; want %d, %v", tt.stat, got, ok, tt.want, tt.ok)
		}
	}
}

func TestProcessTree(t *testing.T) {
	stat := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	proc := fstest.MapFS{
		"1/stat":    stat("1 (init) S 0 1 1"),
		"100/stat":  stat("100 (torchrun) S 1 100 100"),
		"101/stat":  stat("101 (python) S 100 100 100"),
		"102/stat":  stat("102 (python) S 100 100 100"),
		"103/stat":  stat("103 (pt_data_worker) S 101 100 100"),
		"200/stat":  stat("200 (other job) S 1 200 200"),
		"201/stat":  stat("201 (python) S 200 200 200"),
		"300/stat":  stat("garbage"),
		"self/stat": stat("100 (torchrun) S 1"),
		"meminfo":   stat("MemTotal: 1 kB"),
	}
	got, err := ProcessTree(proc, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]bool{100: true, 101: true, 102: true, 103: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ProcessTree(100) (-want +got):\n%s", diff)
	}
	leaf, err := ProcessTree(proc, 103)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[int]bool{103: true}, leaf); diff != "" {
		t.Errorf("ProcessTree(103) (-want +got):\n%s", diff)
	}
}

func TestProcessTreeUnreadable(t *testing.T) {
	if _, err := ProcessTree(os.DirFS(filepath.Join(t.TempDir(), "missing")), 1); err == nil {
		t.Error("ProcessTree of a missing procfs: want an error")
	}
}
