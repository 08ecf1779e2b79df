package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/gpumem/gpumem/accuracy"
	"github.com/gpumem/gpumem/calibrate"
	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/internal/fsutil"
	"github.com/gpumem/gpumem/internal/jsonkeys"
	"github.com/gpumem/gpumem/jobfile"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/modelref"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/probe"
	"github.com/gpumem/gpumem/report"
)

type probeOptions struct {
	est          estimateOptions // the job, when described (--model and job flags)
	Synthetic    bool
	Interval     time.Duration
	Log          string
	Record       string
	AllProcesses bool
	Python       string
	Warmup       int
	Steps        int
	Device       int
	Calibration  string
	JobFile      string
	WriteScript  string
	FromResult   string
	FromCampaign string
	Output       string
	Command      []string
}

// probeOwnFlags are the probe's flags that do not describe the job.
var probeOwnFlags = map[string]bool{
	"synthetic": true, "interval": true, "log": true, "record": true, "all-processes": true, "python": true,
	"warmup": true, "steps": true, "device": true, "calibration": true, "job": true, "model": true,
	"write-script": true, "from-result": true, "from-campaign": true, "output": true,
	"format": true, "units": true,
}

// probeSignals registers the signals the probe forwards to the command
// (a variable so tests can replace it).
var probeSignals = func() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}

func newProbeCmd(f *Factory, g *globalOptions) *cobra.Command {
	o := &probeOptions{}
	o.est.withEnv(f)
	cmd := &cobra.Command{
		Use:     "probe [flags] -- COMMAND [ARGS...]",
		GroupID: "estimate",
		Short:   "Measure the GPU memory of a real run and compare it with the estimate",
		Long: `Run a command on a GPU host and measure the GPU memory of its process tree on every GPU,
through nvidia-smi, until it exits: the peak per GPU, when it occurred, and the timeline
(--log writes every sample as a JSON line). The command's output goes to stderr, its exit
code becomes gpumem's, and Ctrl-C or SIGTERM is forwarded to it.

Describe the job as for 'gpumem estimate' (--model and job flags) to compare the measured
peak with the estimate. nvidia-smi shows what the estimate calls the device peak.

--synthetic runs a small PyTorch program instead (built into gpumem): it builds the model
from its config.json with random weights on the GPU, applies the job (dtype, LoRA or QLoRA,
gradient checkpointing, attention, optimizer), runs warm-up and measured steps, and reports
torch's allocated and reserved peaks per phase and component. It needs Python with a CUDA
build of PyTorch, transformers, and peft or bitsandbytes for LoRA and QLoRA.

--write-script DIR writes that program, the config and the job to DIR to run on another
host; --from-result FILE compares the result line it printed.

--from-campaign FILE reads the results.jsonl of the probe campaign (probe/campaign, run on
a GPU host with python3 probe/campaign/campaign.py), estimates every measured job again
for the GPU that ran it and compares by measure and by phase; --output writes the measured
runs, with their provenance, as records for the accuracy report
(accuracy/testdata/probe-runs-*.jsonl).

--record appends the job, the estimate and the measurement to a runs file for
'gpumem calibrate'.

The probe was written without access to a GPU: it is tested against stand-ins for
nvidia-smi and PyTorch, not yet on real hardware.`,
		Example: `  # measure a training launch and compare with the estimate of its job
  gpumem probe --model llama3-8b --seq-len 4096 --method lora -- torchrun --nproc-per-node 8 train.py

  # build the model with random weights, run 3 measured steps, compare every phase
  gpumem probe --synthetic --model qwen2.5-0.5b --seq-len 2048 --per-device-batch 4 --record runs.jsonl

  # just watch a command's GPU memory, with a sample log
  gpumem probe --log samples.jsonl -- python serve.py

  # compare a probe campaign's results and keep them as accuracy records
  gpumem probe --from-campaign results.jsonl --output accuracy/testdata/probe-runs-h100.jsonl`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Command = args
			if err := o.check(cmd); err != nil {
				return err
			}
			return probeRun(cmd.Context(), f, g, o, cmd)
		},
	}
	fs := cmd.Flags()
	addEstimateFlags(fs, &o.est)
	fs.BoolVar(&o.Synthetic, "synthetic", false, "run the built-in PyTorch probe of the described job instead of a command")
	fs.DurationVar(&o.Interval, "interval", probe.DefaultInterval, "time between GPU memory samples")
	fs.StringVar(&o.Log, "log", "", "write every sample to this file as JSON lines")
	fs.StringVar(&o.Record, "record", "", "append the job, estimate and measurement to this runs file (for gpumem calibrate)")
	fs.BoolVar(&o.AllProcesses, "all-processes", false, "count every process on the GPUs, not only the command's (containers whose PIDs nvidia-smi does not show)")
	fs.StringVar(&o.Python, "python", "", "Python interpreter for --synthetic (default python3)")
	fs.IntVar(&o.Warmup, "warmup", probe.DefaultWarmupSteps, "--synthetic: warm-up steps, not measured")
	fs.IntVar(&o.Steps, "steps", probe.DefaultMeasuredSteps, "--synthetic: measured steps")
	fs.IntVar(&o.Device, "device", 0, "--synthetic: CUDA device index")
	fs.StringVar(&o.Calibration, "calibration", "", "apply this calibration profile to the estimate")
	fs.StringVar(&o.WriteScript, "write-script", "", "--synthetic: write the probe script, config and job to this directory and print how to run it, instead of running it")
	fs.StringVar(&o.FromResult, "from-result", "", "compare (and --record) a result line saved from a synthetic probe run elsewhere, instead of running anything")
	fs.StringVar(&o.FromCampaign, "from-campaign", "", "compare the results.jsonl of a probe campaign (probe/campaign/campaign.py) with today's estimates, instead of running anything")
	fs.StringVar(&o.Output, "output", "", "--from-campaign: write the measured runs as probe-run records to this new file")
	fs.StringVar(&o.JobFile, "job", "", "read the job from this JSON file (the memory.Job form 'gpumem estimate --format json' prints under \"job\") instead of job flags")
	fs.SetInterspersed(false) // everything after the command's name is the command's
	return cmd
}

