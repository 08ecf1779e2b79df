package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
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
	// board is the GPU the layouts are checked against.
	board gpu.GPU
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
			rep := servePlanReport{Model: m.ID, Job: opts.Job, Layouts: checkLayouts(m, opts.Job, rows, opts.board), Warnings: warnings}
			if base, err := memory.Estimate(m, opts.Job); err == nil {
				rep.Job, rep.Assumed = base.Job, base.Assumed
				for _, k := range []string{"tp", "pp", "ep"} {
					rep.Assumed.Delete(k) // each layout sets them
				}
			}
			ro := g.renderOptions(f)
			if ro.Format == report.JSON {
				return report.WriteJSON(f.IO.Out, rep)
			}
			if err := servePlanTable(m.ID, rep.Layouts, ro).Render(f.IO.Out, ro.Format); err != nil {
				return err
			}
			if _, err := fmt.Fprintf(f.IO.Out, "%s\n", servingDecisionNote(opts.Job.DecideOn)); err != nil {
				return err
			}
			if err := report.WriteAssumedList(f.IO.Out, report.Assumed(memory.Result{Job: rep.Job, Assumed: rep.Assumed}), ro); err != nil {
				return err
			}
			if _, err := io.WriteString(f.IO.Out, servePlanLegend(rows)); err != nil {
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
	// Job is the deployment as estimated on one GPU, and Assumed the
	// settings it left to vLLM's defaults (the layouts set tp, pp, ep).
	Job     memory.Job    `json:"job"`
	Assumed memory.KeySet `json:"assumed,omitzero"`
	// Layouts has one row per parallel layout, fewest GPUs first, with
	// its verdict on the GPU.
	Layouts []servePlanLayout `json:"layouts"`
	// Warnings are the model's warnings and those of every layout's
	// estimate, each once.
	Warnings []string `json:"warnings,omitempty"`
}

// servePlanLayout is one layout of a serving plan with its verdict.
type servePlanLayout struct {
	memory.ServingPlanRow
	// Fit is the layout's verdict on the GPU (nil for an invalid
	// layout): by default on the upper edge of the band, where the
	// memory vLLM does not budget may leave a KV pool too small for
	// max_model_len.
	Fit *plan.Fit `json:"fit,omitempty"`
}

// checkLayouts gives each valid layout its verdict on board, from an
// estimate of the layout (a serving estimate is milliseconds).
func checkLayouts(m *model.Model, job memory.Job, rows []memory.ServingPlanRow, board gpu.GPU) []servePlanLayout {
	out := make([]servePlanLayout, len(rows))
	for i, r := range rows {
		out[i].ServingPlanRow = r
		if r.Serving == nil {
			continue
		}
		j := job
		j.Mode, j.TP, j.PP, j.EP = memory.Serving, r.TP, r.PP, r.EP
		res, err := memory.Estimate(m, j)
		if err != nil {
			continue
		}
		f := plan.Check(res, board)
		out[i].Fit = &f
	}
	return out
}

// servingDecisionNote says what the verdicts of a serving plan decide on.
func servingDecisionNote(decide string) string {
	if d, _ := memory.ParseDecideOn(decide); d == memory.DecidePoint {
		return "verdicts decide on the estimate (--decide-on point): does one sequence of max_model_len fit the KV pool"
	}
	return "verdicts decide on the band's upper edge: tight when the KV pool holds max_model_len only if the memory outside vLLM's budget stays at the estimate (--decide-on point: on the estimate)"
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
	fs.StringVar(&j.DecideOn, "decide-on", "", "verdicts decide on the band's upper edge (upper, default) or on the estimate (point)")
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
	fs.BoolVar(&j.CUDAGraphs, "cuda-graphs", false, "before vLLM 0.21: count the CUDA-graph pool (outside vLLM's budget); from 0.21 vLLM counts it in the budget")
	fs.Float64Var(&j.MemFractionStatic, "mem-fraction-static", 0, "SGLang: share of the free GPU memory at startup for weights and KV pool (default SGLang's, by GPU size)")
	fs.IntVar(&j.CUDAGraphMaxBS, "cuda-graph-max-bs", 0, "SGLang: largest decode batch captured in a CUDA graph (default SGLang's, by GPU size and TP)")
	fs.BoolVar(&j.DisableCUDAGraph, "disable-cuda-graph", false, "SGLang: capture no CUDA graphs")
	fs.BoolVar(&j.EnforceEager, "enforce-eager", false, "serving: vLLM --enforce-eager, no CUDA graph is captured")
	fs.Var(vllmVersionValue{&j.Stack}, "vllm-version", "serving: the vLLM release the server runs, e.g. 0.19.0 (default the newest gpumem knows; same as --stack vllm=X)")
}

// vllmVersionValue is --vllm-version, shorthand for --stack vllm=X: it
// sets the job's Stack["vllm"] after checking the version is one the
// memory model covers.
type vllmVersionValue struct{ st *memory.Stack }

