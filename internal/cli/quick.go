package cli

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/jobfile"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/report"
	"github.com/gpumem/gpumem/units"
)

type quickOptions struct {
	GPUs   int
	GPUMem float64
	Engine string
	Dtype  string
	SeqLen int
	Batch  int
	TP, PP int
	// Layouts is how many fitting layouts to list when the given one does not fit.
	Layouts int
}

// quickEngines maps the engine calculators' quick engines onto a job: the
// engine and, for DeepSpeed, ZeRO-2 as those calculators assume.
var quickEngines = map[string]func(j *memory.Job){
	"pytorch":   func(j *memory.Job) { j.Engine = "ddp" },
	"deepspeed": func(j *memory.Job) { j.Engine, j.ZeRO = "deepspeed", 2 },
	"megatron":  func(j *memory.Job) { j.Engine = "megatron" },
	"fsdp":      func(j *memory.Job) { j.Engine = "fsdp" },
}

func newQuickCmd(f *Factory, g *globalOptions) *cobra.Command {
	o := &quickOptions{}
	cmd := &cobra.Command{
		Use:     "quick BILLIONS",
		GroupID: "estimate",
		Short:   "Estimate training memory from a parameter count alone (billions)",
		Long: `Estimate full training of a model known only by its size, in billions of parameters,
as the engine calculators' 'quick' command does: mixed precision (fp32 master weights and
AdamW states), micro-batch 1, 2048 tokens, data parallel over --gpus.

The model is a synthetic Llama-like decoder of that size; the shape rule (hidden size
from the size, 128-wide heads, layers and FFN width solved from the count) is printed
with the estimate. For a real model use 'gpumem estimate --model ...'.`,
		Example: `  gpumem quick 7 --gpus 8 --engine deepspeed
  gpumem quick 70 --gpus 64 --gpu-mem 80 --engine megatron`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return quickRun(f, g, o, args[0])
		},
	}
	fs := cmd.Flags()
	fs.IntVarP(&o.GPUs, "gpus", "g", 1, "number of GPUs (data parallel)")
	fs.Float64VarP(&o.GPUMem, "gpu-mem", "m", 80, "GPU memory in GB as the card is labelled (80 for an 80 GB card; read as GiB, which such cards hold)")
	fs.StringVarP(&o.Engine, "engine", "e", "pytorch", "training engine: pytorch, deepspeed (ZeRO-2), megatron or fsdp")
	fs.StringVarP(&o.Dtype, "dtype", "d", "bf16", "training dtype: fp32, fp16 or bf16 (16-bit means mixed precision)")
	fs.IntVar(&o.SeqLen, "seq-len", 2048, "tokens per sample")
	fs.IntVar(&o.Batch, "batch-size", 1, "micro-batch per GPU")
	fs.IntVar(&o.TP, "tp", 1, "tensor-parallel size (megatron)")
	fs.IntVar(&o.PP, "pp", 1, "pipeline-parallel size (megatron)")
	fs.IntVar(&o.Layouts, "layouts", 5, "when the job does not fit, list this many layouts of the same engine and GPU count that do (0: none)")
	return cmd
}