// check validates the flag combination.
func (o *probeOptions) check(cmd *cobra.Command) error {
	if o.FromCampaign != "" || o.Output != "" {
		return o.checkCampaign(cmd)
	}
	switch {
	case o.WriteScript != "" && !o.Synthetic:
		return usageErrorf("--write-script writes the synthetic probe: add --synthetic")
	case o.FromResult != "" && (o.Synthetic || len(o.Command) > 0):
		return usageErrorf("--from-result reads a saved result: give neither --synthetic nor a command")
	case o.FromResult != "" && o.est.Model == "":
		return usageErrorf("--from-result needs the job the result measured: pass --model and the job flags")
	case o.Synthetic && len(o.Command) > 0:
		return usageErrorf("--synthetic runs the built-in probe: give no command (got %q)", o.Command[0])
	case !o.Synthetic && o.FromResult == "" && len(o.Command) == 0:
		return usageErrorf("no command to probe: put it after --, e.g. gpumem probe -- python train.py (or use --synthetic)")
	case o.Synthetic && o.est.Model == "":
		return usageErrorf("--synthetic needs the model and job to build: pass --model and the job flags")
	case o.Record != "" && o.est.Model == "":
		return usageErrorf("--record needs the job described: pass --model and the job flags")
	case o.Interval < 10*time.Millisecond:
		return usageErrorf("--interval %s: want at least 10ms", o.Interval)
	case o.Warmup < 0 || o.Steps < 1:
		return usageErrorf("--warmup %d --steps %d: want warm-up >= 0 and at least one measured step", o.Warmup, o.Steps)
	}
	if o.JobFile != "" {
		if o.est.Model == "" {
			return usageErrorf("--job %s: pass --model as well (the job file describes the run, not the model)", o.JobFile)
		}
		var flags []string
		cmd.Flags().Visit(func(fl *pflag.Flag) {
			if !probeOwnFlags[fl.Name] {
				flags = append(flags, "--"+fl.Name)
			}
		})
		if len(flags) > 0 {
			return usageErrorf("--job %s and job flags (%s): describe the job one way", o.JobFile, strings.Join(flags, " "))
		}
		job, err := readJobFile(o.JobFile)
		if err != nil {
			return err
		}
		o.est.Job = job
		if err := applyCalibrationFile(o.Calibration, &o.est.Job); err != nil {
			return err
		}
		return o.est.applyGPU(&configDir{})
	}
	if o.est.Model == "" {
		return nil
	}
	if err := o.est.finish(cmd.Flags()); err != nil {
		return err
	}
	if err := applyCalibrationFile(o.Calibration, &o.est.Job); err != nil {
		return err
	}
	return o.est.applyGPU(&configDir{})
}

