package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/calibrate"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/probe"
	"github.com/gpumem/gpumem/units"
)

// simulatedGPU behaves like the estimator with other constants: its
// activations are 1.3× gpumem's, its allocator keeps 10 % on top of what
// gpumem derives, and
// the process has 700 MiB outside the allocator.
var simulatedGPU = struct {
	scale, frag float64
	overheadMiB units.Bytes
}{1.3, 0.10, 700}

// simulatedResult is the probe line the fake python prints for job on the
// simulated GPU.
func simulatedResult(t *testing.T, m *model.Model, job memory.Job) []byte {
	t.Helper()
	// The simulated allocator holds what gpumem derives (the weights'
	// segment slack) and a fraction frag of the allocated peak on top.
	job.Constants = map[string]float64{"activation_scale": simulatedGPU.scale, "fragmentation": simulatedGPU.frag}
	truth, err := memory.Estimate(m, job)
	if err != nil {
		t.Fatal(err)
	}
	alloc, res := truth.PerGPU.AllocatedPeakBytes, truth.PerGPU.ReservedPeakBytes
	r := probe.SyntheticResult{
		Schema: probe.SyntheticSchema, OK: true, Model: "LlamaForCausalLM",
		Device:             probe.DeviceInfo{Name: "NVIDIA H100 80GB HBM3", Capability: "9.0", TotalBytes: 85520809984},
		Software:           probe.Software{Torch: "2.5.1+cu124", CUDA: "12.4"},
		AllocatedPeakBytes: alloc, ReservedPeakBytes: res, DevicePeakBytes: res + simulatedGPU.overheadMiB*units.MiB,
		Phases: []probe.MeasuredPhase{{Name: "forward", AllocatedPeakBytes: alloc, ReservedPeakBytes: res}},
	}
	line, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return append(line, '\n')
}

// The loop closes: synthetic probes of a few jobs, recorded and fitted,
// give a profile that predicts a job that was not probed.
func TestProbeCalibrateEstimateLoop(t *testing.T) {
	fakeGPU(t, "idle")
	fakePython(t, "ok")
	m, err := model.Lookup("smollm2-135m")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs.jsonl")
	for i, seq := range []int{256, 512, 1024, 2048} {
		job := memory.Job{Mode: memory.Train, SeqLen: seq, MicroBatch: 2, GPU: "H100-SXM"}
		out := filepath.Join(dir, "probe"+strconv.Itoa(i)+".out")
		if err := os.WriteFile(out, simulatedResult(t, m, job), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("FAKE_PY_SCENARIO", out)
		_, errOut, code := runCommand(t, "probe", "--synthetic", "--model", "smollm2-135m", "--seq-len", strconv.Itoa(seq),
			"--per-device-batch", "2", "--interval", "20ms", "--record", runs)
		if code != 0 {
			t.Fatalf("probe seq %d: exit %d, stderr %q", seq, code, errOut)
		}
	}
	profile := filepath.Join(dir, "h100.json")
	out, errOut, code := runCommand(t, "calibrate", runs, "--output", profile, "--per-run")
	if code != 0 {
		t.Fatalf("calibrate: exit %d, stderr %q", code, errOut)
	}
	// Four runs at three levels each.
	if n := strings.Count(out, "smollm2-135m b2 s"); n != 12 || !strings.Contains(out, "smollm2-135m b2 s1024 @") {
		t.Errorf("--per-run lists %d rows, want 12:\n%s", n, out)
	}
	p, err := calibrate.LoadProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	// H100 workspace 32 MiB and the default 500 MiB context leave 168 MiB of misc.
	for name, want := range map[string]float64{"activation_scale": 1.3, "fragmentation": 0.1, "misc_overhead_mib": 168} {
		if got := p.Constants[name]; math.Abs(got-want) > 0.01*want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// A job that was not probed: the calibrated estimate matches the simulated GPU.
	job := memory.Job{Mode: memory.Train, SeqLen: 3072, MicroBatch: 2, GPU: "H100-SXM"}
	var want probe.SyntheticResult
	if err := json.Unmarshal(simulatedResult(t, m, job), &want); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCommand(t, "estimate", "--model", "smollm2-135m", "--seq-len", "3072", "--per-device-batch", "2",
		"--calibration", profile, "--format", "json")
	if code != 0 {
		t.Fatalf("estimate: exit %d, stderr %q", code, errOut)
	}
	var got memory.Result
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want units.Bytes
	}{
		{"allocated", got.PerGPU.AllocatedPeakBytes, want.AllocatedPeakBytes},
		{"reserved", got.PerGPU.ReservedPeakBytes, want.ReservedPeakBytes},
		{"device", got.PerGPU.DevicePeakBytes, want.DevicePeakBytes},
	} {
		if rel := math.Abs(float64(c.got-c.want)) / float64(c.want); rel > 0.005 {
			t.Errorf("%s: calibrated estimate %s, simulated GPU %s (%.2f %% off)", c.name, c.got, c.want, 100*rel)
		}
	}
}
