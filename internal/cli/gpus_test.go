package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/units"
)

func TestGPUsList(t *testing.T) {
	out, errOut, code := runCommand(t, "gpus")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"H100-SXM", "81559", "79.65 GiB", "MI300X", "Gaudi3", "31 GPUs"} {
		if !strings.Contains(out, want) {
			t.Errorf("gpus output lacks %q", want)
		}
	}
	out, _, code = runCommand(t, "gpus", "hopper", "--units", "si")
	if code != 0 || !strings.Contains(out, "H200") || strings.Contains(out, "A100") || !strings.Contains(out, "85.52 GB") {
		t.Errorf("gpus hopper --units si: exit %d\n%s", code, out)
	}
}

func TestGPUsJSONWithFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "site.yaml")
	site := "- name: Site-Board-X\n  vendor: nvidia\n  memory_mib: 49140\n  arch: ampere\n  compute_capability: \"8.6\"\n  bf16: true\n"
	if err := os.WriteFile(path, []byte(site), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCommand(t, "gpus", "--gpus-file", path, "--format", "json", "--filter", "site-board")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var gs []gpu.GPU
	if err := json.Unmarshal([]byte(out), &gs); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(gs) != 1 || gs[0].Name != "Site-Board-X" || gs[0].Memory != 49140*units.MiB {
		t.Errorf("got %+v", gs)
	}
}

func TestGPUsFileErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(path, []byte(`[{"name": "X", "vendor": "nvidia"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCommand(t, "gpus", "--gpus-file", path)
	if code != ExitError || !strings.Contains(errOut, "bad.json") || !strings.Contains(errOut, "memory") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runCommand(t, "gpus", "--gpus-file", filepath.Join(t.TempDir(), "missing.yaml"))
	if code != ExitError || !strings.Contains(errOut, "missing.yaml") {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
}