// checkCampaign validates --from-campaign and --output: the campaign's
// lines describe their jobs, so no job flags and no command go with them.
func (o *probeOptions) checkCampaign(cmd *cobra.Command) error {
	if o.FromCampaign == "" {
		return usageErrorf("--output writes the runs of --from-campaign: add --from-campaign results.jsonl")
	}
	if o.Synthetic || o.FromResult != "" || len(o.Command) > 0 || o.WriteScript != "" {
		return usageErrorf("--from-campaign reads a campaign's results: give neither --synthetic, --from-result, --write-script nor a command")
	}
	var flags []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Name != "from-campaign" && fl.Name != "output" && fl.Name != "format" && fl.Name != "units" {
			flags = append(flags, "--"+fl.Name)
		}
	})
	if len(flags) > 0 {
		return usageErrorf("--from-campaign %s: each line names its model and job; drop %s", o.FromCampaign, strings.Join(flags, " "))
	}
	return nil
}

// readJobFile reads a memory.Job from a JSON file; unknown keys are errors.
func readJobFile(path string) (memory.Job, error) {
	data, err := fsutil.ReadFile(path, jobfile.MaxSize)
	if err != nil {
		return memory.Job{}, fmt.Errorf("--job: %w", err)
	}
	var job memory.Job
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&job); err != nil {
		return memory.Job{}, fmt.Errorf("--job %s: %w", path, err)
	}
	if err := jsonkeys.Check(data); err != nil {
		return memory.Job{}, fmt.Errorf("--job %s: %w", path, err)
	}
	return job, nil
}

// probeOutcome is what `gpumem probe --format json` prints.
type probeOutcome struct {
	Report     probe.Report           `json:"report"`
	Synthetic  *probe.SyntheticResult `json:"synthetic,omitempty"`
	Measured   probe.Measured         `json:"measured"`
	Estimate   *memory.Result         `json:"estimate,omitempty"`
	Comparison *probe.Comparison      `json:"comparison,omitempty"`
}

func probeRun(ctx context.Context, f *Factory, g *globalOptions, o *probeOptions, cmd *cobra.Command) error {
	if o.WriteScript != "" {
		return o.writeScript(ctx, f)
	}
	if o.FromCampaign != "" {
		return o.fromCampaign(f, g)
	}
	var m *model.Model
	if o.est.Model != "" {
		var err error
		if m, err = resolveModel(ctx, f, o.est.Model); err != nil {
			return err
		}
	}
	if o.FromResult != "" {
		return o.fromResult(f, g, m)
	}
	popts, closeLog, err := o.sampling(f)
	if err != nil {
		return err
	}
	defer closeLog()
	sigs, stop := probeSignals()
	defer stop()
	popts.Signals = sigs
	// Signals reach the command through popts.Signals; the context's own
	// cancellation on Ctrl-C must not send a second one.
	runCtx := context.WithoutCancel(ctx)

	var out probeOutcome
	var runErr error
	var sw probe.Software
	gpuName := ""
	if o.Synthetic {
		out, sw, gpuName, runErr = o.runSynthetic(runCtx, f, popts)
	} else {
		out.Report, runErr = probe.Run(runCtx, o.Command, popts)
		out.Measured = probe.Measured{DevicePeakBytes: out.Report.Peak().PeakBytes}
	}
	if runErr != nil && out.Report.Command == nil {
		return runErr // nothing ran
	}
	if m != nil && measuredAny(out.Measured) {
		if err := o.compare(m, gpuName, &out); err != nil {
			return err
		}
		if o.Record != "" {
			if err := appendRun(o.Record, o.est.Model, gpuName, sw, &out); err != nil {
				return err
			}
		}
	}
	out.Report.Timeline = nil // in --log; too long for a report
	if w := pidWarning(out.Report, o.AllProcesses); w != "" {
		fmt.Fprintln(f.IO.ErrOut, "gpumem: "+w)
	}
	if out.Synthetic != nil {
		for _, w := range out.Synthetic.Warnings {
			fmt.Fprintf(f.IO.ErrOut, "gpumem: probe warning: %s\n", w)
		}
	}
	if err := renderProbe(f.IO.Out, g.renderOptions(f), out); err != nil {
		return err
	}
	return probeExit(out.Report, runErr)
}

