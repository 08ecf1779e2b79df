package probe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/units"
)

const fast = 10 * time.Millisecond

// waitFrames is a shell loop that lasts until the fake nvidia-smi has
// been asked for frame n, so a command lives through a scenario's frames
// however slowly the machine samples (at most about 20 s).
func waitFrames(n int) string {
	return `i=0; while n=$(cat "$FAKE_SMI_STATE" 2>/dev/null); [ "${n:-0}" -lt ` + strconv.Itoa(n) +
		` ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done`
}

func TestRunPeaksOfProcessTree(t *testing.T) {
	dir := fakeSMI(t, "tree", true)
	// The command writes its PID and its child's for the fake nvidia-smi,
	// then lives long enough for every frame to be replayed.
	script := `echo $$ > "$D/child.pid"; sleep 30 & echo $! > "$D/grandchild.pid.tmp"; mv "$D/grandchild.pid.tmp" "$D/grandchild.pid"; ` + waitFrames(5) + `; kill $!; exit 0`
	var logBuf bytes.Buffer
	rep, err := Run(context.Background(), []string{"sh", "-c", script}, Options{
		Interval: fast,
		Env:      append(os.Environ(), "D="+dir),
		Log:      &logBuf,
	})
	if err != nil {
		t.Fatalf("Run: %v (sample errors %v)", err, rep.SampleErrors)
	}
	if rep.ExitCode != 0 {
		t.Fatalf("exit code %d, stderr %q", rep.ExitCode, rep.StderrTail)
	}
	if len(rep.GPUs) != 2 {
		t.Fatalf("got %d GPUs, want 2: %+v", len(rep.GPUs), rep.GPUs)
	}
	tests := []struct {
		gpu        int
		peak, used units.Bytes
	}{
		// GPU 0: the tree's 3000 MiB, not the 8000 MiB with process 4242.
		{0, 3000 * units.MiB, 9000 * units.MiB},
		// GPU 1: only the grandchild uses it.
		{1, 2048 * units.MiB, 2048 * units.MiB},
	}
	for _, tt := range tests {
		g := rep.GPUs[tt.gpu]
		if g.Index != tt.gpu || g.PeakBytes != tt.peak || g.DevicePeakBytes != tt.used || g.TotalBytes != 81559*units.MiB {
			t.Errorf("GPU %d: got %+v, want peak %d used %d", tt.gpu, g, tt.peak, tt.used)
		}
	}
	if p := rep.Peak(); p.Index != 0 || p.PeakBytes != 3000*units.MiB {
		t.Errorf("Peak() = %+v, want GPU 0 at 3000 MiB", p)
	}
	if rep.Samples != len(rep.Timeline) || rep.Samples < 4 {
		t.Errorf("samples %d, timeline %d: want equal and >= 4", rep.Samples, len(rep.Timeline))
	}
	// The log has one JSON sample per line, the same as the timeline.
	var lines int
	sc := bufio.NewScanner(&logBuf)
	for sc.Scan() {
		var s Sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("log line %d: %v", lines+1, err)
		}
		if len(s.GPUs) != 2 {
			t.Errorf("log line %d has %d GPUs, want 2", lines+1, len(s.GPUs))
		}
		lines++
	}
	if lines != rep.Samples {
		t.Errorf("log has %d lines, want %d", lines, rep.Samples)
	}
}

