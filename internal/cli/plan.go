package cli

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/report"
)

type planOptions struct {
	Est      estimateOptions
	GPUsFile string
	MaxGPUs  int
	Top      int

	// Space lists, as typed ("1,2,4"); empty = the default space.
	GPUCounts     string
	Engines       string
	ZeROStages    string
	TPSizes       string
	PPSizes       string
	CPSizes       string
	EPSizes       string
	MicroBatches  string
	Checkpointing string
	Offloads      string
	Methods       string
	ShowSkipped   bool
}

func newPlanCmd(f *Factory, g *globalOptions) *cobra.Command {
	opts := &planOptions{}
	opts.Est.withEnv(f)
	cmd := &cobra.Command{
		Use:     "plan [MODEL]",
		GroupID: "estimate",
		Short:   "Search training layouts that fit a GPU budget, ranked by expected throughput",
		Long: `Search the ways to run a training job on up to --max-gpus GPUs of one kind: engine
(single process, DDP, DeepSpeed ZeRO 0-3, FSDP, FSDP2, Megatron), tensor, pipeline,
context and expert parallel sizes, micro-batch, activation checkpointing, CPU offload
and, if asked, the fine-tuning method. Each layout is estimated; those that fit are
ranked by a throughput proxy per GPU (score 1.0 = one GPU with no recompute, no
communication and a large micro-batch) that charges recompute (full: 4/3), pipeline
bubbles ((pp-1)/grad-accum), communication (tp, cp, ep, data parallel, ZeRO-3) and
offload. The job's other settings (model, precision, optimizer, sequence length, grad
accumulation, LoRA rank, ...) come from the same flags as 'gpumem estimate'.

Layouts the memory model does not support are skipped and counted by reason
(--show-skipped lists them). With several GPU kinds (--gpu l4,h100) or none, plan shows
the highest-scoring layout of each kind.`,
		Example: `  gpumem plan llama3-8b --gpu h100 --max-gpus 8 --seq-len 4096
  gpumem plan llama3-8b --gpu l4,l40s,a100-80g,h100 --max-gpus 8 --seq-len 4096   # best layout per GPU kind
  gpumem plan llama3-70b --gpu a100-80g --max-gpus 64 --seq-len 4096 --grad-accum 16 --engines deepspeed,megatron
  gpumem plan qwen2.5-7b --gpu rtx-4090 --max-gpus 4 --methods full,lora,qlora --top 10`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := modelFromArgs(&opts.Est.Model, args); err != nil {
				return err
			}
			space, err := opts.finish(cmd)
			if err != nil {
				return err
			}
			m, err := resolveModel(cmd.Context(), f, opts.Est.Model)
			if err != nil {
				return err
			}
			return planRun(f, g, opts, space, m)
		},
	}
	fs := cmd.Flags()
	addEstimateFlags(fs, &opts.Est)
	addGPUsFileFlag(fs, &opts.GPUsFile)
	fs.IntVar(&opts.MaxGPUs, "max-gpus", 8, "GPU budget: the largest total GPU count tried")
	fs.IntVar(&opts.Top, "top", 20, "number of layouts to show")
	fs.StringVar(&opts.GPUCounts, "gpu-counts", "", "GPU counts to try (default powers of two up to --max-gpus, and --max-gpus)")
	fs.StringVar(&opts.Engines, "engines", "", "engines to try: single,ddp,deepspeed,fsdp,fsdp2,megatron (default all)")
	fs.StringVar(&opts.ZeROStages, "zero-stages", "", "sharding stages to try (default 0,1,2,3)")
	fs.StringVar(&opts.TPSizes, "tp-sizes", "", "tensor-parallel sizes to try (default 1,2,4,8)")
	fs.StringVar(&opts.PPSizes, "pp-sizes", "", "pipeline-parallel sizes to try (default 1,2,4,8)")
	fs.StringVar(&opts.CPSizes, "cp-sizes", "", "context-parallel sizes to try (default 1)")
	fs.StringVar(&opts.EPSizes, "ep-sizes", "", "expert-parallel sizes to try (default 1; MoE models)")
	fs.StringVar(&opts.MicroBatches, "micro-batches", "", "micro-batches to try (default 1,2,4,8,16,32)")
	fs.StringVar(&opts.Checkpointing, "checkpointing", "", "activation checkpointing to try: none,selective,full (default all)")
	fs.StringVar(&opts.Offloads, "offloads", "", "offload choices to try: none,optimizer,params (default all)")
	fs.StringVar(&opts.Methods, "methods", "", "fine-tuning methods to try: full,lora,qlora (default the job's --method)")
	fs.BoolVar(&opts.ShowSkipped, "show-skipped", false, "list the layouts the memory model rejected, by reason")
	return cmd
}