func (v vllmVersionValue) String() string {
	if v.st == nil {
		return ""
	}
	return (*v.st)["vllm"]
}

func (v vllmVersionValue) Set(s string) error {
	if err := checkVLLMVersion(s); err != nil {
		return err
	}
	if *v.st == nil {
		*v.st = memory.Stack{}
	}
	return v.st.Set("vllm", strings.TrimSpace(s))
}

func (v vllmVersionValue) Type() string { return "version" }

// checkVLLMVersion accepts a vLLM release between the oldest the memory
// model covers and the newest its rules were checked against; the error
// names both.
func checkVLLMVersion(s string) error {
	var pkg memory.StackPackage
	for _, p := range memory.StackPackages() {
		if p.Name == "vllm" {
			pkg = p
		}
	}
	accepted := fmt.Sprintf("want a vLLM release from %s to %s, such as 0.19.0", pkg.Oldest, pkg.Default)
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "v0", "v1":
		return fmt.Errorf("%q names vLLM's engine, not a release (V0 is vLLM before 0.8, V1 from 0.8 on): %s", s, accepted)
	}
	v, err := memory.ParseVersion(s, false)
	if err != nil {
		return fmt.Errorf("%q is not a version: %s", s, accepted)
	}
	oldest, _ := memory.ParseVersion(pkg.Oldest, false)
	newest, _ := memory.ParseVersion(pkg.Default, false)
	switch {
	case v.Compare(oldest) < 0:
		return fmt.Errorf("vLLM %s is older than %s, the oldest the memory model covers: %s", s, pkg.Oldest, accepted)
	case v.Compare(newest) > 0:
		return fmt.Errorf("vLLM %s is newer than %s, the newest release gpumem's version rules were checked against: %s", s, pkg.Default, accepted)
	}
	return nil
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
		resolved, board, err := plan.ResolveGPU(cat, *j)
		if err != nil {
			return &UsageError{Err: fmt.Errorf("--gpu: %w", err)}
		}
		if o.GPUMemory != "" {
			board.Memory, board.CUDAMemory = j.GPUMemory, 0
		}
		*j, o.board = resolved, board
	}
	if j.GPUMemory <= 0 {
		return usageErrorf("serve-plan needs the GPU: pass --gpu (e.g. H100) or --gpu-memory (e.g. 80GiB)")
	}
	if j.GPU == "" {
		o.board = gpu.GPU{Name: gpu.CustomName, Vendor: "nvidia", Memory: j.GPUMemory, MemorySource: "--gpu-memory"}
	}
	d, err := memory.ParseDecideOn(j.DecideOn)
	if err != nil {
		return usageErrorf("--decide-on: %v", err)
	}
	if j.DecideOn != "" {
		j.DecideOn = d
	}
	j.Mode = memory.Serving
	return nil
}

// servePlanLegend says what the columns mean and which vLLM version the
// figures follow, so that the pool's concurrency is not read as
// max_num_seqs or the other way round.
func servePlanLegend(rows []memory.ServingPlanRow) string {
	for _, r := range rows {
		s := r.Serving
		if s == nil {
			continue
		}
		ver := "vLLM " + s.VLLMVersion
		if s.VLLMVersionAssumed {
			ver += " (assumed: the newest release gpumem knows; state yours with --vllm-version)"
		}
		return fmt.Sprintf("\n%s. kv tokens: what the pool holds; seqs: sequences of %d tokens the pool holds at once "+
			"(max_num_seqs %d is the scheduler's cap on running sequences, not a capacity); verdict: whether one request "+
			"of max_model_len tokens fits the pool (vLLM refuses to start otherwise).\n", ver, s.SeqLen, s.MaxNumSeqs)
	}
	return ""
}

// servePlanTable renders the layouts as rows.
func servePlanTable(id string, rows []servePlanLayout, ro report.Options) *report.TableData {
	t := &report.TableData{
		Title:   "vLLM serving plan for " + id,
		Headers: []string{"gpus", "layout", "weights/gpu", "activations", "kv pool/gpu", "kv tokens", "seqs", "verdict", "note"},
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
		if r.Fit != nil {
			fits = strings.ReplaceAll(string(r.Fit.Verdict), "_", " ")
		}
		note := ""
		if s.KVPoolBytes == 0 {
			note = "weights and activations exceed the budget"
		}
		t.AddRow(fmt.Sprint(r.GPUs), lay, ro.Bytes(s.WeightsBytes), ro.Bytes(s.ActivationPeakBytes), ro.Bytes(s.KVPoolBytes),
			fmt.Sprint(s.KVTokens), fmt.Sprint(s.MaxConcurrentSeqs), fits, note)
	}
	t.AddFooter(fmt.Sprintf("%d layouts", len(rows)), "", "", "", "", "",
		fmt.Sprintf("of %d tokens", seqLen), fmt.Sprintf("max_model_len %d", maxLen), "")
	return t
}