func TestRunAllProcesses(t *testing.T) {
	dir := fakeSMI(t, "tree", true)
	script := `echo $$ > "$D/child.pid"; echo 1 > "$D/grandchild.pid"; ` + waitFrames(5)
	rep, err := Run(context.Background(), []string{"sh", "-c", script}, Options{
		Interval: fast, AllProcesses: true, Env: append(os.Environ(), "D="+dir),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.GPUs[0].PeakBytes; got != 9000*units.MiB {
		t.Errorf("AllProcesses GPU 0 peak = %v, want the device's 9000 MiB", got)
	}
}

func TestRunMalformedNvidiaSMI(t *testing.T) {
	fakeSMI(t, "malformed", false)
	_, err := Run(context.Background(), []string{"true"}, Options{Interval: fast})
	if err == nil || !contains(err.Error(), "before starting true", "--query-gpu line 1", `memory.used "lots"`) {
		t.Fatalf("Run error = %v, want the malformed field named", err)
	}
}

func TestRunMalformedLater(t *testing.T) {
	fakeSMI(t, "malformed-later", false)
	rep, err := Run(context.Background(), []string{"sh", "-c", waitFrames(5)}, Options{Interval: fast})
	if err != nil {
		t.Fatalf("Run: %v; readings before the bad one succeeded, want no error", err)
	}
	if len(rep.SampleErrors) != 1 || !strings.Contains(rep.SampleErrors[0], "want 3 comma-separated fields, got 2") {
		t.Errorf("SampleErrors = %q, want the bad compute-apps line once", rep.SampleErrors)
	}
}

func TestRunDriverFailure(t *testing.T) {
	fakeSMI(t, "driver-fail", false)
	_, err := Run(context.Background(), []string{"true"}, Options{})
	if err == nil || !contains(err.Error(), "exit status 9", "couldn't communicate with the NVIDIA driver") {
		t.Fatalf("Run error = %v, want nvidia-smi's exit status and message", err)
	}
}

func TestRunMissingNvidiaSMI(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Run(context.Background(), []string{"true"}, Options{})
	if !errors.Is(err, ErrNoNvidiaSMI) || !strings.Contains(err.Error(), "install the NVIDIA driver") {
		t.Fatalf("Run error = %v, want ErrNoNvidiaSMI with an install hint", err)
	}
}

func TestRunNoSamples(t *testing.T) {
	s := oneGPU()
	flaky := &flakySampler{ok: 1, inner: s}
	rep, err := Run(context.Background(), []string{"sleep", "0.2"}, Options{Sampler: flaky, Interval: fast})
	if !errors.Is(err, ErrNoSamples) || !strings.Contains(err.Error(), "driver went away") {
		t.Fatalf("Run error = %v, want ErrNoSamples with the first failure", err)
	}
	if rep.ExitCode != 0 || len(rep.SampleErrors) != 1 {
		t.Errorf("report %+v: want exit 0 and one distinct sample error", rep)
	}
}

// flakySampler succeeds ok times, then fails.
type flakySampler struct {
	ok    int
	inner Sampler
}

func (f *flakySampler) Sample(ctx context.Context) (Snapshot, error) {
	if f.ok > 0 {
		f.ok--
		return f.inner.Sample(ctx)
	}
	return Snapshot{}, errors.New("driver went away")
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		code     int
		signal   string
		tailHas  string
		tailNot  string
		tailSize int
	}{
		{name: "success", script: "exit 0", code: 0},
		{name: "failure", script: "echo 'Traceback (most recent call last):' >&2; echo 'RuntimeError: CUDA out of memory.' >&2; exit 7", code: 7, tailHas: "CUDA out of memory"},
		{name: "crash", script: "echo segfaulting >&2; kill -SEGV $$", code: 128 + int(syscall.SIGSEGV), signal: "segmentation fault", tailHas: "segfaulting"},
		{name: "tail keeps the end", script: "i=0; while [ $i -lt 200 ]; do echo line$i >&2; i=$((i+1)); done; exit 3", code: 3, tailHas: "line199\n", tailNot: "line1\n", tailSize: 256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			rep, err := Run(context.Background(), []string{"sh", "-c", tt.script}, Options{Sampler: oneGPU(), Interval: fast, Stderr: &stderr, StderrTail: tt.tailSize})
			if err != nil {
				t.Fatal(err)
			}
			if rep.ExitCode != tt.code || rep.Signal != tt.signal {
				t.Errorf("exit %d signal %q, want %d %q", rep.ExitCode, rep.Signal, tt.code, tt.signal)
			}
			if !strings.Contains(rep.StderrTail, tt.tailHas) || (tt.tailNot != "" && strings.Contains(rep.StderrTail, tt.tailNot)) {
				t.Errorf("stderr tail %q: want %q in it and not %q", rep.StderrTail, tt.tailHas, tt.tailNot)
			}
			if tt.tailSize > 0 && len(rep.StderrTail) > tt.tailSize {
				t.Errorf("stderr tail has %d bytes, want at most %d", len(rep.StderrTail), tt.tailSize)
			}
			if !strings.HasSuffix(stderr.String(), rep.StderrTail) {
				t.Errorf("the command's stderr was not passed through: %q", stderr.String())
			}
		})
	}
}