// finish validates the flags and builds the search space.
func (o *planOptions) finish(cmd *cobra.Command) (plan.Space, error) {
	if err := o.Est.finish(cmd.Flags()); err != nil {
		return plan.Space{}, err
	}
	if o.Est.Job.Mode != memory.Train {
		return plan.Space{}, usageErrorf("--mode %s: plan searches training layouts; use 'gpumem fit' for inference and serving", o.Est.Job.Mode)
	}
	if o.MaxGPUs < 1 {
		return plan.Space{}, usageErrorf("--max-gpus: want a positive integer, got %d", o.MaxGPUs)
	}
	if o.Top < 1 {
		return plan.Space{}, usageErrorf("--top: want a positive integer, got %d", o.Top)
	}
	s := plan.DefaultSpace(o.MaxGPUs)
	s.Keep = o.Top
	var err error
	for _, l := range []struct {
		flag, val string
		dst       *[]int
		min       int
	}{
		{"gpu-counts", o.GPUCounts, &s.GPUCounts, 1}, {"zero-stages", o.ZeROStages, &s.ZeRO, 0},
		{"tp-sizes", o.TPSizes, &s.TP, 1}, {"pp-sizes", o.PPSizes, &s.PP, 1}, {"cp-sizes", o.CPSizes, &s.CP, 1},
		{"ep-sizes", o.EPSizes, &s.EP, 1}, {"micro-batches", o.MicroBatches, &s.MicroBatches, 1},
	} {
		if l.val == "" {
			continue
		}
		if *l.dst, err = parseIntList(l.flag, l.val, l.min); err != nil {
			return plan.Space{}, err
		}
	}
	for _, n := range s.GPUCounts {
		if n > o.MaxGPUs {
			return plan.Space{}, usageErrorf("--gpu-counts: %d is above --max-gpus %d", n, o.MaxGPUs)
		}
	}
	for _, z := range s.ZeRO {
		if z > 3 {
			return plan.Space{}, usageErrorf("--zero-stages: %d is not a stage 0-3", z)
		}
	}
	lists := []struct {
		flag, val string
		dst       *[]string
		allowed   []string
	}{
		{"engines", o.Engines, &s.Engines, []string{"single", "ddp", "deepspeed", "fsdp", "fsdp2", "megatron"}},
		{"checkpointing", o.Checkpointing, &s.GradCheckpoint, []string{"none", "selective", "full"}},
		{"offloads", o.Offloads, &s.Offload, []string{plan.OffloadNone, plan.OffloadOptimizer, plan.OffloadParams}},
		{"methods", o.Methods, &s.Methods, []string{"full", "lora", "qlora"}},
	}
	for _, l := range lists {
		if l.val == "" {
			continue
		}
		if *l.dst, err = parseWordList(l.flag, l.val, l.allowed); err != nil {
			return plan.Space{}, err
		}
	}
	for i, e := range s.Engines {
		if e == "single" {
			s.Engines[i] = memory.EngineSingle
		}
	}
	if o.Methods == "" {
		s.Methods = []string{o.Est.Job.Method}
	}
	return s, nil
}

