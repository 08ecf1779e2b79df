package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/calibrate"
	"github.com/gpumem/gpumem/memory"
)

func TestCalibrateShowDefault(t *testing.T) {
	out, _, code := runCommand(t, "calibrate", "--show-default")
	if code != 0 || !probeContains(out, `Calibration profile "default"`, "no run on real GPU hardware", "overrides: none") {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	_, errOut, code := runCommand(t, "calibrate")
	if code != ExitUsage || !strings.Contains(errOut, "no runs file given") {
		t.Errorf("no file: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runCommand(t, "calibrate", filepath.Join(t.TempDir(), "missing.jsonl"))
	if code != ExitError || !strings.Contains(errOut, "missing.jsonl") {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
}

func TestCalibrateBadRunsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := os.WriteFile(path, []byte("# header\n{\"id\": 5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCommand(t, "calibrate", path)
	if code != ExitError || !probeContains(errOut, "runs.jsonl line 2", "id") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func writeCalibrationProfile(t *testing.T, p calibrate.Profile) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEstimateCalibration(t *testing.T) {
	path := writeCalibrationProfile(t, calibrate.Profile{Schema: calibrate.ProfileSchema, Name: "lab", GPU: "H100-SXM",
		Constants: map[string]float64{"fragmentation": 0.11, "misc_overhead_mib": 300}})
	estimate := func(extra ...string) (memory.Result, string, int) {
		args := append([]string{"estimate", "--model", "smollm2-135m", "--seq-len", "512", "--format", "json"}, extra...)
		out, errOut, code := runCommand(t, args...)
		var res memory.Result
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatal(err)
			}
		}
		return res, errOut, code
	}
	base, _, _ := estimate("--gpu", "H100-SXM")
	cal, errOut, code := estimate("--calibration", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if cal.Job.GPU != "H100-SXM" || cal.Job.Constants["fragmentation"] != 0.11 || cal.Job.Constants["misc_overhead_mib"] != 300 {
		t.Errorf("calibrated job %+v", cal.Job)
	}
	// The profile moves reserved and device, not allocated.
	if cal.PerGPU.AllocatedPeakBytes != base.PerGPU.AllocatedPeakBytes || cal.PerGPU.DevicePeakBytes-base.PerGPU.DevicePeakBytes < 300<<20 {
		t.Errorf("base %+v\ncalibrated %+v", base.PerGPU, cal.PerGPU)
	}
	// --set wins over the profile.
	set, _, code := estimate("--calibration", path, "--set", "FRAGMENTATION=0.2")
	if code != 0 || set.Job.Constants["FRAGMENTATION"] != 0.2 || set.Job.Constants["fragmentation"] != 0 || set.Job.Constants["misc_overhead_mib"] != 300 {
		t.Errorf("with --set: code %d, constants %v", code, set.Job.Constants)
	}
	// A profile for another GPU kind is refused.
	if _, errOut, code := estimate("--calibration", path, "--gpu", "A100-80GB"); code != ExitError || !strings.Contains(errOut, "profile \"lab\" is for H100-SXM") {
		t.Errorf("other GPU: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := estimate("--calibration", filepath.Join(t.TempDir(), "none.json")); code != ExitError || !strings.Contains(errOut, "--calibration") {
		t.Errorf("missing profile: exit %d, stderr %q", code, errOut)
	}
}