func TestRunCommandNotFound(t *testing.T) {
	_, err := Run(context.Background(), []string{"no-such-command-gpumem"}, Options{Sampler: oneGPU()})
	if err == nil || !strings.Contains(err.Error(), "start no-such-command-gpumem") {
		t.Fatalf("Run error = %v, want the command named", err)
	}
	if _, err := Run(context.Background(), nil, Options{Sampler: oneGPU()}); err == nil {
		t.Error("Run with no command: want an error")
	}
}

// trapScript records which signal reached the command and exits with a
// code telling them apart.
const trapScript = `trap 'echo INT > "$D/sig"; exit 42' INT
trap 'echo TERM > "$D/sig"; exit 43' TERM
echo ready > "$D/ready"
while :; do sleep 0.05; done`

func TestRunForwardsSignals(t *testing.T) {
	tests := []struct {
		sig  os.Signal
		name string
		code int
	}{
		{syscall.SIGINT, "INT", 42},
		{syscall.SIGTERM, "TERM", 43},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			sigs := make(chan os.Signal, 1)
			go func() {
				waitForFile(t, filepath.Join(dir, "ready"))
				sigs <- tt.sig
			}()
			rep, err := Run(context.Background(), []string{"sh", "-c", trapScript}, Options{
				Sampler: oneGPU(), Interval: fast, Signals: sigs, Env: append(os.Environ(), "D="+dir),
			})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "sig"))
			if strings.TrimSpace(string(got)) != tt.name || rep.ExitCode != tt.code {
				t.Errorf("command saw %q and exited %d; want %s and %d", got, rep.ExitCode, tt.name, tt.code)
			}
		})
	}
}

func TestRunContextCancel(t *testing.T) {
	t.Run("terminated", func(t *testing.T) {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { waitForFile(t, filepath.Join(dir, "ready")); cancel() }()
		rep, err := Run(ctx, []string{"sh", "-c", trapScript}, Options{Sampler: oneGPU(), Interval: fast, Env: append(os.Environ(), "D="+dir)})
		if err != nil {
			t.Fatal(err)
		}
		if rep.ExitCode != 43 {
			t.Errorf("exit %d, want 43 (the command's SIGTERM handler)", rep.ExitCode)
		}
	})
	t.Run("killed after the grace period", func(t *testing.T) {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { waitForFile(t, filepath.Join(dir, "ready")); cancel() }()
		script := `trap '' TERM; echo ready > "$D/ready"; while :; do sleep 0.05; done`
		rep, err := Run(ctx, []string{"sh", "-c", script}, Options{Sampler: oneGPU(), Interval: fast, KillGrace: 100 * time.Millisecond, Env: append(os.Environ(), "D="+dir)})
		if err != nil {
			t.Fatal(err)
		}
		if rep.ExitCode != 128+int(syscall.SIGKILL) || rep.Signal != "killed" {
			t.Errorf("exit %d signal %q, want 137 killed", rep.ExitCode, rep.Signal)
		}
	})
}

