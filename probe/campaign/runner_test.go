package campaign

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpumem/gpumem/probe"
)

// These tests run campaign.py and the real probe script with the real
// python3 against the stand-in torch, transformers, peft and pynvml of
// probe/testdata/fakepy: the runner's control flow and the probe's are
// real, the byte counts a toy allocator's.

// line is the part of a result line the tests read.
type line struct {
	Schema   string          `json:"schema"`
	ID       string          `json:"id"`
	Status   string          `json:"status"`
	Reason   string          `json:"reason"`
	ExitCode *int            `json:"exit_code"`
	Result   json.RawMessage `json:"result"`
	GPU      struct {
		Name           string `json:"name"`
		CUDATotalBytes int64  `json:"cuda_total_bytes"`
		Driver         string `json:"driver"`
	} `json:"gpu"`
	Software  map[string]string `json:"software"`
	StderrTip string            `json:"stderr_tail"`
}

// runCampaign runs campaign.py with args; env adds variables, fakes is the
// PYTHONPATH (the stand-ins by default). It returns the result lines by
// job id, in file order, and the runner's stderr.
func runCampaign(t *testing.T, out string, fakes string, env []string, args ...string) ([]line, string) {
	t.Helper()
	python := realPython(t)
	if fakes == "" {
		fakes = standIns(t)
	}
	cmd := exec.Command(python, append([]string{"campaign.py", "--out", out, "--python", python}, args...)...)
	cmd.Env = append([]string{"PYTHONPATH=" + fakes, "PATH=" + filepath.Dir(python), "HOME=" + out}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("campaign.py: %v\n%s", err, stderr.String())
	}
	return readLines(t, filepath.Join(out, "results.jsonl")), stderr.String()
}

func readLines(t *testing.T, path string) []line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []line
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if l.Schema != ResultSchema {
			t.Errorf("%s: schema %q", l.ID, l.Schema)
		}
		lines = append(lines, l)
	}
	return lines
}

func byID(lines []line) map[string]line {
	m := map[string]line{}
	for _, l := range lines {
		m[l.ID] = l
	}
	return m
}

func standIns(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "fakepy"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRunnerWholeCampaign runs every job of jobs.json: each one that needs
// only torch, transformers and peft is measured, and the ones that need
// bitsandbytes or flash-attn are skipped, saying which package is missing.
func TestRunnerWholeCampaign(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	lines, stderr := runCampaign(t, out, "", []string{"FAKE_GPU_NAME=NVIDIA H200", "FAKE_NVML_TOTAL_BYTES=150000000000", "FAKE_TORCH_TOTAL_BYTES=150000000000"}, "--budget", "600")
	f, _, err := Build(Matrix())
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(f.Jobs) {
		t.Fatalf("%d result lines for %d jobs\n%s", len(lines), len(f.Jobs), stderr)
	}
	for i, l := range lines {
		job := f.Jobs[i]
		if l.ID != job.ID {
			t.Errorf("line %d is job %s, want %s (the runner keeps the list's order)", i+1, l.ID, job.ID)
		}
		needs := ""
		for _, m := range job.Requires {
			if m == "bitsandbytes" || m == "flash_attn" {
				needs = m
			}
		}
		switch {
		case needs != "":
			if l.Status != "skipped" || !strings.Contains(l.Reason, needs) {
				t.Errorf("%s: %s %q, want skipped naming %s", l.ID, l.Status, l.Reason, needs)
			}
		case l.Status != "ok":
			t.Errorf("%s: %s %q\n%s", l.ID, l.Status, l.Reason, l.StderrTip)
		default:
			res, err := probe.ParseSyntheticOutput(l.Result)
			if err != nil {
				t.Errorf("%s: result: %v", l.ID, err)
			}
			if res.Device.Name != "NVIDIA H200" || l.GPU.Name != "NVIDIA H200" || l.GPU.CUDATotalBytes != 150000000000 || l.GPU.Driver == "" {
				t.Errorf("%s: gpu %+v, device %+v: want the name, the memory CUDA sees and the driver", l.ID, l.GPU, res.Device)
			}
			if l.Software["transformers"] == "" || l.Software["torch"] == "" || l.Software["python"] == "" {
				t.Errorf("%s: software %v: want the versions", l.ID, l.Software)
			}
		}
	}
	for _, name := range []string{"environment.json", "summary.txt", filepath.Join("logs", "q05-full-adamw.log"), filepath.Join("jobs", "q05-full-adamw", "config.json")} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
}

// TestRunnerOutcomes: an out-of-memory job keeps its peaks, a probe error
// is "failed", a process that dies without a result line "crashed", and a
// job that outlives --job-timeout is killed.
func TestRunnerOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, status, reason string
		env                  []string
		args                 []string
	}{
		{"oom", "oom", "out of memory", []string{"FAKE_TORCH_TOTAL_BYTES=2000000000", "FAKE_NVML_TOTAL_BYTES=80000000000"}, nil},
		{"failed", "failed", "exception: RuntimeError: fake forward failed", []string{"FAKE_TORCH_CRASH=1"}, nil},
		{"crashed", "crashed", "exit code 139 and no result line", []string{"FAKE_TORCH_EXIT=139"}, nil},
		{"timeout", "timeout", "killed after --job-timeout 2 s", []string{"FAKE_TORCH_SLEEP=30"}, []string{"--job-timeout", "2"}},
		{"too large", "skipped", "exceeds this GPU's", []string{"FAKE_NVML_TOTAL_BYTES=4000000000"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--only", "q05-full-adamw"}, tt.args...)
			lines, stderr := runCampaign(t, t.TempDir(), "", tt.env, args...)
			if len(lines) != 1 {
				t.Fatalf("%d lines\n%s", len(lines), stderr)
			}
			l := lines[0]
			if l.Status != tt.status || !strings.Contains(l.Reason, tt.reason) {
				t.Fatalf("%s %q, want %s with %q\n%s", l.Status, l.Reason, tt.status, tt.reason, stderr)
			}
			switch tt.status {
			case "oom":
				res, err := probe.ParseSyntheticOutput(l.Result)
				if err != nil || res.AllocatedPeakBytes <= 0 {
					t.Errorf("an OOM keeps the peak up to the failure: %+v, %v", res, err)
				}
			case "failed", "crashed":
				if l.StderrTip == "" {
					t.Error("a failed job keeps the end of its stderr")
				}
			}
		})
	}
}

