package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/gpumem/gpumem/units"
)

// Defaults of [Options].
const (
	DefaultInterval   = 500 * time.Millisecond
	DefaultKillGrace  = 10 * time.Second
	DefaultStderrTail = 4096
	// DefaultMaxTimeline bounds the samples a report's timeline keeps
	// (about 1.4 hours at the default interval).
	DefaultMaxTimeline = 10000
	// sampleTimeout bounds one nvidia-smi reading; a hung driver must not
	// stall the probe.
	sampleTimeout = 15 * time.Second
	// maxSampleErrors is how many distinct sampling errors a report keeps.
	maxSampleErrors = 5
)

// ErrNoSamples reports that the command ran but no GPU reading succeeded.
var ErrNoSamples = errors.New("no GPU memory sample succeeded")

// Options configure [Run]. The zero value samples with nvidia-smi every
// half second and discards the command's output.
type Options struct {
	// Sampler reads GPU memory; nil means [NvidiaSMI] found on PATH.
	Sampler Sampler
	// Interval is the time between samples (default [DefaultInterval]).
	Interval time.Duration
	// AllProcesses counts the memory of every process on each GPU instead
	// of the command's process tree. Use it in containers whose PIDs differ
	// from the ones nvidia-smi reports.
	AllProcesses bool
	// Proc is the procfs the process tree is read from (default /proc).
	Proc fs.FS

	// Stdin, Stdout and Stderr are the command's streams (nil: none).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Env is the command's environment (nil: the probe's own); Dir its
	// working directory.
	Env []string
	Dir string

	// Signals are forwarded to the command's process group as they arrive;
	// the caller registers them (signal.Notify with SIGINT and SIGTERM).
	Signals <-chan os.Signal
	// KillGrace is how long the command may run after ctx ends and it was
	// sent SIGTERM, before it is killed (default [DefaultKillGrace]).
	KillGrace time.Duration

	// Progress receives a one-line live display when ProgressTTY is true;
	// nothing is drawn otherwise (output piped to a file stays clean).
	Progress    io.Writer
	ProgressTTY bool
	// Log receives every sample as one JSON line (--log).
	Log io.Writer
	// StderrTail is how many bytes of the command's stderr the report
	// keeps (default [DefaultStderrTail]).
	StderrTail int
	// MaxTimeline bounds the report's timeline (default
	// [DefaultMaxTimeline]); a longer run keeps an evenly thinned
	// timeline, while peaks and Log see every sample.
	MaxTimeline int
	// Now returns the current time (default time.Now).
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Sampler == nil {
		o.Sampler = NvidiaSMI{}
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.KillGrace <= 0 {
		o.KillGrace = DefaultKillGrace
	}
	if o.StderrTail <= 0 {
		o.StderrTail = DefaultStderrTail
	}
	if o.MaxTimeline <= 1 {
		o.MaxTimeline = DefaultMaxTimeline
	}
	if o.Proc == nil {
		o.Proc = os.DirFS("/proc")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Report is what a probe measured.
type Report struct {
	Command []string  `json:"command"`
	Start   time.Time `json:"start"`
	// DurationMS is the command's wall time in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// ExitCode is the command's exit status; 128+n when signal n killed it.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that killed the command, if one did.
	Signal string `json:"signal,omitempty"`
	// StderrTail is the end of the command's stderr.
	StderrTail string `json:"stderr_tail,omitempty"`
	// GPUs is the peak per device, in index order.
	GPUs []GPUPeak `json:"gpus"`
	// Samples is how many readings succeeded (the timeline may keep fewer).
	Samples int `json:"samples"`
	// SampleErrors lists distinct reading failures (at most a few).
	SampleErrors []string `json:"sample_errors,omitempty"`
	// Timeline is the successful samples in order, thinned evenly beyond
	// Options.MaxTimeline.
	Timeline []Sample `json:"timeline,omitempty"`
}

// GPUPeak is the peak memory seen on one device.
type GPUPeak struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	// PeakBytes is the largest memory the process tree held on the device
	// (what nvidia-smi shows for it: context, reserved memory, libraries).
	PeakBytes units.Bytes `json:"peak_bytes"`
	// PeakAtMS is when PeakBytes was first seen, since the start.
	PeakAtMS int64 `json:"peak_at_ms"`
	// DevicePeakBytes is the largest memory.used of the whole device.
	DevicePeakBytes units.Bytes `json:"device_used_peak_bytes"`
	// TotalBytes is the size of the device.
	TotalBytes units.Bytes `json:"total_bytes"`
}

// Peak returns the largest per-GPU peak of the process tree: the memory
// of the most loaded GPU, the figure an estimate's device peak predicts.
func (r Report) Peak() GPUPeak {
	var best GPUPeak
	for _, g := range r.GPUs {
		if g.PeakBytes > best.PeakBytes {
			best = g
		}
	}
	return best
}

// Run starts command, samples the GPU memory of its process tree until it
// exits, and returns the peaks and the timeline. A command that fails is
// not an error of Run: its status is in Report.ExitCode and the end of its
// stderr in Report.StderrTail. Run returns an error when the GPUs cannot
// be read before the start, when the command cannot be started, or when
// no reading succeeded during the run (the report is still filled in).
//
// When ctx ends, the command's process group gets SIGTERM and, after
// KillGrace, SIGKILL.
func Run(ctx context.Context, command []string, opts Options) (Report, error) {
	if len(command) == 0 {
		return Report{}, errors.New("probe: no command given")
	}
	opts = opts.withDefaults()
	if _, err := sampleOnce(ctx, opts.Sampler); err != nil {
		return Report{}, fmt.Errorf("probe: read GPU memory before starting %s: %w", command[0], err)
	}
	tail := newTailBuffer(opts.StderrTail)
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin = opts.Stdin
	// exec copies stdout and stderr in two goroutines; one lock keeps
	// them from writing at once to a writer they share.
	var mu sync.Mutex
	if opts.Stdout != nil {
		cmd.Stdout = &lockedWriter{mu: &mu, w: opts.Stdout}
	}
	cmd.Stderr = tail
	if opts.Stderr != nil {
		cmd.Stderr = &lockedWriter{mu: &mu, w: io.MultiWriter(opts.Stderr, tail)}
	}
	cmd.Env, cmd.Dir = opts.Env, opts.Dir
	cmd.WaitDelay = 5 * time.Second // a grandchild holding the stderr pipe must not block Wait
	startInGroup(cmd)

	start := opts.Now()
	if err := cmd.Start(); err != nil {
		return Report{}, fmt.Errorf("probe: start %s: %w", command[0], err)
	}
	rec := newRecorder(opts, start)
	stopSampling := rec.loop(cmd.Process.Pid)
	waitErr := supervise(ctx, cmd, opts)
	stopSampling()

	rep := rec.report()
	rep.Command = append([]string(nil), command...)
	rep.Start = start
	rep.DurationMS = opts.Now().Sub(start).Milliseconds()
	rep.StderrTail = tail.String()
	if cmd.ProcessState != nil {
		rep.ExitCode, rep.Signal = exitStatus(cmd.ProcessState)
	} else if waitErr != nil {
		return rep, fmt.Errorf("probe: wait for %s: %w", command[0], waitErr)
	}
	if rep.Samples == 0 {
		first := "none taken"
		if len(rep.SampleErrors) > 0 {
			first = rep.SampleErrors[0]
		}
		return rep, fmt.Errorf("probe: %w during %s (first error: %s)", ErrNoSamples, command[0], first)
	}
	return rep, nil
}

// supervise waits for cmd, forwarding signals and ending it when ctx ends.
func supervise(ctx context.Context, cmd *exec.Cmd, opts Options) error {
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	ctxDone, sigs := ctx.Done(), opts.Signals
	var kill <-chan time.Time
	for {
		select {
		case err := <-waitErr:
			return err
		case sig, ok := <-sigs:
			if !ok {
				sigs = nil // closed by the caller: stop forwarding
				continue
			}
			_ = signalGroup(cmd.Process, sig) // the child may have just exited
		case <-ctxDone:
			ctxDone = nil
			_ = signalGroup(cmd.Process, terminateSignal)
			kill = time.After(opts.KillGrace)
		case <-kill:
			_ = signalGroup(cmd.Process, os.Kill)
		}
	}
}

// sampleOnce takes one reading with a bounded time.
func sampleOnce(ctx context.Context, s Sampler) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sampleTimeout)
	defer cancel()
	return s.Sample(ctx)
}