// sampling builds the probe options shared by both modes.
func (o *probeOptions) sampling(f *Factory) (probe.Options, func(), error) {
	popts := probe.Options{
		Interval: o.Interval, AllProcesses: o.AllProcesses,
		Stdin: commandStdin(f.IO.In), Stdout: f.IO.ErrOut, Stderr: f.IO.ErrOut,
		Progress: f.IO.ErrOut, ProgressTTY: f.IO.ErrTTY,
	}
	if o.Log == "" {
		return popts, func() {}, nil
	}
	file, err := os.Create(o.Log)
	if err != nil {
		return popts, nil, fmt.Errorf("--log: %w", err)
	}
	popts.Log = file
	return popts, func() { file.Close() }, nil
}

func (o *probeOptions) runSynthetic(ctx context.Context, f *Factory, popts probe.Options) (probeOutcome, probe.Software, string, error) {
	cfg, err := configJSON(ctx, f, o.est.Model)
	if err != nil {
		return probeOutcome{}, probe.Software{}, "", err
	}
	popts.Stdout = nil // the script's stdout carries its result line
	run, err := probe.RunSynthetic(ctx, probe.SyntheticOptions{
		Config: cfg, Job: o.est.Job, Python: o.Python,
		Warmup: o.Warmup, Steps: o.Steps, Device: o.Device, Probe: popts,
	})
	out := probeOutcome{Report: run.Report}
	if run.Result.Schema != "" {
		res := run.Result
		out.Synthetic = &res
		out.Measured = run.Measured()
	}
	if err != nil && out.Report.Command == nil {
		err = installAdvice(err)
	}
	return out, run.Result.Software, run.Result.Device.Name, err
}

// writeScript writes the synthetic probe for the job to a directory and
// says how to run it.
func (o *probeOptions) writeScript(ctx context.Context, f *Factory) error {
	cfg, err := configJSON(ctx, f, o.est.Model)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.WriteScript, 0o755); err != nil {
		return fmt.Errorf("--write-script: %w", err)
	}
	args, err := probe.WriteSynthetic(o.WriteScript, probe.SyntheticOptions{
		Config: cfg, Job: o.est.Job, Warmup: o.Warmup, Steps: o.Steps, Device: o.Device,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.Out, "cd %s && %s -u %s > result.jsonl\n", shellQuote(o.WriteScript), cmp.Or(o.Python, "python3"), strings.Join(args, " "))
	fmt.Fprintf(f.IO.ErrOut, "then: gpumem probe --from-result result.jsonl with the same --model and job flags (add --record runs.jsonl to keep it)\n")
	return nil
}