// quickJob builds the job and model shape of a quick estimate.
func quickJob(o *quickOptions, billions string) (jobfile.Shape, memory.Job, error) {
	b, err := strconv.ParseFloat(strings.TrimSpace(billions), 64)
	if err != nil || math.IsNaN(b) || b <= 0 || b > 10000 {
		return jobfile.Shape{}, memory.Job{}, usageErrorf("quick: want the model size in billions of parameters (e.g. 7 or 0.5), got %q", billions)
	}
	switch {
	case o.GPUs < 1:
		return jobfile.Shape{}, memory.Job{}, usageErrorf("--gpus: want a positive count, got %d", o.GPUs)
	case !(o.GPUMem > 0 && o.GPUMem < 1<<20):
		return jobfile.Shape{}, memory.Job{}, usageErrorf("--gpu-mem: want a positive size in GB, got %g", o.GPUMem)
	case o.SeqLen < 1 || o.Batch < 1:
		return jobfile.Shape{}, memory.Job{}, usageErrorf("--seq-len and --batch-size: want positive integers")
	case o.TP < 1 || o.PP < 1:
		return jobfile.Shape{}, memory.Job{}, usageErrorf("--tp and --pp: want positive integers")
	case o.GPUs%(o.TP*o.PP) != 0:
		return jobfile.Shape{}, memory.Job{}, usageErrorf("--gpus %d is not a multiple of --tp %d × --pp %d", o.GPUs, o.TP, o.PP)
	case o.Layouts < 0:
		return jobfile.Shape{}, memory.Job{}, usageErrorf("--layouts: want a count >= 0, got %d", o.Layouts)
	}
	setEngine, ok := quickEngines[strings.ToLower(o.Engine)]
	if !ok {
		return jobfile.Shape{}, memory.Job{}, usageErrorf("--engine: unknown engine %q (want pytorch, deepspeed, megatron or fsdp)", o.Engine)
	}
	d, err := memory.ParseDType(o.Dtype)
	if err != nil || (d.Name != "fp32" && d.Name != "fp16" && d.Name != "bf16") {
		return jobfile.Shape{}, memory.Job{}, usageErrorf("--dtype: want fp32, fp16 or bf16, got %q", o.Dtype)
	}
	job := memory.Job{Mode: memory.Train, Dtype: d.Name, MicroBatch: o.Batch, SeqLen: o.SeqLen,
		NumGPUs: o.GPUs, DP: o.GPUs / (o.TP * o.PP), TP: o.TP, PP: o.PP, GPUMemory: units.FromFloat(o.GPUMem * float64(units.GiB))}
	if d.Name != "fp32" {
		job.MasterWeights = "fp32" // mixed precision, as the engine calculators count it
	}
	setEngine(&job)
	if (o.TP > 1 || o.PP > 1) && job.Engine != "megatron" {
		return jobfile.Shape{}, memory.Job{}, usageErrorf("--tp and --pp need --engine megatron (got %s)", o.Engine)
	}
	if o.GPUs == 1 && job.Engine == "ddp" {
		job.Engine = "" // one process: no data-parallel buckets
	}
	shape := jobfile.Shape{Name: fmt.Sprintf("quick-%gB", b), Params: int64(math.Round(b * 1e9)), MaxPositions: max(o.SeqLen, 4096)}
	return shape, job, nil
}

func quickRun(f *Factory, g *globalOptions, o *quickOptions, billions string) error {
	shape, job, err := quickJob(o, billions)
	if err != nil {
		return err
	}
	m, note, err := shape.Model()
	if err != nil {
		return fmt.Errorf("quick: %w", err)
	}
	res, err := memory.Estimate(m, job)
	if err != nil {
		return err
	}
	res.Warnings = append([]string{note}, res.Warnings...)
	ro := g.renderOptions(f)
	if err := renderWithFit(f.IO.Out, res, ro); err != nil {
		return err
	}
	if ro.Format == report.JSON || o.Layouts == 0 || res.PerGPU.DevicePeakBytes <= job.GPUMemory {
		return nil
	}
	return quickLayouts(f.IO.Out, ro, o, m, job)
}

// quickLayouts lists the layouts of the job's engine on the same GPU count
// that fit, as the engine calculators' strategy tables do.
func quickLayouts(w io.Writer, ro report.Options, o *quickOptions, m *model.Model, job memory.Job) error {
	space := plan.Space{
		GPUCounts:      []int{job.NumGPUs},
		Engines:        []string{job.Engine},
		MicroBatches:   []int{job.MicroBatch},
		GradCheckpoint: []string{"none", "selective", "full"},
		Offload:        []string{"none"},
		Keep:           o.Layouts,
	}
	switch job.Engine {
	case "megatron":
		space.ZeRO = []int{0, 1}
		space.TP = plan.Pow2Range(1, min(8, job.NumGPUs))
		space.PP = plan.Pow2Range(1, job.NumGPUs)
	case "deepspeed":
		space.ZeRO = []int{0, 1, 2, 3}
	case "fsdp":
		space.ZeRO = []int{2, 3}
	default:
		return nil // plain data parallel has nothing to change but the GPU count
	}
	g := gpu.GPU{Name: fmt.Sprintf("%g GB GPU", o.GPUMem), Vendor: "nvidia", Memory: job.GPUMemory, MemorySource: "--gpu-mem"}
	base := job
	base.TP, base.PP, base.DP = 0, 0, 0
	p, err := plan.SearchModel(m, base, g, space)
	if err != nil {
		return err
	}
	if len(p.Candidates) == 0 {
		_, err := fmt.Fprintf(w, "\nno %s layout on %d GPUs fits (checkpointing and sharding tried); try more GPUs: gpumem plan\n", job.Engine, job.NumGPUs)
		return err
	}
	headers, rows := plan.CandidateRows(p, ro.Bytes)
	t := &report.TableData{Title: fmt.Sprintf("\n%s layouts on %d GPUs that fit:", job.Engine, job.NumGPUs), Headers: lower(headers)}
	for _, r := range rows {
		t.AddRow(r...)
	}
	return t.Render(w, ro.Format)
}