// TestRunnerMissingPackage: without peft on the path, LoRA jobs are
// skipped and say so, and full fine-tuning runs.
func TestRunnerMissingPackage(t *testing.T) {
	t.Parallel()
	src := standIns(t)
	fakes := t.TempDir()
	for _, name := range []string{"torch", "transformers", "pynvml.py"} {
		if err := os.Symlink(filepath.Join(src, name), filepath.Join(fakes, name)); err != nil {
			t.Fatal(err)
		}
	}
	lines, _ := runCampaign(t, t.TempDir(), fakes, nil, "--only", "q05-full-adamw,l3b-lora-attn")
	got := byID(lines)
	if l := got["l3b-lora-attn"]; l.Status != "skipped" || !strings.Contains(l.Reason, "needs peft") {
		t.Errorf("LoRA without peft: %s %q", l.Status, l.Reason)
	}
	if l := got["q05-full-adamw"]; l.Status != "ok" {
		t.Errorf("full fine-tuning: %s %q", l.Status, l.Reason)
	}
}

// TestRunnerBudgetAndResume: jobs that cannot start within the budget are
// written as not_run; a second run in the same folder keeps what finished,
// runs the rest, and leaves one line per job.
func TestRunnerBudgetAndResume(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	only := "q05-generate,l1b-generate,q05-full-gc,q05-full-sgd"
	// Each forward sleeps 0.6 s; a generate of 128 tokens alone outlasts
	// the 3 s budget, so the first job is killed when it ends and no
	// other job may start with less than 2 s left.
	lines, stderr := runCampaign(t, out, "", []string{"FAKE_TORCH_SLEEP=0.6"}, "--only", only, "--budget", "3", "--min-start", "2")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4\n%s", len(lines), stderr)
	}
	first := lines[0]
	if first.Status != "not_run" || !strings.Contains(first.Reason, "killed when the time budget ran out") {
		t.Errorf("first job: %s %q, want killed by the budget", first.Status, first.Reason)
	}
	for _, l := range lines[1:] {
		if l.Status != "not_run" || !strings.Contains(l.Reason, "time budget ran out") {
			t.Errorf("%s: %s %q, want not_run for the budget", l.ID, l.Status, l.Reason)
		}
	}
	// Second run: no sleep, a new budget; the not_run jobs run now.
	lines, stderr = runCampaign(t, out, "", nil, "--only", "q05-generate,l1b-generate", "--budget", "120")
	got := byID(lines)
	if got["q05-generate"].Status != "ok" || got["l1b-generate"].Status != "ok" {
		t.Fatalf("resumed: %+v\n%s", got, stderr)
	}
	// Third run: the two finished jobs are kept, not run again.
	lines, stderr = runCampaign(t, out, "", []string{"FAKE_TORCH_CRASH=1"}, "--only", only, "--budget", "120")
	if !strings.Contains(stderr, "kept from the earlier run: q05-generate: ok") {
		t.Errorf("third run did not keep q05-generate:\n%s", stderr)
	}
	got = byID(lines)
	if len(lines) != 4 || got["q05-generate"].Status != "ok" || got["l1b-generate"].Status != "ok" || got["q05-full-gc"].Status != "failed" {
		t.Errorf("after resuming: %d lines, %+v", len(lines), got)
	}
	// --resume FILE carries an earlier run's results into a new folder.
	lines, _ = runCampaign(t, t.TempDir(), "", []string{"FAKE_TORCH_CRASH=1"}, "--only", "q05-generate", "--resume", filepath.Join(out, "results.jsonl"))
	if got := byID(lines); got["q05-generate"].Status != "ok" || len(lines) != 2 {
		t.Errorf("--resume: %d lines, %+v; want the two finished jobs kept", len(lines), got)
	}
}

// realPython is the interpreter python3 on PATH runs (a version manager's
// python3 may be a shell script that needs a full PATH). It is looked up
// once: a version manager's shim can take seconds.
func realPython(t *testing.T) string {
	t.Helper()
	pythonOnce.Do(func() {
		out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
		pythonPath, pythonErr = strings.TrimSpace(string(out)), err
	})
	if pythonErr != nil {
		t.Fatalf("the campaign's tests need python3 on PATH: %v", pythonErr)
	}
	return pythonPath
}

var (
	pythonOnce sync.Once
	pythonPath string
	pythonErr  error
)
