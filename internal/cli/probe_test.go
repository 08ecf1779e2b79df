package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/accuracy"
	"github.com/gpumem/gpumem/calibrate"
	"github.com/gpumem/gpumem/model"
)

// installFakeTool copies probe/testdata/<script> to a fresh bin directory
// as name, first on PATH.
func installFakeTool(t *testing.T, script, name string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "probe", "testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, name), src, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// fakeGPU puts the fake nvidia-smi on PATH, replaying a scenario of
// probe/testdata/smi.
func fakeGPU(t *testing.T, scenario string) {
	t.Helper()
	installFakeTool(t, "fake-nvidia-smi", "nvidia-smi")
	abs, err := filepath.Abs(filepath.Join("..", "..", "probe", "testdata", "smi", scenario+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_SMI_SCENARIO", abs)
	t.Setenv("FAKE_SMI_STATE", filepath.Join(t.TempDir(), "frame"))
	t.Setenv("FAKE_SMI_PIDDIR", "")
}

// fakePython puts the fake python3 on PATH, printing a result line of
// probe/testdata/py, and records what it was given in the returned dir.
func fakePython(t *testing.T, scenario string) string {
	t.Helper()
	installFakeTool(t, "fake-python3", "python3")
	abs, err := filepath.Abs(filepath.Join("..", "..", "probe", "testdata", "py", scenario+".out"))
	if err != nil {
		t.Fatal(err)
	}
	rec := t.TempDir()
	t.Setenv("FAKE_PY_SCENARIO", abs)
	t.Setenv("FAKE_PY_RECORD", rec)
	t.Setenv("FAKE_PY_STDERR", "")
	t.Setenv("FAKE_PY_EXIT", "0")
	return rec
}

func TestProbeUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", []string{"probe"}, "no command to probe"},
		{"synthetic with command", []string{"probe", "--synthetic", "--model", "smollm2-135m", "--", "true"}, "give no command"},
		{"synthetic without model", []string{"probe", "--synthetic"}, "--synthetic needs the model"},
		{"record without model", []string{"probe", "--record", "x.jsonl", "--", "true"}, "--record needs the job"},
		{"interval", []string{"probe", "--interval", "1ms", "--", "true"}, "--interval"},
		{"steps", []string{"probe", "--synthetic", "--model", "smollm2-135m", "--steps", "0"}, "at least one measured step"},
		{"bad job flag", []string{"probe", "--model", "smollm2-135m", "--zero", "9", "--", "true"}, "--zero"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCommand(t, tc.args...)
			if code != ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, ExitUsage, tc.want)
			}
		})
	}
}

func TestProbeCommandExitCode(t *testing.T) {
	fakeGPU(t, "idle")
	// Flags after the command's name belong to the command.
	out, errOut, code := runCommand(t, "probe", "--interval", "20ms", "sh", "-c", "echo from-child >&2; exit 3", "--format", "json")
	if code != 3 {
		t.Fatalf("exit %d, want the command's 3 (stderr %q)", code, errOut)
	}
	if !strings.Contains(errOut, "from-child") || !strings.Contains(errOut, "command exited with status 3") {
		t.Errorf("stderr %q: want the command's output and its status", errOut)
	}
	if !strings.Contains(out, "GPU memory of the probed process tree") || !strings.Contains(out, "16.00 GiB") {
		t.Errorf("stdout %q: want the peak table (with the GPU's total)", out)
	}
}

func TestProbeMissingNvidiaSMI(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, errOut, code := runCommand(t, "probe", "--", "true")
	if code != ExitError || !strings.Contains(errOut, "install the NVIDIA driver") {
		t.Errorf("exit %d, stderr %q: want 1 and advice", code, errOut)
	}
}

