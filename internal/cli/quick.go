package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/jobfile"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

type quickOptions struct {
	GPUs   int
	GPUMem float64
	Engine string
	Dtype  string
	SeqLen int
	Batch  int
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
		NumGPUs: o.GPUs, DP: o.GPUs, GPUMemory: units.FromFloat(o.GPUMem * float64(units.GiB))}
	if d.Name != "fp32" {
		job.MasterWeights = "fp32" // mixed precision, as the engine calculators count it
	}
	setEngine(&job)
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
	return renderWithFit(f.IO.Out, res, g.renderOptions(f))
}
