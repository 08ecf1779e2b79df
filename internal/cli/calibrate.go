package cli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/calibrate"
	"github.com/gpumem/gpumem/internal/fsutil"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/report"
)

type calibrateOptions struct {
	Runs    string
	Output  string
	GPU     string
	Name    string
	MinRuns int
	PerRun  bool
}

func newCalibrateCmd(f *Factory, g *globalOptions) *cobra.Command {
	o := &calibrateOptions{}
	cmd := &cobra.Command{
		Use:     "calibrate RUNS.jsonl",
		GroupID: "estimate",
		Short:   "Fit the memory model's constants to measured runs and write a calibration profile",
		Long: `Fit correction terms of the memory model to runs measured with 'gpumem probe --record':
the activation scale (from allocated peaks of training runs), the allocator fragmentation
(from reserved versus allocated) and the device constant, CUDA context plus workspaces plus
other non-PyTorch memory (from nvidia-smi versus reserved). Each term is fitted by least
squares on the level it governs; no factor is put on the total.

The runs must come from one GPU kind and software stack (select one with --gpu): a profile
describes one. The table shows each fitted constant with its standard error and the error
of the estimates before and after, also predicting each run from the others
(leave-one-out), the fairer figure when runs are few.

gpumem ships an identity profile (see 'gpumem calibrate --show-default'): no run on real
GPU hardware was made while gpumem was built, so its constants are the documented defaults.`,
		Example: `  gpumem probe --synthetic --model qwen2.5-0.5b --seq-len 2048 --record runs.jsonl
  gpumem probe --synthetic --model qwen2.5-0.5b --seq-len 4096 --method lora --record runs.jsonl
  gpumem calibrate runs.jsonl --output h100.json
  gpumem estimate --model qwen2.5-7b --seq-len 4096 --calibration h100.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			showDefault, _ := cmd.Flags().GetBool("show-default")
			if showDefault {
				return renderProfile(f, g, calibrate.Default())
			}
			if len(args) == 0 {
				return usageErrorf("no runs file given: gpumem calibrate RUNS.jsonl (write one with gpumem probe --record)")
			}
			o.Runs = args[0]
			if o.MinRuns < 1 {
				return usageErrorf("--min-runs: want at least 1, got %d", o.MinRuns)
			}
			return calibrateRun(cmd.Context(), f, g, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.Output, "output", "o", "", "write the profile to this file")
	fs.StringVar(&o.GPU, "gpu", "", "use only the runs on this GPU kind")
	fs.StringVar(&o.Name, "name", "", "name of the profile (default: GPU kind and software stack)")
	fs.IntVar(&o.MinRuns, "min-runs", calibrate.DefaultMinRuns, "fewest runs a term is fitted from")
	fs.Bool("show-default", false, "print the built-in default profile and exit")
	fs.BoolVar(&o.PerRun, "per-run", false, "also list every run's error at each level before and after")
	return cmd
}

// runEstimator estimates a run's job on the model the run names, loading
// each model once. A run whose model cannot be loaded is fitted from its
// recorded estimate.
func runEstimator(ctx context.Context, f *Factory) calibrate.Estimator {
	models := map[string]*model.Model{}
	failed := map[string]error{}
	return func(run calibrate.Run, job memory.Job) (memory.PerGPU, error) {
		if run.Model == "" {
			return memory.PerGPU{}, errors.New("run names no model")
		}
		m, ok := models[run.Model]
		if !ok {
			if err := failed[run.Model]; err != nil {
				return memory.PerGPU{}, err
			}
			var err error
			if m, err = resolveModel(ctx, f, run.Model); err != nil {
				failed[run.Model] = err
				return memory.PerGPU{}, err
			}
			models[run.Model] = m
		}
		r, err := memory.Estimate(m, job)
		return r.PerGPU, err
	}
}

func calibrateRun(ctx context.Context, f *Factory, g *globalOptions, o *calibrateOptions) error {
	data, err := fsutil.ReadFile(o.Runs, calibrate.MaxRunsSize)
	if err != nil {
		return err
	}
	runs, err := calibrate.ReadRuns(bytes.NewReader(data), o.Runs)
	if err != nil {
		return err
	}
	sel := calibrate.Select(runs, o.GPU)
	if len(sel) == 0 {
		return fmt.Errorf("%s: no runs on GPU kind %q (of %d runs)", o.Runs, o.GPU, len(runs))
	}
	p, err := calibrate.Fit(sel, calibrate.FitOptions{Name: o.Name, MinRuns: o.MinRuns, Estimator: runEstimator(ctx, f)})
	if err != nil {
		return err
	}
	if o.Output != "" {
		if err := p.Save(o.Output); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "wrote calibration profile %q to %s\n", p.Name, o.Output)
	} else {
		fmt.Fprintln(f.IO.ErrOut, "profile not saved: pass --output FILE to write it")
	}
	if err := renderProfile(f, g, p); err != nil {
		return err
	}
	if o.PerRun && g.renderOptions(f).Format != report.JSON {
		return renderPerRun(f, g, p.Fit.PerRun)
	}
	return nil
}

// renderPerRun lists each run's estimate and error at each level.
func renderPerRun(f *Factory, g *globalOptions, rows []calibrate.RunError) error {
	ro := g.renderOptions(f)
	t := &report.TableData{
		Title:   "Per run (error % of measured)",
		Headers: []string{"run", "level", "measured", "before", "after", "before %", "after %", "leave-one-out %"},
		Aligns:  []report.Align{report.Left, report.Left, report.Right, report.Right, report.Right, report.Right, report.Right, report.Right},
	}
	for _, r := range rows {
		t.AddRow(r.Run, r.Level, ro.Bytes(r.Measured), ro.Bytes(r.Before), ro.Bytes(r.After), pctCell(r.BeforePct), pctCell(r.AfterPct), pctCell(r.LOOPct))
	}
	fmt.Fprintln(f.IO.Out)
	return t.Render(f.IO.Out, ro.Format)
}

// renderProfile prints a profile: its constants, and the fit when it has one.
func renderProfile(f *Factory, g *globalOptions, p calibrate.Profile) error {
	ro := g.renderOptions(f)
	if ro.Format == report.JSON {
		return report.WriteJSON(f.IO.Out, p)
	}
	w := f.IO.Out
	fmt.Fprintf(w, "Calibration profile %q (GPU %s, %s)\n", p.Name, cmp.Or(p.GPU, "any"), stackLabel(p))
	for _, n := range p.Notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
	if p.Fit == nil {
		t := &report.TableData{Headers: []string{"constant", "value"}, Aligns: []report.Align{report.Left, report.Right}}
		for _, name := range calibrationNames(p.Constants) {
			t.AddRow(name, calibrationNum(p.Constants[name]))
		}
		if len(t.Rows) == 0 {
			fmt.Fprintln(w, "  overrides: none")
			return nil
		}
		return t.Render(w, ro.Format)
	}
	if p.Fit.Reestimated > 0 {
		fmt.Fprintf(w, "  %d of %d runs estimated anew with this gpumem; the others use their recorded estimates.\n", p.Fit.Reestimated, p.Fit.Runs)
	}
	terms := &report.TableData{
		Title:   fmt.Sprintf("Fitted constants (%d runs)", p.Fit.Runs),
		Headers: []string{"constant", "before", "fitted", "± std. error", "unit", "runs", "note"},
		Aligns:  []report.Align{report.Left, report.Right, report.Right, report.Right, report.Left, report.Right, report.Left},
	}
	for _, t := range p.Fit.Terms {
		terms.AddRow(t.Constant, calibrationNum(t.Before), calibrationNum(t.Value), stdErrCell(t.StdErr), t.Unit, strconv.Itoa(t.Runs), t.Note)
	}
	if err := terms.Render(w, ro.Format); err != nil {
		return err
	}
	levels := &report.TableData{
		Title:   "Error of the estimates, % of measured (mean |error|; bias = mean signed error)",
		Headers: []string{"level", "runs", "before", "after", "leave-one-out", "worst before", "worst after", "bias before", "bias after"},
		Aligns:  []report.Align{report.Left, report.Right, report.Right, report.Right, report.Right, report.Right, report.Right, report.Right, report.Right},
	}
	for _, l := range p.Fit.Levels {
		levels.AddRow(l.Level, strconv.Itoa(l.Runs), pctCell(l.MeanAbsBeforePct), pctCell(l.MeanAbsAfterPct), pctCell(l.MeanAbsLOOPct),
			pctCell(l.MaxAbsBeforePct), pctCell(l.MaxAbsAfterPct), pctCell(l.BiasBeforePct), pctCell(l.BiasAfterPct))
	}
	fmt.Fprintln(w)
	return levels.Render(w, ro.Format)
}

func stackLabel(p calibrate.Profile) string {
	if p.Software.Torch == "" && p.Software.CUDA == "" {
		return "any software stack"
	}
	return "torch " + cmp.Or(p.Software.Torch, "?") + ", CUDA " + cmp.Or(p.Software.CUDA, "?")
}

func calibrationNum(v float64) string {
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func stdErrCell(se *float64) string {
	if se == nil {
		return "–"
	}
	return calibrationNum(*se)
}

func pctCell(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func calibrationNames(m map[string]float64) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// applyCalibrationFile applies the profile at path (if any) to job.
func applyCalibrationFile(path string, job *memory.Job) error {
	if path == "" {
		return nil
	}
	p, err := calibrate.LoadProfile(path)
	if err != nil {
		return fmt.Errorf("--calibration: %w", err)
	}
	if err := p.Apply(job); err != nil {
		return fmt.Errorf("--calibration: %w", err)
	}
	return nil
}

// withCalibration gives the estimate command --calibration FILE. The
// profile's constants become --set values the user did not give (so
// --set wins), and its GPU kind becomes --gpu when none is given.
func withCalibration(cmd *cobra.Command) *cobra.Command {
	var path string
	cmd.Flags().StringVar(&path, "calibration", "", "apply a calibration profile written by 'gpumem calibrate' (--set values win over it)")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if path != "" {
			if err := calibrationAsFlags(c, path); err != nil {
				return err
			}
		}
		return run(c, args)
	}
	return cmd
}

func calibrationAsFlags(c *cobra.Command, path string) error {
	fs := c.Flags()
	gpu, _ := fs.GetString("gpu")
	sets, _ := fs.GetStringArray("set")
	user := map[string]bool{}
	for _, kv := range sets {
		name, _, _ := strings.Cut(kv, "=")
		user[strings.ToLower(strings.TrimSpace(name))] = true
	}
	job := memory.Job{GPU: gpu}
	if err := applyCalibrationFile(path, &job); err != nil {
		return err
	}
	if gpu == "" && job.GPU != "" {
		if err := fs.Set("gpu", job.GPU); err != nil {
			return err
		}
	}
	for _, name := range calibrationNames(job.Constants) {
		if user[strings.ToLower(name)] {
			continue
		}
		if err := fs.Set("set", name+"="+strconv.FormatFloat(job.Constants[name], 'g', -1, 64)); err != nil {
			return err
		}
	}
	return nil
}
