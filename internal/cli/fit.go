package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/plot"
	"github.com/gpumem/gpumem/report"
)

type fitOptions struct {
	Est         estimateOptions
	GPUsFile    string
	MaxGPUs     int
	Sweep       string
	SweepMin    int
	SweepMax    int
	PlotOut     string
	FailIfNoFit bool
	ASCII       bool
}

func newFitCmd(f *Factory, g *globalOptions) *cobra.Command {
	opts := &fitOptions{}
	opts.Est.withEnv(f)
	cmd := &cobra.Command{
		Use:     "fit [MODEL]",
		GroupID: "estimate",
		Short:   "Check whether a job fits on a GPU, and what fits: batch, sequence length, GPU count",
		Long: `Check a job against GPUs. The job is described with the same flags as 'gpumem estimate';
the device peak (what nvidia-smi shows) is compared with each GPU's memory as the driver
reports it. A job "fits" when it leaves at least 5 % free, is "tight" inside that margin
(a bad run may OOM) and "does_not_fit" above 100 %.

With one --gpu, fit shows the breakdown as a bar, the largest per-device batch and the
longest sequence that fit, and the fewest GPUs of that kind the job needs (sharded
training adds GPUs; inference and serving raise the tensor-parallel size).
With several GPUs (--gpu h100,a100-80g,l4) or none, it prints a recommendation table
over them, or over the whole catalog.

--sweep seq-len|batch estimates the job over a range and prints the peaks, or draws
them with the GPU limits into --plot-out (.svg or .png).`,
		Example: `  gpumem fit llama3-8b --gpu h100 --seq-len 4096 --method lora
  gpumem fit qwen2.5-7b --mode inference --batch-size 8 --prompt-len 4096 --gen-len 512
  gpumem fit llama3-70b --engine deepspeed --zero 3 --num-gpus 8 --gpu a100-80g,h100,h200
  gpumem fit llama3-8b --gpu l4,a100-80g --sweep seq-len --plot-out mem.svg
  gpumem fit llama2-7b --gpu rtx-4090 --fail-if-no-fit   # exit code 3 when it does not fit`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := modelFromArgs(&opts.Est.Model, args); err != nil {
				return err
			}
			if err := opts.finish(cmd); err != nil {
				return err
			}
			m, err := resolveModel(cmd.Context(), f, opts.Est.Model)
			if err != nil {
				return err
			}
			return fitRun(f, g, opts, m)
		},
	}
	fs := cmd.Flags()
	addEstimateFlags(fs, &opts.Est)
	addGPUsFileFlag(fs, &opts.GPUsFile)
	fs.IntVar(&opts.MaxGPUs, "max-gpus", 64, "largest GPU count searched for the fewest GPUs that fit")
	fs.StringVar(&opts.Sweep, "sweep", "", "estimate over a range of seq-len or batch instead")
	fs.IntVar(&opts.SweepMin, "sweep-min", 0, "first value of --sweep (default 256 tokens or batch 1)")
	fs.IntVar(&opts.SweepMax, "sweep-max", 0, "last value of --sweep (default the model's max_position_embeddings, or batch 64)")
	fs.StringVar(&opts.PlotOut, "plot-out", "", "write the --sweep chart to this .svg or .png file")
	fs.BoolVar(&opts.FailIfNoFit, "fail-if-no-fit", false, "exit with code 3 when the job does not fit (on any of the GPUs)")
	fs.BoolVar(&opts.ASCII, "ascii", false, "draw the breakdown bar with ASCII characters instead of Unicode blocks")
	return cmd
}

func (o *fitOptions) finish(cmd *cobra.Command) error {
	fs := cmd.Flags()
	if err := o.Est.finish(fs); err != nil {
		return err
	}
	if o.MaxGPUs < 1 {
		return usageErrorf("--max-gpus: want a positive integer, got %d", o.MaxGPUs)
	}
	switch o.Sweep {
	case "", "seq-len", "batch":
	default:
		return usageErrorf("--sweep: unknown variable %q (want seq-len or batch)", o.Sweep)
	}
	if o.Sweep == "" && (fs.Changed("sweep-min") || fs.Changed("sweep-max") || o.PlotOut != "") {
		return usageErrorf("--sweep-min, --sweep-max and --plot-out need --sweep seq-len or --sweep batch")
	}
	if fs.Changed("sweep-min") && o.SweepMin < 1 || fs.Changed("sweep-max") && o.SweepMax < 1 {
		return usageErrorf("--sweep-min and --sweep-max: want positive integers")
	}
	if o.SweepMin > 0 && o.SweepMax > 0 && o.SweepMin > o.SweepMax {
		return usageErrorf("--sweep-min %d is above --sweep-max %d", o.SweepMin, o.SweepMax)
	}
	if o.PlotOut != "" {
		if _, err := plot.ParseFormat(strings.TrimPrefix(filepath.Ext(o.PlotOut), ".")); err != nil {
			return usageErrorf("--plot-out %q: want a file name ending in .svg or .png", o.PlotOut)
		}
	}
	return nil
}

