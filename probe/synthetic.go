package probe

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/memory"
)

// SyntheticSchema is the "schema" value of the synthetic probe's result line.
const SyntheticSchema = "gpumem-probe/1"

// SyntheticScript is the PyTorch program `gpumem probe --synthetic` runs:
// it builds the model from its config.json with random weights on the GPU,
// applies the job and prints one [SyntheticResult] JSON line on stdout.
//
//go:embed script/probe.py
var SyntheticScript []byte

// Default step counts of the synthetic probe.
const (
	DefaultWarmupSteps   = 2
	DefaultMeasuredSteps = 3
	// maxProbeStdout bounds what is kept of the script's stdout; the result
	// line is the last one.
	maxProbeStdout = 1 << 20
)

// Errors of the synthetic probe that callers turn into advice.
var (
	// ErrNoPython reports that the Python interpreter is not on PATH.
	ErrNoPython = errors.New("python3 not found on PATH: install Python 3 with PyTorch (CUDA build) and transformers, e.g. pip install torch transformers peft, or pass --python")
	// ErrMissingModule reports that a Python package the job needs is not installed.
	ErrMissingModule = errors.New("a Python package the probe needs is missing")
	// ErrNoCUDA reports that PyTorch sees no GPU.
	ErrNoCUDA = errors.New("PyTorch sees no CUDA GPU")
	// ErrOOM reports that the job ran out of GPU memory; the result still
	// carries the peaks up to the failed allocation.
	ErrOOM = errors.New("the job ran out of GPU memory")
	// ErrNoResult reports that the script printed no result line.
	ErrNoResult = errors.New("the probe script printed no result line")
)

// installHints says what to install for each module the script may miss.
var installHints = map[string]string{
	"torch":        "install PyTorch with CUDA support (https://pytorch.org/get-started/locally/, e.g. pip install torch)",
	"transformers": "pip install transformers",
	"peft":         "pip install peft (needed for --method lora and qlora)",
	"bitsandbytes": "pip install bitsandbytes (needed for qlora and 8-bit or paged optimizers)",
}

// SyntheticOptions configure [RunSynthetic].
type SyntheticOptions struct {
	// Config is the model's config.json.
	Config []byte
	// Job is the job to run; its JSON form is what the script reads.
	Job memory.Job
	// Python is the interpreter (default "python3" on PATH).
	Python string
	// Warmup and Steps are the warm-up and measured steps (defaults
	// [DefaultWarmupSteps], [DefaultMeasuredSteps]).
	Warmup, Steps int
	// Device is the CUDA device index the script uses.
	Device int
	// Probe configures sampling, signals, progress and the log of the
	// script's run. Its Stdout receives the script's stdout as well; its
	// Dir is replaced by the directory holding the script.
	Probe Options
}

// SyntheticRun is the outcome of [RunSynthetic].
type SyntheticRun struct {
	// Result is what the script measured with torch.
	Result SyntheticResult `json:"result"`
	// Report is what nvidia-smi showed for the script's process tree.
	Report Report `json:"report"`
}

// Measured merges the script's torch figures with the largest nvidia-smi
// figure of its process tree.
func (r SyntheticRun) Measured() Measured {
	m := Measured{
		AllocatedPeakBytes: r.Result.AllocatedPeakBytes,
		ReservedPeakBytes:  r.Result.ReservedPeakBytes,
		DevicePeakBytes:    r.Result.DevicePeakBytes,
		Phases:             r.Result.Phases,
		Components:         r.Result.Components,
	}
	// The script uses one GPU; the most loaded GPU of its process tree is
	// that one (CUDA and nvidia-smi may number devices differently).
	m.DevicePeakBytes = max(m.DevicePeakBytes, r.Report.Peak().PeakBytes)
	return m
}