// fromResult compares a saved synthetic result line with the estimate.
func (o *probeOptions) fromResult(f *Factory, g *globalOptions, m *model.Model) error {
	data, err := fsutil.ReadFile(o.FromResult, jobfile.MaxSize)
	if err != nil {
		return fmt.Errorf("--from-result: %w", err)
	}
	res, err := probe.ParseSyntheticOutput(data)
	if err != nil {
		return fmt.Errorf("--from-result %s: %w", o.FromResult, err)
	}
	resErr := res.Err()
	if resErr != nil && !errors.Is(resErr, probe.ErrOOM) {
		return fmt.Errorf("--from-result %s: %w", o.FromResult, resErr)
	}
	run := probe.SyntheticRun{Result: res}
	out := probeOutcome{Synthetic: &res, Measured: run.Measured()}
	if err := o.compare(m, res.Device.Name, &out); err != nil {
		return err
	}
	if o.Record != "" && resErr == nil {
		if err := appendRun(o.Record, o.est.Model, res.Device.Name, res.Software, &out); err != nil {
			return err
		}
	}
	if err := renderProbe(f.IO.Out, g.renderOptions(f), out); err != nil {
		return err
	}
	return resErr
}

// campaignOutcome is what `gpumem probe --from-campaign --format json` prints.
type campaignOutcome struct {
	Report accuracy.ProbeReport `json:"report"`
	// Left are the jobs that measured nothing, with the reason.
	Left []accuracy.CampaignLeft `json:"left,omitempty"`
}

// fromCampaign compares a probe campaign's results with today's estimates
// and, with --output, writes the measured runs as records.
func (o *probeOptions) fromCampaign(f *Factory, g *globalOptions) error {
	data, err := fsutil.ReadFile(o.FromCampaign, calibrate.MaxRunsSize)
	if err != nil {
		return fmt.Errorf("--from-campaign: %w", err)
	}
	runs, left, err := accuracy.ParseCampaign(bytes.NewReader(data), o.FromCampaign)
	if err != nil {
		return err
	}
	for _, l := range left {
		fmt.Fprintf(f.IO.ErrOut, "gpumem: %s: %s, nothing measured: %s\n", l.ID, l.Status, l.Reason)
	}
	if len(runs) == 0 {
		return fmt.Errorf("--from-campaign %s: no job measured anything (%d jobs, none ok or out of memory)", o.FromCampaign, len(left))
	}
	if o.Output != "" {
		if err := writeProbeRuns(o.Output, runs); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "gpumem: wrote %d runs to %s; regenerate docs/ACCURACY.md with go test ./internal/cli -run TestAccuracyDoc -update\n", len(runs), o.Output)
	}
	rep := accuracy.ProbeRunsReport(runs, accuracy.Options{})
	ro := g.renderOptions(f)
	switch ro.Format {
	case report.JSON:
		return report.WriteJSON(f.IO.Out, campaignOutcome{Report: rep, Left: left})
	case report.Markdown:
		_, err := io.WriteString(f.IO.Out, rep.Markdown())
		return err
	}
	t := &report.TableData{
		Title:   "Probe campaign vs today's estimates (error = (estimate − measured) / measured)",
		Headers: []string{"job", "GPU", "status", "allocated", "reserved", "device", "note"},
		Aligns:  []report.Align{report.Left, report.Left, report.Left, report.Right, report.Right, report.Right, report.Left},
	}
	for _, r := range rep.Runs {
		cells := []string{r.ID, r.GPU, r.Status}
		for _, name := range []string{"allocated", "reserved", "device"} {
			cell := "-"
			for _, c := range r.Rows {
				if c.Kind == probe.RowPeak && c.Name == name {
					cell = fmt.Sprintf("%s %+.1f %%", ro.Bytes(c.MeasuredBytes), c.ErrorPct)
				}
			}
			cells = append(cells, cell)
		}
		t.AddRow(append(cells, r.Note)...)
	}
	return t.Render(f.IO.Out, ro.Format)
}