// boardsToCheck resolves --gpus-file, --gpu (a comma-separated list,
// "all" or empty for the whole catalog) and --gpu-memory (a custom
// board, or the memory of the one named GPU) into the boards a planning
// command checks, and returns the job without a GPU: each board sets its
// own (plan.OnGPU). explicit reports whether GPUs were named.
func boardsToCheck(gpusFile string, job memory.Job) (gs []gpu.GPU, explicit bool, bare memory.Job, err error) {
	cat, err := loadGPUCatalog(gpusFile)
	if err != nil {
		return nil, false, job, err
	}
	var names []string
	for _, s := range strings.Split(job.GPU, ",") {
		if s = strings.TrimSpace(s); s != "" {
			names = append(names, s)
		}
	}
	if len(names) == 1 && strings.EqualFold(names[0], "all") {
		names = nil
	}
	gs, err = cat.Select(names, job.GPUMemory, "--gpu-memory")
	switch {
	case errors.Is(err, gpu.ErrMemoryForMany):
		return nil, false, job, usageErrorf("--gpu-memory: %v given with --gpu", err)
	case err != nil:
		return nil, false, job, &UsageError{Err: fmt.Errorf("--gpu: %w", err)}
	}
	explicit = len(names) > 0 || job.GPUMemory > 0
	job.GPU, job.GPUMemory, job.GPUComputeCapability = "", 0, 0
	return gs, explicit, job, nil
}

func fitRun(f *Factory, g *globalOptions, o *fitOptions, m *model.Model) error {
	gs, explicit, job, err := boardsToCheck(o.GPUsFile, o.Est.Job)
	if err != nil {
		return err
	}
	est := plan.For(m)
	ro := g.renderOptions(f)
	if o.Sweep != "" {
		if !explicit {
			gs = nil
		}
		return sweepRun(f, ro, o, m, est, job, gs)
	}
	if len(gs) == 1 {
		return fitOne(f, ro, o, m, est, job, gs[0])
	}
	recs := plan.Recommend(est, job, gs, o.MaxGPUs)
	if err := writeRecommendations(f.IO.Out, ro, m, job, recs); err != nil {
		return err
	}
	if o.FailIfNoFit {
		for _, r := range recs {
			if r.Error == "" && r.Verdict != plan.DoesNotFit {
				return nil
			}
		}
		return &ExitCodeError{Code: ExitNoFit}
	}
	return nil
}

func fitOne(f *Factory, ro report.Options, o *fitOptions, m *model.Model, est plan.EstimateFunc, job memory.Job, g gpu.GPU) error {
	rep, err := plan.Assess(est, job, g, o.MaxGPUs)
	if err != nil {
		return err
	}
	rep.Warnings = report.Warnings(m.Warnings, rep.Warnings)
	if ro.Format == report.JSON {
		err = report.WriteJSON(f.IO.Out, rep)
	} else {
		err = writeFitOne(f.IO.Out, ro, o, m, job, rep, f.IO.Width)
	}
	if err == nil && o.FailIfNoFit && rep.Fit.Verdict == plan.DoesNotFit {
		return &ExitCodeError{Code: ExitNoFit}
	}
	return err
}