func TestProgress(t *testing.T) {
	s := oneGPU()
	s.snap.GPUs[0].Used = 3 * units.GiB
	for _, tty := range []bool{true, false} {
		var out bytes.Buffer
		_, err := Run(context.Background(), []string{"sleep", "0.1"}, Options{
			Sampler: s, Interval: fast, Progress: &out, ProgressTTY: tty, AllProcesses: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		if !tty {
			if out.Len() != 0 {
				t.Errorf("not a TTY: progress wrote %q, want nothing", out.String())
			}
			continue
		}
		if !contains(out.String(), "\r\x1b[K", "probe 0s", "GPU0 3.00 GiB (peak 3.00 GiB)") || !strings.HasSuffix(out.String(), "\n") {
			t.Errorf("TTY progress = %q", out.String())
		}
	}
}

func TestStatusLine(t *testing.T) {
	s := Sample{ElapsedMS: 65_400, GPUs: []GPUUsage{
		{Index: 0, ProcessBytes: 12 * units.GiB},
		{Index: 1},
		{Index: 2, ProcessBytes: 0},
	}}
	peaks := []GPUPeak{{Index: 0, PeakBytes: 13 * units.GiB}, {Index: 2, PeakBytes: units.GiB}}
	got := statusLine(s, peaks)
	want := "probe 1m5s  GPU0 12.00 GiB (peak 13.00 GiB)  GPU2 0 B (peak 1.00 GiB)"
	if got != want {
		t.Errorf("statusLine = %q, want %q", got, want)
	}
	if got := statusLine(Sample{}, nil); got != "probe 0s  waiting for GPU memory" {
		t.Errorf("idle statusLine = %q", got)
	}
}

func TestTailBuffer(t *testing.T) {
	tb := newTailBuffer(10)
	tb.Write([]byte("abc\n"))
	if got := tb.String(); got != "abc\n" {
		t.Errorf("short tail = %q", got)
	}
	tb.Write([]byte("0123456789ab\nxy\n"))
	if got := tb.String(); got != "xy\n" {
		t.Errorf("cut tail = %q, want it to start at a line boundary", got)
	}
}

func TestTimelineThinning(t *testing.T) {
	r := newRecorder(Options{MaxTimeline: 8}.withDefaults(), time.Unix(0, 0))
	for i := 0; i < 100; i++ {
		r.record(Sample{ElapsedMS: int64(i), GPUs: []GPUUsage{{Index: 0, ProcessBytes: units.Bytes(i)}}})
	}
	rep := r.report()
	if rep.Samples != 100 || len(rep.Timeline) > 8 || len(rep.Timeline) < 4 {
		t.Fatalf("samples %d, timeline %d: want 100 and between 4 and 8", rep.Samples, len(rep.Timeline))
	}
	// Evenly spaced from the first sample on.
	step := rep.Timeline[1].ElapsedMS - rep.Timeline[0].ElapsedMS
	for i, s := range rep.Timeline {
		if s.ElapsedMS != int64(i)*step {
			t.Errorf("timeline[%d] at %d ms, want %d", i, s.ElapsedMS, int64(i)*step)
		}
	}
	// The peak sees every sample.
	if p := rep.GPUs[0]; p.PeakBytes != 99 || p.PeakAtMS != 99 {
		t.Errorf("peak %+v, want the last sample's 99", p)
	}
}

// The command's stdout and stderr may share one writer that is not safe
// for concurrent use (run with -race).
func TestRunSharedOutput(t *testing.T) {
	var out bytes.Buffer
	script := `i=0; while [ $i -lt 200 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done`
	rep, err := Run(context.Background(), []string{"sh", "-c", script}, Options{Sampler: oneGPU(), Interval: fast, Stdout: &out, Stderr: &out})
	if err != nil || rep.ExitCode != 0 {
		t.Fatal(err, rep.ExitCode)
	}
	for _, want := range []string{"out0\n", "err0\n", "out199\n", "err199\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("shared output lacks %q", want)
		}
	}
	if n := strings.Count(out.String(), "\n"); n != 400 {
		t.Errorf("shared output has %d lines, want 400", n)
	}
}

func TestRunClosedSignals(t *testing.T) {
	sigs := make(chan os.Signal)
	close(sigs)
	rep, err := Run(context.Background(), []string{"sh", "-c", "sleep 0.2; exit 5"}, Options{Sampler: oneGPU(), Interval: fast, Signals: sigs})
	if err != nil || rep.ExitCode != 5 {
		t.Fatalf("closed signal channel: %v, exit %d; want the command to run to its exit 5", err, rep.ExitCode)
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestRunLogWriteError(t *testing.T) {
	rep, err := Run(context.Background(), []string{"sleep", "0.1"}, Options{Sampler: oneGPU(), Interval: fast, Log: failingWriter{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.SampleErrors) != 1 || !strings.Contains(rep.SampleErrors[0], "write sample log: disk full") {
		t.Errorf("SampleErrors %q: want the log failure once", rep.SampleErrors)
	}
	if rep.Samples == 0 {
		t.Error("sampling must go on when the log fails")
	}
}