// writeProbeRuns writes runs to a new records file; an existing file is
// not overwritten.
func writeProbeRuns(path string, runs []accuracy.ProbeRun) error {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("--output %s exists: records are written to a new file (remove it, or choose another name)", path)
		}
		return fmt.Errorf("--output: %w", err)
	}
	gpus := map[string]bool{}
	var names []string
	for _, r := range runs {
		if !gpus[r.GPU.Name] {
			gpus[r.GPU.Name] = true
			names = append(names, r.GPU.Name)
		}
	}
	fmt.Fprintf(out, "# %d runs of gpumem's probe campaign measured on %s (schema %s), written by gpumem probe --from-campaign\n",
		len(runs), strings.Join(names, ", "), accuracy.ProbeRunSchema)
	if err := accuracy.WriteProbeRuns(out, runs); err != nil {
		out.Close()
		return fmt.Errorf("--output %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("--output %s: %w", path, err)
	}
	return nil
}

// shellQuote quotes a path for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// installAdvice marks missing tools as errors the user fixes by installing.
func installAdvice(err error) error {
	if errors.Is(err, probe.ErrNoPython) || errors.Is(err, probe.ErrNoNvidiaSMI) {
		return fmt.Errorf("synthetic probe: %w", err)
	}
	return err
}

// compare estimates the job, on the GPU the probe ran on when the job
// names none and the catalog knows that device, and compares.
func (o *probeOptions) compare(m *model.Model, gpuName string, out *probeOutcome) error {
	job := o.est.Job
	if job.GPU == "" && gpuName != "" {
		if g, err := gpu.Lookup(gpuName); err == nil {
			job = plan.OnGPU(job, g)
		}
	}
	res, err := memory.Estimate(m, job)
	if err != nil {
		return fmt.Errorf("estimate the probed job: %w", err)
	}
	cmp := probe.Compare(res.PerGPU, out.Measured)
	out.Estimate, out.Comparison = &res, &cmp
	return nil
}

// pidWarning explains a run in which the command's processes never held
// GPU memory while the GPUs were in use: nvidia-smi then usually shows
// PIDs of another namespace (a container).
func pidWarning(rep probe.Report, all bool) string {
	if all || rep.Peak().PeakBytes > 0 {
		return ""
	}
	for _, g := range rep.GPUs {
		if g.DevicePeakBytes > 0 {
			return "nvidia-smi never listed the command's processes although GPU memory was in use; " +
				"in a container nvidia-smi may show host PIDs: rerun with --all-processes to count whole GPUs"
		}
	}
	return ""
}

// commandStdin is the probed command's stdin: gpumem's, unless that is a
// terminal. The command runs in its own process group, and a background
// group that reads the terminal is stopped by the kernel (SIGTTIN), which
// would hang the probe; the command reads end-of-file instead.
func commandStdin(in io.Reader) io.Reader {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return in
}

// measuredAny reports whether a probe measured any peak.
func measuredAny(m probe.Measured) bool {
	return m.AllocatedPeakBytes > 0 || m.ReservedPeakBytes > 0 || m.DevicePeakBytes > 0
}

// probeExit turns the command's failure into gpumem's exit code.
func probeExit(rep probe.Report, runErr error) error {
	if runErr != nil {
		if rep.ExitCode != 0 {
			return &ExitCodeError{Code: rep.ExitCode, Err: runErr}
		}
		return runErr
	}
	if rep.ExitCode == 0 {
		return nil
	}
	msg := fmt.Sprintf("command exited with status %d", rep.ExitCode)
	if rep.Signal != "" {
		msg += " (" + rep.Signal + ")"
	}
	return &ExitCodeError{Code: rep.ExitCode, Err: errors.New(msg)}
}

// configJSON returns the config.json bytes of a --model value: a file, a
// folder holding config.json, a catalog model, or a Hub id. A stand-in's
// note goes to stderr: the script builds the stand-in.
func configJSON(ctx context.Context, f *Factory, ref string) ([]byte, error) {
	src, err := resolveSource(ctx, f, ref, hubOptions{}, modelref.Options{LocalPaths: true})
	if err != nil {
		return nil, err
	}
	for _, n := range src.Notes {
		fmt.Fprintf(f.IO.ErrOut, "note: %s\n", n)
	}
	return src.Config, nil
}

