package campaign

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite jobs.json and configs/ from the matrix")

// TestFilesCurrent checks that jobs.json and configs/ are what the matrix
// and today's estimates give, so the runner on the GPU host reads current
// jobs; -update rewrites them.
func TestFilesCurrent(t *testing.T) {
	f, configs, err := Build(Matrix())
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := Write(".", f, configs); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(JobsFile)
	if err != nil {
		t.Fatalf("%v; run go test ./probe/campaign -update", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale (the matrix or the estimates changed); run go test ./probe/campaign -update", JobsFile)
	}
	names, err := os.ReadDir(ConfigsDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != len(configs) {
		t.Errorf("%s has %d files, the jobs name %d; run go test ./probe/campaign -update", ConfigsDir, len(names), len(configs))
	}
	for name, cfg := range configs {
		got, err := os.ReadFile(filepath.Join(ConfigsDir, name))
		if err != nil || !bytes.Equal(got, cfg) {
			t.Errorf("%s/%s differs from the catalog's config (%v); run go test ./probe/campaign -update", ConfigsDir, name, err)
		}
	}
}
