package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/report"
	"github.com/gpumem/gpumem/units"
)

// servePlanOptions are the inputs of gpumem serve-plan.
type servePlanOptions struct {
	Model     string
	Job       memory.Job
	GPUMemory string
	GPUsFile  string
	MaxGPUs   int
}

func newServePlanCmd(f *Factory, g *globalOptions) *cobra.Command {
	opts := &servePlanOptions{}
	cmd := &cobra.Command{
		Use:     "serve-plan [MODEL]",
		GroupID: "estimate",
		Short:   "Size a vLLM deployment: KV pool, tokens and concurrent sequences per parallel layout",
		Long: `Work out, the way vLLM does at startup, how much KV cache a deployment gets on every
tensor- and pipeline-parallel layout up to --max-gpus GPUs (and, for MoE models, with
expert parallelism): gpu_memory_utilization × the GPU's memory, minus the weights, the
profiled activation peak and non-torch memory, cut into blocks of --block-size tokens.

For each layout it prints the pool per GPU, how many tokens it holds, how many sequences
of --seq-len tokens (default --max-model-len) run at once, and whether one sequence of
--max-model-len tokens fits at all (vLLM refuses to start otherwise).`,
		Example: `  gpumem serve-plan llama3-8b --gpu H100 --max-model-len 32768
  gpumem serve-plan Qwen/Qwen2.5-72B --gpu A100-80GB --kv-cache-dtype fp8 --max-gpus 8
  gpumem serve-plan deepseek-ai/DeepSeek-V3 --gpu H200 --max-model-len 65536 --format json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := modelFromArgs(&opts.Model, args); err != nil {
				return err
			}
			if err := opts.finish(cmd.Flags()); err != nil {
				return err
			}
			m, err := resolveModel(cmd.Context(), f, opts.Model)
			if err != nil {
				return err
			}
			rows, err := memory.ServingPlan(m, opts.Job, opts.MaxGPUs)
			if err != nil {
				return err
			}
			ws := [][]string{m.Warnings}
			for _, r := range rows {
				ws = append(ws, r.Warnings)
			}
			warnings := report.Warnings(ws...)
			ro := g.renderOptions(f)
			if ro.Format == report.JSON {
				return report.WriteJSON(f.IO.Out, servePlanReport{Model: m.ID, Layouts: rows, Warnings: warnings})
			}
			if err := servePlanTable(m.ID, rows, ro).Render(f.IO.Out, ro.Format); err != nil {
				return err
			}
			return report.WriteWarnings(f.IO.Out, warnings)
		},
	}
	addServePlanFlags(cmd.Flags(), opts)
	return cmd
}

// servePlanReport is what gpumem serve-plan prints as JSON.
type servePlanReport struct {
	Model string `json:"model"`
	// Layouts has one row per parallel layout, fewest GPUs first.
	Layouts []memory.ServingPlanRow `json:"layouts"`
	// Warnings are the model's warnings and those of every layout's
	// estimate, each once.
	Warnings []string `json:"warnings,omitempty"`
}

// addServePlanFlags declares the flags, with vLLM's names.
func addServePlanFlags(fs *pflag.FlagSet, o *servePlanOptions) {
	j := &o.Job
	fs.StringVarP(&o.Model, "model", "m", "", "model: catalog id or alias, Hub id, or path to config.json or a model folder")
	fs.StringVar(&j.GPU, "gpu", "", "GPU kind, e.g. H100, A100-80GB, L40S ('gpumem gpus' lists them)")
	fs.StringVar(&o.GPUMemory, "gpu-memory", "", "total memory of one GPU when not implied by --gpu, e.g. 80GiB")
	fs.StringVar(&o.GPUsFile, "gpus-file", "", "JSON or YAML file of extra GPUs merged over the built-in catalog")
	fs.IntVar(&o.MaxGPUs, "max-gpus", 8, "largest number of GPUs to lay the model out on")
	fs.StringVar(&j.Dtype, "dtype", "", "weights: bf16, fp16, fp8, int8, int4, ... (default the checkpoint's, else bf16)")
	fs.IntVar(&j.SeqLen, "seq-len", 0, "length of the sequences counted as concurrent (default --max-model-len)")
	fs.BoolVar(&j.AllowLong, "allow-long", false, "allow --max-model-len beyond the model's max_position_embeddings")
	addServingFlags(fs, j)
	fs.SetNormalizeFunc(normalizeJobFlag)
}

// addServingFlags declares the vLLM serving flags estimate and serve-plan
// share, with vLLM's names; memory/serving.go applies the defaults.
func addServingFlags(fs *pflag.FlagSet, j *memory.Job) {
	fs.StringVar(&j.KVCacheDtype, "kv-cache-dtype", "", "KV cache dtype: auto, fp16, bf16 or fp8")
	fs.IntVar(&j.MaxModelLen, "max-model-len", 0, "serving: longest sequence the server accepts (vLLM --max-model-len; default max_position_embeddings)")
	fs.Float64Var(&j.GPUMemoryUtilization, "gpu-memory-utilization", 0, "serving: fraction of GPU memory vLLM may use (default 0.9)")
	fs.IntVar(&j.MaxNumSeqs, "max-num-seqs", 0, "serving: maximum concurrent sequences (default by GPU size, as vLLM)")
	fs.IntVar(&j.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "serving: tokens per scheduler step (default by GPU size, as vLLM)")
	fs.IntVar(&j.BlockSize, "block-size", 0, "serving: KV cache block size in tokens (default 16)")
	fs.BoolVar(&j.CUDAGraphs, "cuda-graphs", false, "count the CUDA-graph memory pool (outside vLLM's budget)")
	fs.Float64Var(&j.MemFractionStatic, "mem-fraction-static", 0, "SGLang: share of the free GPU memory at startup for weights and KV pool (default SGLang's, by GPU size)")
	fs.IntVar(&j.CUDAGraphMaxBS, "cuda-graph-max-bs", 0, "SGLang: largest decode batch captured in a CUDA graph (default SGLang's, by GPU size and TP)")
	fs.BoolVar(&j.DisableCUDAGraph, "disable-cuda-graph", false, "SGLang: capture no CUDA graphs")
}

// finish validates the flags and resolves the GPU's memory from the catalog.
func (o *servePlanOptions) finish(fs *pflag.FlagSet) error {
	j := &o.Job
	for _, c := range []struct {
		name string
		v    int
	}{{"max-gpus", o.MaxGPUs}, {"max-model-len", j.MaxModelLen}, {"max-num-seqs", j.MaxNumSeqs},
		{"max-num-batched-tokens", j.MaxNumBatchedTokens}, {"block-size", j.BlockSize}, {"seq-len", j.SeqLen}} {
		if (fs.Changed(c.name) || c.name == "max-gpus") && c.v <= 0 {
			return usageErrorf("--%s: want a positive integer, got %d", c.name, c.v)
		}
	}
	if fs.Changed("gpu-memory-utilization") && !(j.GPUMemoryUtilization > 0 && j.GPUMemoryUtilization <= 1) {
		return usageErrorf("--gpu-memory-utilization: want a fraction in (0, 1], got %g", j.GPUMemoryUtilization)
	}
	if o.GPUMemory != "" {
		b, err := units.ParseBytes(o.GPUMemory)
		if err != nil {
			return &UsageError{Err: fmt.Errorf("--gpu-memory: %w", err)}
		}
		if b <= 0 {
			return usageErrorf("--gpu-memory: want a positive size, got %q", o.GPUMemory)
		}
		j.GPUMemory = b
	}
	if j.GPU == "" {
		if err := gpusFileWithoutGPU(o.GPUsFile); err != nil {
			return err
		}
	}
	if j.GPU != "" {
		cat := gpu.Default()
		if o.GPUsFile != "" {
			c, err := gpu.LoadFile(o.GPUsFile)
			if err != nil {
				return fmt.Errorf("--gpus-file: %w", err)
			}
			cat = c
		}
		// The catalog fills the CUDA-reported total vLLM budgets from and the
		// compute capability; a --gpu-memory the user gave wins.
		resolved, _, err := plan.ResolveGPU(cat, *j)
		if err != nil {
			return &UsageError{Err: fmt.Errorf("--gpu: %w", err)}
		}
		*j = resolved
	}
	if j.GPUMemory <= 0 {
		return usageErrorf("serve-plan needs the GPU: pass --gpu (e.g. H100) or --gpu-memory (e.g. 80GiB)")
	}
	j.Mode = memory.Serving
	return nil
}

// servePlanTable renders the layouts as rows.
func servePlanTable(id string, rows []memory.ServingPlanRow, ro report.Options) *report.TableData {
	t := &report.TableData{
		Title:   "vLLM serving plan for " + id,
		Headers: []string{"gpus", "layout", "weights/gpu", "activations", "kv pool/gpu", "kv tokens", "seqs", "max-model-len", "note"},
		Aligns:  []report.Align{report.Right, report.Left, report.Right, report.Right, report.Right, report.Right, report.Right, report.Left, report.Left},
	}
	var seqLen, maxLen int
	for _, r := range rows {
		lay := fmt.Sprintf("tp %d pp %d", r.TP, r.PP)
		if r.EP > 1 {
			lay += fmt.Sprintf(" ep %d", r.EP)
		}
		if r.Serving == nil {
			t.AddRow(fmt.Sprint(r.GPUs), lay, "", "", "", "", "", "invalid", r.Error)
			continue
		}
		s := r.Serving
		seqLen, maxLen = s.SeqLen, s.MaxModelLen
		fits := "fits"
		if !s.MaxModelLenFits {
			fits = "does not fit"
		}
		note := ""
		if s.KVPoolBytes == 0 {
			note = "weights and activations exceed the budget"
		}
		t.AddRow(fmt.Sprint(r.GPUs), lay, ro.Bytes(s.WeightsBytes), ro.Bytes(s.ActivationPeakBytes), ro.Bytes(s.KVPoolBytes),
			fmt.Sprint(s.KVTokens), fmt.Sprint(s.MaxConcurrentSeqs), fits, note)
	}
	t.AddFooter(fmt.Sprintf("%d layouts", len(rows)), "", "", "", "", "",
		fmt.Sprintf("of %d tokens", seqLen), fmt.Sprintf("%d tokens", maxLen), "")
	return t
}