// RunSynthetic writes the embedded script and the job to a temporary
// directory, runs the script under [Run] and parses its result line. A
// script that reports a failure returns an error wrapping [ErrMissingModule],
// [ErrNoCUDA] or [ErrOOM] (with the partial result); a script that crashes
// returns its exit code and the end of its stderr.
func RunSynthetic(ctx context.Context, opts SyntheticOptions) (SyntheticRun, error) {
	if len(opts.Config) == 0 {
		return SyntheticRun{}, errors.New("synthetic probe: no config.json given")
	}
	python := cmp.Or(opts.Python, "python3")
	pyPath, err := exec.LookPath(python)
	if err != nil {
		if opts.Python != "" {
			return SyntheticRun{}, fmt.Errorf("synthetic probe: --python %s: %w", opts.Python, err)
		}
		return SyntheticRun{}, ErrNoPython
	}
	dir, err := os.MkdirTemp("", "gpumem-probe-")
	if err != nil {
		return SyntheticRun{}, fmt.Errorf("synthetic probe: %w", err)
	}
	defer os.RemoveAll(dir)
	args, err := WriteSynthetic(dir, opts)
	if err != nil {
		return SyntheticRun{}, err
	}
	out := newTailBuffer(maxProbeStdout)
	popts := opts.Probe
	popts.Dir = dir
	popts.Stdout = out
	if opts.Probe.Stdout != nil {
		popts.Stdout = io.MultiWriter(opts.Probe.Stdout, out)
	}
	rep, runErr := Run(ctx, append([]string{pyPath, "-u"}, args...), popts)
	run := SyntheticRun{Report: rep}
	if runErr != nil && rep.Command == nil {
		return run, fmt.Errorf("synthetic probe: %w", runErr)
	}
	res, perr := ParseSyntheticOutput([]byte(out.String()))
	if perr != nil {
		if rep.ExitCode != 0 {
			return run, fmt.Errorf("synthetic probe: %s exited with status %d: %w\n%s", filepath.Base(pyPath), rep.ExitCode, perr, indentTail(rep.StderrTail))
		}
		return run, fmt.Errorf("synthetic probe: %w", perr)
	}
	run.Result = res
	if err := res.Err(); err != nil {
		return run, fmt.Errorf("synthetic probe: %w", err)
	}
	return run, nil
}

// WriteSynthetic writes the synthetic probe's files (probe.py,
// config.json, job.json) into dir and returns the script's arguments,
// relative to dir: `python3 -u ARGS > result.jsonl` run in dir, on any
// GPU host, prints the result line [ParseSyntheticOutput] reads.
func WriteSynthetic(dir string, opts SyntheticOptions) ([]string, error) {
	if len(opts.Config) == 0 {
		return nil, errors.New("synthetic probe: no config.json given")
	}
	job, err := json.MarshalIndent(opts.Job, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("synthetic probe: encode job: %w", err)
	}
	files := []struct {
		name string
		data []byte
	}{{"probe.py", SyntheticScript}, {"config.json", opts.Config}, {"job.json", job}}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o600); err != nil {
			return nil, fmt.Errorf("synthetic probe: %w", err)
		}
	}
	warmup, steps := opts.Warmup, opts.Steps
	if warmup <= 0 {
		warmup = DefaultWarmupSteps
	}
	if steps <= 0 {
		steps = DefaultMeasuredSteps
	}
	return []string{
		"probe.py",
		"--config", "config.json",
		"--job", "job.json",
		"--warmup", strconv.Itoa(warmup),
		"--steps", strconv.Itoa(steps),
		"--device", strconv.Itoa(opts.Device),
	}, nil
}

// indentTail formats the end of a stderr for an error message.
func indentTail(tail string) string {
	tail = strings.TrimRight(tail, "\n")
	if tail == "" {
		return "  (no stderr)"
	}
	lines := strings.Split(tail, "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// ParseSyntheticOutput finds the result line in the script's stdout (the
// last line that is a JSON object with a "schema" key) and decodes and
// checks it. Errors say which line and which field is wrong.
func ParseSyntheticOutput(stdout []byte) (SyntheticResult, error) {
	line, n := lastResultLine(stdout)
	if line == nil {
		return SyntheticResult{}, fmt.Errorf("%w (want one JSON line with \"schema\": %q on stdout)", ErrNoResult, SyntheticSchema)
	}
	var res SyntheticResult
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&res); err != nil {
		return SyntheticResult{}, fmt.Errorf("probe JSON (stdout line %d): %w", n, err)
	}
	if err := res.validate(); err != nil {
		return SyntheticResult{}, fmt.Errorf("probe JSON (stdout line %d): %w", n, err)
	}
	return res, nil
}

// lastResultLine returns the last stdout line that looks like the result
// and its 1-based line number.
func lastResultLine(stdout []byte) ([]byte, int) {
	var last []byte
	lastN := 0
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 0, 64<<10), maxProbeStdout)
	for n := 1; sc.Scan(); n++ {
		t := bytes.TrimSpace(sc.Bytes())
		if bytes.HasPrefix(t, []byte("{")) && bytes.Contains(t, []byte(`"schema"`)) {
			last, lastN = append([]byte(nil), t...), n
		}
	}
	return last, lastN
}