func parseIntList(flag, val string, lo int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(val, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo {
			return nil, usageErrorf("--%s: %q is not an integer >= %d", flag, strings.TrimSpace(f), lo)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseWordList(flag, val string, allowed []string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(val, ",") {
		w := strings.ToLower(strings.TrimSpace(f))
		ok := false
		for _, a := range allowed {
			ok = ok || w == a
		}
		if !ok {
			return nil, usageErrorf("--%s: unknown value %q (want %s)", flag, w, strings.Join(allowed, ", "))
		}
		out = append(out, w)
	}
	return out, nil
}

func planRun(f *Factory, g *globalOptions, o *planOptions, space plan.Space, m *model.Model) error {
	gs, _, job, err := boardsToCheck(o.GPUsFile, o.Est.Job)
	if err != nil {
		return err
	}
	ro := g.renderOptions(f)
	if len(gs) > 1 {
		return planAcross(f, ro, o, space, m, job, gs)
	}
	p, err := plan.SearchModel(m, job, gs[0], space)
	if err != nil {
		return err
	}
	if ro.Format == report.JSON {
		return report.WriteJSON(f.IO.Out, p)
	}
	return writePlan(f.IO.Out, ro, o, m, p)
}

// planAcross searches every GPU kind and shows the best layout of each,
// best first.
func planAcross(f *Factory, ro report.Options, o *planOptions, space plan.Space, m *model.Model, job memory.Job, gs []gpu.GPU) error {
	space.Keep = 1
	plans := make([]plan.Plan, 0, len(gs))
	for _, g := range gs {
		p, err := plan.SearchModel(m, job, g, space)
		if err != nil {
			return err
		}
		plans = append(plans, p)
	}
	sort.SliceStable(plans, func(i, j int) bool {
		a, b := plans[i], plans[j]
		if (len(a.Candidates) > 0) != (len(b.Candidates) > 0) {
			return len(a.Candidates) > 0
		}
		if len(a.Candidates) == 0 {
			return a.MemoryBytes > b.MemoryBytes
		}
		ca, cb := a.Candidates[0], b.Candidates[0]
		if ca.NumGPUs != cb.NumGPUs {
			return ca.NumGPUs < cb.NumGPUs
		}
		if ca.Score != cb.Score {
			return ca.Score > cb.Score
		}
		return a.MemoryBytes < b.MemoryBytes
	})
	if ro.Format == report.JSON {
		return report.WriteJSON(f.IO.Out, struct {
			Model    string      `json:"model"`
			Plans    []plan.Plan `json:"plans"`
			Warnings []string    `json:"warnings,omitempty"`
		}{m.ID, plans, report.Warnings(m.Warnings)})
	}
	t := &report.TableData{
		Title:   fmt.Sprintf("%s: the highest-scoring layout on up to %d GPUs of each kind (rows by GPU count, then score)", m.ID, o.MaxGPUs),
		Headers: []string{"gpu", "memory", "gpus", "engine", "tp", "pp", "cp", "ep", "mb", "ckpt", "offload", "need/gpu", "util", "score"},
		Aligns: []report.Align{report.Left, report.Right, report.Right, report.Left, report.Right, report.Right, report.Right, report.Right,
			report.Right, report.Left, report.Left, report.Right, report.Right, report.Right},
	}
	methods := len(space.Methods) > 1
	if methods {
		t.Headers = append(t.Headers, "method")
		t.Aligns = append(t.Aligns, report.Left)
	}
	for _, p := range plans {
		if len(p.Candidates) == 0 {
			row := []string{p.GPU, ro.Bytes(p.MemoryBytes), "-", "no layout fits"}
			t.AddRow(append(row, make([]string, len(t.Headers)-len(row))...)...)
			continue
		}
		c := p.Candidates[0]
		row := []string{p.GPU, ro.Bytes(p.MemoryBytes), fmt.Sprint(c.NumGPUs), c.Sharding(), fmt.Sprint(max(c.TP, 1)), fmt.Sprint(max(c.PP, 1)),
			fmt.Sprint(max(c.CP, 1)), fmt.Sprint(max(c.EP, 1)), fmt.Sprint(c.MicroBatch), c.GradCheckpoint, c.Offload,
			ro.Bytes(c.NeedBytes), fmt.Sprintf("%.1f%%", c.Utilization), fmt.Sprintf("%.3f", c.Score)}
		if methods {
			row = append(row, c.Method)
		}
		t.AddRow(row...)
	}
	if err := t.Render(f.IO.Out, ro.Format); err != nil {
		return err
	}
	return report.WriteWarnings(f.IO.Out, m.Warnings)
}

func writePlan(w io.Writer, ro report.Options, o *planOptions, m *model.Model, p plan.Plan) error {
	headers, rows := plan.CandidateRows(p, ro.Bytes)
	t := &report.TableData{
		Title:   fmt.Sprintf("%s on up to %d x %s (%s): %d layouts fit", m.ID, o.MaxGPUs, p.GPU, ro.Bytes(p.MemoryBytes), p.Feasible),
		Headers: lower(headers),
	}
	for _, h := range headers {
		switch h {
		case "ENGINE", "CKPT", "OFFLOAD", "VERDICT", "METHOD":
			t.Aligns = append(t.Aligns, report.Left)
		default:
			t.Aligns = append(t.Aligns, report.Right)
		}
	}
	for _, r := range rows {
		t.AddRow(r...)
	}
	if len(rows) == 0 {
		if _, err := fmt.Fprintf(w, "%s\nno layout fits: try more GPUs (--max-gpus), a shorter --seq-len, LoRA/QLoRA (--methods full,lora,qlora) or a larger GPU\n", t.Title); err != nil {
			return err
		}
	} else if err := t.Render(w, ro.Format); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nscore: relative throughput per GPU (1.0 = full fine-tuning on one GPU with no recompute or communication)\neach layout is shown with the largest micro-batch that fits; %d estimates, %d over the budget, %d combinations no engine runs\n",
		p.Evaluated, p.TooBig, p.Invalid/max(len(o.spaceMicroBatches()), 1))
	skipped := 0
	for _, s := range p.Skipped {
		skipped += s.Count
	}
	if skipped > 0 && !o.ShowSkipped {
		fmt.Fprintf(&b, "%d layouts skipped by the memory model (unsupported combinations); --show-skipped lists why\n", skipped)
	}
	if o.ShowSkipped {
		for _, s := range p.Skipped {
			fmt.Fprintf(&b, "skipped %d: %s (e.g. %s)\n", s.Count, s.Reason, s.Example)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return report.WriteWarnings(w, p.Warnings)
}

// spaceMicroBatches is the micro-batch list the search used, to count
// invalid combinations once rather than once per micro-batch.
func (o *planOptions) spaceMicroBatches() []int {
	if o.MicroBatches == "" {
		return plan.DefaultSpace(1).MicroBatches
	}
	l, _ := parseIntList("micro-batches", o.MicroBatches, 1)
	return l
}