func writeFitOne(w io.Writer, ro report.Options, o *fitOptions, m *model.Model, job memory.Job, rep plan.Assessment, width int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s on %s (%s): %s\n", m.ID, modeName(job), rep.GPU.Name, ro.Bytes(rep.GPU.Memory), fitSentence(rep.Fit, ro))
	if ro.Format == report.Markdown {
		b.WriteString("\n")
	} else {
		if width <= 0 {
			width = 80
		}
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
		b.Reset()
		bo := plot.BarOptions{Width: min(width, 100), ASCII: o.ASCII, Capacity: rep.GPU.Memory, CapacityName: rep.GPU.Name, Bytes: ro.Bytes}
		if err := plot.Breakdown(w, rep.Result, bo); err != nil {
			return err
		}
	}
	batchName := "per-device batch"
	if job.Mode == memory.Serving {
		batchName = "max_num_seqs"
	}
	fmt.Fprintf(&b, "largest %s that fits: %s\n", batchName, answerText(rep.MaxBatch, ro, ""))
	seqName := "sequence length"
	switch job.Mode {
	case memory.Inference:
		seqName = "prompt length"
	case memory.Serving:
		seqName = "max_model_len"
	}
	fmt.Fprintf(&b, "longest %s that fits: %s\n", seqName, answerText(rep.MaxSeqLen, ro, " tokens"))
	gpusName := "fewest GPUs"
	if job.Mode == memory.Inference || job.Mode == memory.Serving {
		gpusName = "fewest GPUs (tensor parallel)"
	}
	fmt.Fprintf(&b, "%s that fit: %s\n", gpusName, answerText(rep.MinGPUs, ro, ""))
	if (job.Mode == "" || job.Mode == memory.Train) && !plan.Shards(job) && rep.Fit.Verdict != plan.Fits {
		b.WriteString("  (this job keeps a full copy of the model states on every GPU; --engine deepspeed --zero 3 or --engine fsdp shards them)\n")
	}
	if len(rep.Suggestions) > 0 {
		need := plan.Need(rep.Result)
		b.WriteString("changes that lower the peak (one at a time):\n")
		for _, sg := range rep.Suggestions {
			verdict := strings.ReplaceAll(string(sg.Verdict), "_", " ")
			if sg.Combined {
				fmt.Fprintf(&b, "together, these fit: %s → %s per GPU (%s)\n", changeFlags(sg), ro.Bytes(sg.NeedBytes), verdict)
				continue
			}
			fmt.Fprintf(&b, "  %-31s %s per GPU (%s, saves %s): %s\n", changeFlags(sg), ro.Bytes(sg.NeedBytes), verdict, ro.Bytes(sg.Savings(need)), sg.Why)
		}
	}
	if s := rep.Result.Serving; s != nil {
		fmt.Fprintf(&b, "KV cache pool: %s = %d tokens, %d concurrent sequences of %d tokens\n", ro.Bytes(s.KVPoolBytes), s.KVTokens, s.MaxConcurrentSeqs, s.SeqLen)
	}
	if rep.Warning != "" {
		fmt.Fprintf(&b, "note: %s\n", rep.Warning)
	}
	for _, s := range rep.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fitSentence(fit plan.Fit, ro report.Options) string {
	s := fmt.Sprintf("%s, device peak %s = %.1f %%", strings.ReplaceAll(string(fit.Verdict), "_", " "), ro.Bytes(fit.NeedBytes), fit.Utilization)
	switch fit.Verdict {
	case plan.Fits:
		s += fmt.Sprintf(", %s free", ro.Bytes(fit.FreeBytes))
	case plan.Tight:
		s += fmt.Sprintf(", only %s free (keep %.0f %%)", ro.Bytes(fit.FreeBytes), 100*plan.Headroom)
	default:
		s += fmt.Sprintf(", %s short", ro.Bytes(fit.ShortBytes))
	}
	if fit.Reason != "" {
		s += "; " + fit.Reason
	}
	return s
}

// changeFlags writes a suggestion's settings as the flags that set them:
// "--grad-checkpoint full".
func changeFlags(sg plan.Suggestion) string {
	flags := make([]string, len(sg.Settings))
	for i, s := range sg.Settings {
		flags[i] = flagName(s.Key, s.Value)
	}
	return strings.Join(flags, " ")
}

func answerText(a *plan.Answer, ro report.Options, unit string) string {
	if a.Error != "" {
		msg := a.Error
		if err := a.Err(); err != nil {
			msg = renderError(err)
		}
		if a.NoFit {
			return "none (" + msg + ")"
		}
		return "unknown (" + msg + ")"
	}
	s := fmt.Sprintf("%d%s (%s per GPU)", a.Value, unit, ro.Bytes(a.NeedBytes))
	switch {
	case a.Value >= a.Limit:
		s += ", the search limit"
	case a.StopErr() != nil:
		s += "; next: " + renderError(a.StopErr())
	case a.Stop != "":
		s += "; next: " + a.Stop
	}
	return s
}

func modeName(job memory.Job) string {
	if job.Mode == "" {
		return string(memory.Train)
	}
	return string(job.Mode)
}

// fitRecommendations is what gpumem fit prints as JSON for several GPUs.
type fitRecommendations struct {
	Model string `json:"model"`
	// Recommendations has one entry per GPU, best first.
	Recommendations []plan.Recommendation `json:"recommendations"`
	// Warnings are the model's warnings: every row rests on them.
	Warnings []string `json:"warnings,omitempty"`
}

func writeRecommendations(w io.Writer, ro report.Options, m *model.Model, job memory.Job, recs []plan.Recommendation) error {
	if ro.Format == report.JSON {
		return report.WriteJSON(w, fitRecommendations{Model: m.ID, Recommendations: recs, Warnings: report.Warnings(m.Warnings)})
	}
	headers, rows := plan.RecommendationRows(recs, ro.Bytes)
	t := &report.TableData{
		Title:   fmt.Sprintf("%s, %s: fits = at most %.0f %% of the GPU's memory", m.ID, modeName(job), 100*(1-plan.Headroom)),
		Headers: lower(headers),
		Aligns:  []report.Align{report.Left, report.Right, report.Right, report.Right, report.Left, report.Right, report.Right},
	}
	for _, r := range rows {
		t.AddRow(r...)
	}
	if err := t.Render(w, ro.Format); err != nil {
		return err
	}
	var notes []string
	for _, r := range recs {
		if r.Warning != "" {
			notes = append(notes, r.Warning)
		}
	}
	if len(notes) > 0 {
		if _, err := fmt.Fprintf(w, "\nnote: %s (speed and numerics differ; the memory figures hold)\n", strings.Join(notes, "; ")); err != nil {
			return err
		}
	}
	return report.WriteWarnings(w, m.Warnings)
}

func lower(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	return out
}

// sweepRun estimates the job over a range of one variable and prints the
// peaks, or draws them into --plot-out.
func sweepRun(f *Factory, ro report.Options, o *fitOptions, m *model.Model, est plan.EstimateFunc, job memory.Job, gs []gpu.GPU) error {
	v, lo, hi := plan.SeqLen, 256, m.Text.MaxPositions
	if hi <= 0 {
		hi = 32768
	}
	if o.Sweep == "batch" {
		v, lo, hi = plan.MicroBatch, 1, 64
	}
	if o.SweepMin > 0 {
		lo = o.SweepMin
	}
	if o.SweepMax > 0 {
		hi = o.SweepMax
	}
	if lo > hi {
		return usageErrorf("--sweep %s: range %d..%d is empty (set --sweep-min/--sweep-max)", o.Sweep, lo, hi)
	}
	if len(gs) == 1 {
		job = plan.OnGPU(job, gs[0])
	}
	xs, rs, err := plan.Sweep(est, job, v, plan.Pow2Range(lo, hi))
	if err != nil {
		return err
	}
	if o.PlotOut != "" {
		return writePlot(f, o, m, job, xs, rs, gs)
	}
	ws := [][]string{m.Warnings}
	for _, r := range rs {
		ws = append(ws, r.Warnings)
	}
	warnings := report.Warnings(ws...)
	if ro.Format == report.JSON {
		type point struct {
			X      int           `json:"x"`
			PerGPU memory.PerGPU `json:"per_gpu"`
		}
		pts := make([]point, len(xs))
		for i := range xs {
			pts[i] = point{xs[i], rs[i].PerGPU}
		}
		return report.WriteJSON(f.IO.Out, struct {
			Model    string   `json:"model"`
			Sweep    string   `json:"sweep"`
			Points   []point  `json:"points"`
			Warnings []string `json:"warnings,omitempty"`
		}{m.ID, o.Sweep, pts, warnings})
	}
	t := &report.TableData{
		Title:   fmt.Sprintf("%s, %s: per-GPU peaks by %s", m.ID, modeName(job), o.Sweep),
		Headers: []string{o.Sweep, "allocated", "reserved", "device"},
		Aligns:  []report.Align{report.Right, report.Right, report.Right, report.Right},
	}
	for _, g := range gs {
		t.Headers = append(t.Headers, strings.ToLower(g.Name))
		t.Aligns = append(t.Aligns, report.Left)
	}
	for i, r := range rs {
		p := r.PerGPU
		row := []string{fmt.Sprint(xs[i]), ro.Bytes(p.AllocatedPeakBytes), ro.Bytes(p.ReservedPeakBytes), ro.Bytes(p.DevicePeakBytes)}
		for _, g := range gs {
			row = append(row, string(plan.Check(r, g).Verdict))
		}
		t.AddRow(row...)
	}
	if err := t.Render(f.IO.Out, ro.Format); err != nil {
		return err
	}
	return report.WriteWarnings(f.IO.Out, warnings)
}

func writePlot(f *Factory, o *fitOptions, m *model.Model, job memory.Job, xs []int, rs []memory.Result, gs []gpu.GPU) error {
	format, _ := plot.ParseFormat(strings.TrimPrefix(filepath.Ext(o.PlotOut), "."))
	series, err := plot.FromResults(xs, rs)
	if err != nil {
		return err
	}
	limits := make([]plot.Limit, len(gs))
	for i, g := range gs {
		limits[i] = plot.Limit{Name: g.Name, Bytes: g.Memory}
	}
	title := fmt.Sprintf("%s, %s", m.ID, modeName(job))
	out, err := os.Create(o.PlotOut)
	if err != nil {
		return fmt.Errorf("--plot-out: %w", err)
	}
	if o.Sweep == "batch" {
		err = plot.MemoryVsBatch(out, format, title, series, limits)
	} else {
		err = plot.MemoryVsSeqLen(out, format, title, series, limits)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--plot-out %s: %w", o.PlotOut, err)
	}
	fmt.Fprintf(f.IO.ErrOut, "wrote %s\n", o.PlotOut)
	return nil
}