func TestProbeSyntheticRecordAndCalibrate(t *testing.T) {
	fakeGPU(t, "idle")
	rec := fakePython(t, "ok")
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs.jsonl")
	args := []string{"probe", "--synthetic", "--model", "smollm2-135m", "--method", "lora", "--seq-len", "768",
		"--per-device-batch", "4", "--interval", "20ms", "--record", runs}
	out, errOut, code := runCommand(t, args...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(errOut, "gpumem: probe warning: grad_checkpoint 'selective'") {
		t.Errorf("stderr %q: want the script's warning", errOut)
	}
	for _, want := range []string{"Estimate vs measured", "peak", "allocated", "reserved", "device", "phase", "forward", "component", "weights",
		"parameters: torch 3221924864 (trainable 9175040); gpumem 134515008"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// The script got the catalog's config.json byte for byte and the job.
	cfg, _ := os.ReadFile(filepath.Join(rec, "config.json"))
	want, err := model.CatalogConfig("smollm2-135m")
	if err != nil || !bytes.Equal(cfg, want) {
		t.Errorf("config given to the script differs from the catalog's (%v)", err)
	}
	var job map[string]any
	raw, _ := os.ReadFile(filepath.Join(rec, "job.json"))
	if err := json.Unmarshal(raw, &job); err != nil || job["method"] != "lora" || job["seq_len"] != 768.0 || job["per_device_batch"] != 4.0 {
		t.Errorf("job given to the script: %s (%v)", raw, err)
	}
	// The recorded run reads back, on the GPU the script reported.
	f, err := os.Open(runs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := calibrate.ReadRuns(f, runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Kind() != "H100-SXM" || got[0].Job.GPU != "H100-SXM" || got[0].Measured.AllocatedPeakBytes != 7516192768 || got[0].Software.Torch != "2.5.1" {
		t.Errorf("recorded run: %+v", got)
	}
	// One run fits nothing with the default minimum; --min-runs 1 does.
	_, errOut, code = runCommand(t, "calibrate", runs)
	if code != ExitError || !strings.Contains(errOut, "each term needs 2 runs") {
		t.Errorf("calibrate one run: exit %d, stderr %q", code, errOut)
	}
	profile := filepath.Join(dir, "h100.json")
	out, errOut, code = runCommand(t, "calibrate", runs, "--min-runs", "1", "--output", profile)
	if code != 0 || !probeContains(out, "Fitted constants (1 runs)", "leave-one-out", "1 of 1 runs estimated anew") {
		t.Fatalf("calibrate: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	p, err := calibrate.LoadProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	if p.GPU != "H100-SXM" || len(p.Constants) == 0 {
		t.Errorf("profile %+v", p)
	}
}

func TestProbeSyntheticFailures(t *testing.T) {
	t.Run("missing torch", func(t *testing.T) {
		fakeGPU(t, "idle")
		fakePython(t, "missing-torch")
		t.Setenv("FAKE_PY_EXIT", "3")
		_, errOut, code := runCommand(t, "probe", "--synthetic", "--model", "smollm2-135m", "--seq-len", "128", "--interval", "20ms")
		if code != 3 || !strings.Contains(errOut, "install PyTorch with CUDA support") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("missing python", func(t *testing.T) {
		fakeGPU(t, "idle")
		t.Setenv("PATH", filepath.Dir(probeLookPath(t, "nvidia-smi")))
		_, errOut, code := runCommand(t, "probe", "--synthetic", "--model", "smollm2-135m", "--seq-len", "128")
		if code != ExitError || !probeContains(errOut, "python3 not found", "pip install torch") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("malformed result", func(t *testing.T) {
		fakeGPU(t, "idle")
		fakePython(t, "malformed")
		_, errOut, code := runCommand(t, "probe", "--synthetic", "--model", "smollm2-135m", "--seq-len", "128", "--interval", "20ms")
		if code != ExitError || !probeContains(errOut, "probe JSON (stdout line 1)", "allocated_peak_bytes") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
}

func probeLookPath(t *testing.T, name string) string {
	t.Helper()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	t.Fatalf("%s not on PATH", name)
	return ""
}

func probeContains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestProbeForwardsSignals(t *testing.T) {
	fakeGPU(t, "idle")
	sigs := make(chan os.Signal, 1)
	old := probeSignals
	probeSignals = func() (<-chan os.Signal, func()) { return sigs, func() {} }
	t.Cleanup(func() { probeSignals = old })
	dir := t.TempDir()
	t.Setenv("D", dir)
	go func() {
		for i := 0; i < 1000; i++ {
			if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
				sigs <- syscall.SIGTERM
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	script := `trap 'echo TERM > "$D/sig"; exit 43' TERM; echo ready > "$D/ready"; while :; do sleep 0.05; done`
	_, errOut, code := runCommand(t, "probe", "--interval", "20ms", "--", "sh", "-c", script)
	got, _ := os.ReadFile(filepath.Join(dir, "sig"))
	if code != 43 || strings.TrimSpace(string(got)) != "TERM" || !strings.Contains(errOut, "command exited with status 43") {
		t.Errorf("exit %d, command saw %q, stderr %q; want 43 after SIGTERM", code, got, errOut)
	}
}

func TestProbeJobFile(t *testing.T) {
	fakeGPU(t, "tree")
	dir := t.TempDir()
	jobFile := filepath.Join(dir, "job.json")
	if err := os.WriteFile(jobFile, []byte(`{"mode":"train","seq_len":256,"per_device_batch":2,"method":"lora","gpu":"H100-SXM"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	wait := `while n=$(cat "$FAKE_SMI_STATE" 2>/dev/null); [ "${n:-0}" -lt 4 ]; do sleep 0.01; done`
	out, errOut, code := runCommand(t, "probe", "--model", "smollm2-135m", "--job", jobFile, "--all-processes", "--interval", "10ms", "--format", "json", "--", "sh", "-c", wait)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var got struct {
		Measured struct {
			DevicePeakBytes int64 `json:"device_peak_bytes"`
		} `json:"measured"`
		Estimate   struct{ Job map[string]any }                 `json:"estimate"`
		Comparison struct{ Rows []struct{ Kind, Name string } } `json:"comparison"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	// Frame 3 of the tree scenario: GPU 0 at 9000 MiB.
	if got.Measured.DevicePeakBytes != 9000<<20 || got.Estimate.Job["method"] != "lora" || got.Estimate.Job["seq_len"] != 256.0 {
		t.Errorf("measured %d, estimated job %v", got.Measured.DevicePeakBytes, got.Estimate.Job)
	}
	if len(got.Comparison.Rows) != 1 || got.Comparison.Rows[0].Name != "device" {
		t.Errorf("comparison rows %+v, want the device peak only", got.Comparison.Rows)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"seq_len":256,"sequence":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"probe", "--model", "smollm2-135m", "--job", jobFile, "--seq-len", "512", "--", "true"}, ExitUsage, "--job " + jobFile + " and job flags (--seq-len)"},
		{[]string{"probe", "--job", jobFile, "--", "true"}, ExitUsage, "pass --model as well"},
		{[]string{"probe", "--model", "smollm2-135m", "--job", bad, "--", "true"}, ExitError, `unknown field "sequence"`},
	} {
		_, errOut, code := runCommand(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

func TestProbeWarnsWhenPIDsNeverMatch(t *testing.T) {
	// In the tree scenario other processes use the GPUs, but the
	// command's PIDs are never listed (FAKE_SMI_PIDDIR is unset).
	fakeGPU(t, "tree")
	wait := `while n=$(cat "$FAKE_SMI_STATE" 2>/dev/null); [ "${n:-0}" -lt 3 ]; do sleep 0.01; done`
	_, errOut, code := runCommand(t, "probe", "--interval", "10ms", "--", "sh", "-c", wait)
	if code != 0 || !strings.Contains(errOut, "rerun with --all-processes") {
		t.Errorf("exit %d, stderr %q: want the --all-processes hint", code, errOut)
	}
	_, errOut, _ = runCommand(t, "probe", "--interval", "10ms", "--all-processes", "--", "true")
	if strings.Contains(errOut, "--all-processes to count") {
		t.Errorf("hint given with --all-processes: %q", errOut)
	}
}

// A synthetic probe run on another host: gpumem writes the script, the
// user runs it there and brings back the result line.
func TestProbeWriteScriptAndFromResult(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "probe dir")
	out, errOut, code := runCommand(t, "probe", "--synthetic", "--model", "smollm2-135m", "--seq-len", "768", "--method", "lora",
		"--steps", "4", "--write-script", dir)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := "cd '" + dir + "' && python3 -u probe.py --config config.json --job job.json --warmup 2 --steps 4 --device 0 > result.jsonl\n"
	if out != want || !strings.Contains(errOut, "gpumem probe --from-result result.jsonl") {
		t.Errorf("stdout %q\nwant   %q\nstderr %q", out, want, errOut)
	}
	var job map[string]any
	raw, err := os.ReadFile(filepath.Join(dir, "job.json"))
	if err != nil || json.Unmarshal(raw, &job) != nil || job["method"] != "lora" {
		t.Errorf("job.json %s (%v)", raw, err)
	}

	// The result comes back; it is compared and recorded like a local run.
	runs := filepath.Join(t.TempDir(), "runs.jsonl")
	result := filepath.Join("..", "..", "probe", "testdata", "py", "ok.out")
	out, errOut, code = runCommand(t, "probe", "--from-result", result, "--model", "smollm2-135m", "--seq-len", "768", "--method", "lora", "--record", runs)
	if code != 0 || !strings.Contains(out, "Estimate vs measured") || strings.Contains(out, "probed process tree") {
		t.Fatalf("from-result: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b, err := os.ReadFile(runs); err != nil || strings.Count(string(b), "\n") != 1 {
		t.Errorf("runs file: %q, %v", b, err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"probe", "--write-script", dir, "--", "true"}, ExitUsage, "add --synthetic"},
		{[]string{"probe", "--from-result", result, "--", "true"}, ExitUsage, "give neither"},
		{[]string{"probe", "--from-result", result}, ExitUsage, "--from-result needs the job"},
		{[]string{"probe", "--from-result", filepath.Join("..", "..", "probe", "testdata", "py", "malformed.out"), "--model", "smollm2-135m", "--seq-len", "64"}, ExitError, "probe JSON (stdout line 1)"},
		{[]string{"probe", "--from-result", filepath.Join("..", "..", "probe", "testdata", "py", "missing-torch.out"), "--model", "smollm2-135m", "--seq-len", "64"}, ExitError, "install PyTorch"},
	} {
		_, errOut, code := runCommand(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

func TestProbeCommandReadsPipedStdin(t *testing.T) {
	fakeGPU(t, "idle")
	var out, errOut bytes.Buffer
	f := &Factory{
		IO:     &IOStreams{In: strings.NewReader("hello from stdin\n"), Out: &out, ErrOut: &errOut},
		Getenv: func(string) string { return "" },
	}
	code := Main(context.Background(), []string{"probe", "--interval", "20ms", "--", "sh", "-c", "cat >&2"}, f)
	if code != 0 || !strings.Contains(errOut.String(), "hello from stdin") {
		t.Errorf("exit %d, stderr %q: the command should read gpumem's piped stdin", code, errOut.String())
	}
	// A file that is not a terminal is passed on as it is.
	file, err := os.CreateTemp(t.TempDir(), "in")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if got := commandStdin(file); got != io.Reader(file) {
		t.Errorf("commandStdin(regular file) = %v, want the file", got)
	}
}

// campaignResults is a results.jsonl of the probe campaign made with the
// stand-in torch (see accuracy/testdata): real structure, toy numbers.
var campaignResults = filepath.Join("..", "..", "accuracy", "testdata", "campaign-standin.jsonl")

func TestProbeFromCampaign(t *testing.T) {
	out := filepath.Join(t.TempDir(), "probe-runs-h100.jsonl")
	stdout, stderr, code := runCommand(t, "probe", "--from-campaign", campaignResults, "--output", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"q05-full-adamw", "q05-generate", "l1b-full-b1-s1024", "oom", "NVIDIA H100 80GB HBM3"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	// The jobs that measured nothing are named with the reason.
	for _, want := range []string{"l8b-qlora-all-gc: skipped, nothing measured: needs bitsandbytes", "q05-full-sgd: failed", "wrote 3 runs to"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, err := accuracy.ReadProbeRuns(f, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].Provenance.JobsSHA256 == "" || runs[2].Status != accuracy.StatusOOM {
		t.Errorf("records %+v", runs)
	}
	// An existing records file is not overwritten.
	if _, stderr, code := runCommand(t, "probe", "--from-campaign", campaignResults, "--output", out); code == 0 || !strings.Contains(stderr, "exists") {
		t.Errorf("second write: exit %d, %s", code, stderr)
	}
	// JSON carries the comparison and the jobs left.
	stdout, _, code = runCommand(t, "probe", "--from-campaign", campaignResults, "--format", "json")
	var got struct {
		Report accuracy.ProbeReport    `json:"report"`
		Left   []accuracy.CampaignLeft `json:"left"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 0 {
		t.Fatalf("json: exit %d, %v", code, err)
	}
	if len(got.Report.Runs) != 3 || len(got.Left) != 2 || len(got.Report.ByPhase) == 0 {
		t.Errorf("json: %d runs, %d left, %d phase summaries", len(got.Report.Runs), len(got.Left), len(got.Report.ByPhase))
	}
}

func TestProbeFromCampaignUsage(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"output alone":  {[]string{"probe", "--output", "x.jsonl"}, "add --from-campaign"},
		"with a model":  {[]string{"probe", "--from-campaign", campaignResults, "--model", "llama3-8b"}, "drop --model"},
		"with command":  {[]string{"probe", "--from-campaign", campaignResults, "--", "python", "x.py"}, "nor a command"},
		"missing file":  {[]string{"probe", "--from-campaign", "no-such.jsonl"}, "no-such.jsonl"},
		"not campaign":  {[]string{"probe", "--from-campaign", filepath.Join("..", "..", "accuracy", "testdata", "probe-runs.jsonl")}, "probe-runs.jsonl line 1"},
		"with job flag": {[]string{"probe", "--from-campaign", campaignResults, "--seq-len", "512"}, "drop --seq-len"},
	}
	for name, tt := range tests {
		_, stderr, code := runCommand(t, tt.args...)
		if code == 0 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", name, code, stderr, tt.want)
		}
	}
}