// runID names a recorded run by its model, the job's shape and, for a
// run probed here, when it started: "qwen2.5-7b lora b4 s2048 @2026-01-02T10:00:00Z".
func runID(modelRef string, job memory.Job, start time.Time) string {
	parts := []string{modelRef}
	if job.Mode != "" && job.Mode != memory.Train {
		parts = append(parts, string(job.Mode))
	}
	if job.Method != "" {
		parts = append(parts, job.Method)
	}
	for _, p := range []struct {
		tag string
		v   int
	}{{"b", job.MicroBatch}, {"b", job.Batch}, {"s", job.SeqLen}, {"p", job.PromptLen}, {"g", job.GenLen}} {
		if p.v > 0 {
			parts = append(parts, p.tag+strconv.Itoa(p.v))
		}
	}
	if job.GradCheckpoint != "" {
		parts = append(parts, "gc-"+job.GradCheckpoint)
	}
	if !start.IsZero() {
		parts = append(parts, "@"+start.UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, " ")
}

// appendRun appends one calibration run to the runs file.
func appendRun(path, modelRef, gpuName string, sw probe.Software, out *probeOutcome) error {
	run := calibrate.Run{
		ID:       runID(modelRef, out.Estimate.Job, out.Report.Start),
		Model:    modelRef,
		GPU:      gpuName,
		Software: sw,
		Job:      out.Estimate.Job,
		Estimate: out.Estimate.PerGPU,
		Measured: out.Measured,
	}
	if err := calibrate.AppendRun(path, run); err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	return nil
}

// renderProbe prints the peaks and, when the job was described, the comparison.
func renderProbe(w io.Writer, ro report.Options, out probeOutcome) error {
	if ro.Format == report.JSON {
		return report.WriteJSON(w, out)
	}
	if out.Report.Samples > 0 || len(out.Report.GPUs) > 0 {
		if err := renderPeaks(w, ro, out.Report); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if out.Comparison == nil {
		return nil
	}
	c := &report.TableData{
		Title:   "Estimate vs measured (error = (estimate − measured) / measured)",
		Headers: []string{"kind", "name", "estimated", "measured", "error"},
		Aligns:  []report.Align{report.Left, report.Left, report.Right, report.Right, report.Right},
	}
	for _, r := range out.Comparison.Rows {
		c.AddRow(r.Kind, r.Name, ro.Bytes(r.EstimatedBytes), ro.Bytes(r.MeasuredBytes), fmt.Sprintf("%+.1f %%", r.ErrorPct))
	}
	if err := c.Render(w, ro.Format); err != nil {
		return err
	}
	if s, e := out.Synthetic, out.Estimate; s != nil && e != nil && s.Params.Total > 0 {
		// torch counts adapters in the total and 4-bit weights as packed
		// elements, so the totals agree only for unquantized full models.
		fmt.Fprintf(w, "\nparameters: torch %d (trainable %d); gpumem %d (trainable %d)\n",
			s.Params.Total, s.Params.Trainable, e.TotalParams, e.TrainableParams)
	}
	return nil
}

// renderPeaks prints the per-GPU peaks of the process tree.
func renderPeaks(w io.Writer, ro report.Options, rep probe.Report) error {
	t := &report.TableData{
		Title:   fmt.Sprintf("GPU memory of the probed process tree (%d samples over %s)", rep.Samples, (time.Duration(rep.DurationMS) * time.Millisecond).Round(100*time.Millisecond)),
		Headers: []string{"GPU", "peak", "at", "device used peak", "total"},
		Aligns:  []report.Align{report.Left, report.Right, report.Right, report.Right, report.Right},
	}
	for _, gp := range rep.GPUs {
		t.AddRow(strconv.Itoa(gp.Index), ro.Bytes(gp.PeakBytes), (time.Duration(gp.PeakAtMS) * time.Millisecond).Round(100*time.Millisecond).String(),
			ro.Bytes(gp.DevicePeakBytes), ro.Bytes(gp.TotalBytes))
	}
	if err := t.Render(w, ro.Format); err != nil {
		return err
	}
	for _, e := range rep.SampleErrors {
		fmt.Fprintf(w, "sampling error: %s\n", e)
	}
	return nil
}
