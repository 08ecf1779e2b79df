package cli

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/internal/textdist"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/report"
	"github.com/gpumem/gpumem/units"
)

type estimateOptions struct {
	Model   string
	Hub     hubOptions
	Job     memory.Job
	Explain bool

	// Flags that need interpretation before they become Job fields.
	Mode           string
	BatchSize      int
	GradCheckpoint string
	FlashAttn      bool
	LoRA           bool
	QLoRA          bool
	Liger          bool
	Packed         bool
	DoubleQuant    bool
	GPUMemory      string
	HostMemory     string
	// Loading switches whose default is not their zero value.
	LowCPUMemUsage         bool
	ZeroInit               bool
	CPURAMEfficientLoading bool
	SyncModuleStates       bool
	// board is the GPU --gpu names (or a board of --gpu-memory alone):
	// estimate prints its verdict on it.
	board  *gpu.GPU
	Set    []string
	TP, PP int

	// Compat holds other tools' spellings and flags (compat.go).
	Compat compatOptions
	// ConfigFile is --config: a job file whose settings the flags override.
	ConfigFile string
	// TrainConfig is --deepspeed, --training-args and --from (estimate_from.go).
	TrainConfig trainConfigOptions
	// GPUsFile is --gpus-file: boards merged over the built-in catalog.
	GPUsFile string
	// ConstantsFile is --constants: a profile of named constants.
	ConstantsFile string
	profile       map[string]float64
	// copyKeys are job-file keys without a flag, copied after finish.
	copyKeys []string
	// env reads the environment (Factory.Getenv) and notes receives what
	// finish took from it (Factory.IO.ErrOut); nil for neither.
	env   func(string) string
	notes io.Writer
}

// withEnv gives o the Factory's environment and notes stream.
func (o *estimateOptions) withEnv(f *Factory) {
	o.env = f.Getenv
	if f.IO != nil {
		o.notes = f.IO.ErrOut
	}
}

// allocConfEnv are the environment variables PyTorch reads its allocator
// configuration from, first match wins: PYTORCH_ALLOC_CONF, then the
// older names (c10/core/AllocatorConfig.cpp
// AcceleratorAllocatorConfig::instance).
var allocConfEnv = []string{"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF"}

// allocConfFromEnv sets the job's allocator configuration from the
// environment when neither --alloc-conf nor the job file gave one, and
// says so.
func (o *estimateOptions) allocConfFromEnv() {
	if o.Job.AllocConf != "" || o.env == nil {
		return
	}
	for _, name := range allocConfEnv {
		if v := strings.TrimSpace(o.env(name)); v != "" {
			o.Job.AllocConf = v
			if o.notes != nil {
				fmt.Fprintf(o.notes, "note: --alloc-conf %q from %s in the environment\n", v, name)
			}
			return
		}
	}
}

func newEstimateCmd(f *Factory, g *globalOptions) *cobra.Command {
	opts := &estimateOptions{}
	opts.withEnv(f)
	cmd := &cobra.Command{
		Use:     "estimate [MODEL]",
		GroupID: "estimate",
		Short:   "Estimate the per-GPU memory of a training, inference or serving job",
		Long: `Estimate the peak GPU memory of one job, per GPU, with a breakdown by component and the
three peaks PyTorch and the driver report:

  allocated  torch.cuda.max_memory_allocated (live tensors)
  reserved   torch.cuda.max_memory_reserved (plus caching-allocator rounding and fragmentation)
  device     what nvidia-smi shows (plus CUDA context and library workspaces)

The peak is the largest of the phases of a step (forward, loss, backward, optimizer step;
prefill and decode for inference), and the table says which phase it is. The band line
gives the range the device peak is expected in, and the terms it comes from.

A job file (--config job.json or job.yaml, see 'gpumem validate') gives the settings
once; flags on the command line override it. Other calculators' spellings are accepted
(--precision, --seq-length, --gradient-checkpointing, --flashattn true, --lora true,
--cpu-offload-optimizer, ...): README "Coming from another calculator" lists them.`,
		Example: `  # full fine-tuning, pure bf16, AdamW, 4k tokens
  gpumem estimate --model llama3-8b --seq-len 4096 --per-device-batch 1

  # LoRA r=16 on all linear layers, with gradient checkpointing and FlashAttention
  gpumem estimate --model llama3-8b --method lora --lora-rank 16 --lora-target-modules all-linear \
      --grad-checkpoint full --attn flash --seq-len 8192

  # QLoRA (NF4) of a 70B model, paged 8-bit AdamW
  gpumem estimate --model meta-llama/Llama-3.1-70B --method qlora --optimizer paged_adamw_8bit --seq-len 8192

  # inference with a KV cache for 8 sequences of 4k prompt + 1k generated tokens
  gpumem estimate --model qwen2.5-7b --mode inference --batch-size 8 --prompt-len 4096 --gen-len 1024

  # show every formula with its inputs
  gpumem estimate --model llama2-7b --seq-len 4096 --explain

  # a job file, with a longer sequence than it states
  gpumem estimate --config job.yaml --seq-len 8192`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return estimateRun(cmd, f, g, opts, args)
		},
	}
	addEstimateFlags(cmd.Flags(), opts)
	addHubFlags(cmd.Flags(), &opts.Hub)
	addTrainConfigFlags(cmd.Flags(), opts)
	addGPUsFileFlag(cmd.Flags(), &opts.GPUsFile)
	return cmd
}

// applyGPU looks --gpu up in the GPU catalog (--gpus-file, else the
// --config-dir gpu_types.json, else the built-in one) and copies the
// board's facts into the job, as every front end does (plan.ResolveGPU):
// the estimator reads no catalog. --gpu-memory wins over the board's
// memory. An unknown or ambiguous name is a usage error.
func (opts *estimateOptions) applyGPU(cfg *configDir) error {
	if opts.Job.GPU == "" {
		if opts.Job.GPUMemory > 0 {
			opts.board = &gpu.GPU{Name: gpu.CustomName, Vendor: "nvidia", Memory: opts.Job.GPUMemory, MemorySource: "--gpu-memory"}
		}
		return gpusFileWithoutGPU(opts.GPUsFile)
	}
	cat := cfg.GPUs
	if opts.GPUsFile != "" || cat == nil {
		c, err := loadGPUCatalog(opts.GPUsFile)
		if err != nil {
			return err
		}
		cat = c
	}
	job, board, err := plan.ResolveGPU(cat, opts.Job)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("--gpu: %w", err)}
	}
	if opts.Job.GPUMemory > 0 {
		// --gpu-memory is the board's memory, as fit reads it.
		board.Memory, board.CUDAMemory = opts.Job.GPUMemory, 0
	}
	opts.Job, opts.board = job, &board
	return nil
}

// gpusFileWithoutGPU refuses --gpus-file without --gpu: the file only
// adds boards for --gpu to name, so it would be ignored silently.
func gpusFileWithoutGPU(path string) error {
	if path == "" {
		return nil
	}
	return usageErrorf("--gpus-file %s: the file adds boards for --gpu to name, and no --gpu is given; add --gpu (or drop --gpus-file)", path)
}

// estimateRun resolves the model, estimates the job and renders it.
func estimateRun(cmd *cobra.Command, f *Factory, g *globalOptions, opts *estimateOptions, args []string) error {
	cfg, err := loadConfigDir(opts.Compat.ConfigDir)
	if err != nil {
		return err
	}
	ro := cfg.renderOptions(cmd, g.renderOptions(f))
	ro.Explain = opts.Explain
	if opts.Compat.ListTypes {
		return listTypes(f, ro, cfg)
	}
	in, err := opts.inputs(cmd, f, args, cfg)
	if err != nil {
		return err
	}
	if opts.Compat.ShowDetailed {
		return showDetailed(f, in.model, in.job, cfg, ro)
	}
	res, err := in.estimate(cmd.Flags(), opts)
	if err != nil {
		return err
	}
	if opts.board != nil {
		// Always a verdict on the GPU given, decided as fit decides.
		fit := plan.Check(res, *opts.board)
		ro.Fit = &fit
	}
	return report.Estimate(f.IO.Out, res, ro)
}

// estimateInputs are a resolved model and job, with notes on how they
// were read.
type estimateInputs struct {
	model *model.Model
	job   memory.Job
	// warnings are added to the result: the model's (an assumed model
	// shape, a stand-in for a model that could not be read, defaults).
	warnings []string
}

// inputs reads the job file, interprets the flags and resolves the model.
func (opts *estimateOptions) inputs(cmd *cobra.Command, f *Factory, args []string, cfg *configDir) (estimateInputs, error) {
	var in estimateInputs
	fs := cmd.Flags()
	jf, err := loadJobFile(opts.ConfigFile)
	if err != nil {
		return in, err
	}
	if opts.profile, err = loadConstantsFile(opts.ConstantsFile); err != nil {
		return in, err
	}
	if err := modelFromArgs(&opts.Model, args); err != nil {
		return in, err
	}
	if jf != nil {
		if err := opts.applyJobFile(fs, jf); err != nil {
			return in, err
		}
		for _, n := range jf.Notes {
			fmt.Fprintf(f.IO.ErrOut, "note: %s: %s\n", jf.Name, n)
		}
	}
	if err := opts.finish(fs); err != nil {
		return in, err
	}
	opts.finishJobFile(jf)
	if err := opts.applyTrainConfig(fs); err != nil {
		return in, err
	}
	if err := cfg.applyToJob(fs, &opts.Job); err != nil {
		return in, err
	}
	if err := opts.applyGPU(cfg); err != nil {
		return in, err
	}
	if opts.Compat.LoadFullModel {
		fmt.Fprintln(f.IO.ErrOut, "note: --load-full-model is not needed: gpumem never loads weights; it counts every parameter tensor exactly from config.json")
	}
	in.job = opts.Job
	if opts.Model == "" && jf != nil && jf.Shape != nil {
		m, err := syntheticModel(jf)
		if err != nil {
			return in, err
		}
		in.model, in.warnings = m, m.Warnings
		return in, nil
	}
	in.model, err = resolveModelWith(cmd.Context(), f, opts.Model, opts.Hub)
	if err != nil {
		return in, err
	}
	in.warnings = in.model.Warnings
	return in, nil
}

// estimate runs the estimate, with --fragmentation-gib turned into the
// job's fragmentation fraction first.
func (in estimateInputs) estimate(fs *pflag.FlagSet, opts *estimateOptions) (memory.Result, error) {
	job := in.job
	if fs.Changed("fragmentation-gib") {
		if err := checkCushion(in.model, job); err != nil {
			return memory.Result{}, err
		}
		var err error
		cushion := units.FromFloat(opts.Compat.FragmentationGiB * float64(units.GiB))
		if job, err = memory.SetReservedCushion(in.model, job, cushion); err != nil {
			return memory.Result{}, fmt.Errorf("--fragmentation-gib: %w", err)
		}
	}
	res, err := memory.Estimate(in.model, job)
	if err != nil {
		return res, err
	}
	res.Warnings = slices.Concat(in.warnings, opts.TrainConfig.warnings, res.Warnings)
	return res, nil
}

// checkCushion rejects the command lines --fragmentation-gib cannot
// apply to, as usage errors: serving (no fragmentation term) and a
// --set of the constant it sets.
func checkCushion(m *model.Model, job memory.Job) error {
	if job.Mode == memory.Serving {
		return usageErrorf("--fragmentation-gib: a serving estimate has no fragmentation term (vLLM sizes its KV pool from the memory left under --gpu-memory-utilization)")
	}
	name, err := memory.FragmentationConstant(m, job)
	if err != nil {
		return fmt.Errorf("--fragmentation-gib: %w", err)
	}
	if _, ok := job.Constants[name]; ok {
		return usageErrorf("--fragmentation-gib and --set %s disagree; give one", name)
	}
	return nil
}

// addEstimateFlags declares the job flags. Each maps onto one memory.Job
// field; the comments in memory/job.go document the defaults.
func addEstimateFlags(fs *pflag.FlagSet, o *estimateOptions) {
	j := &o.Job
	fs.StringVarP(&o.Model, "model", "m", "", "model: catalog id or alias, Hub id, or path to config.json or a model folder")
	fs.StringVar(&o.Mode, "mode", "train", "what the job does: train, inference or serving")
	fs.StringVar(&o.ConfigFile, "config", "", "job file (JSON or YAML) with the job's settings; flags given on the command line override it")
	fs.BoolVar(&o.Explain, "explain", false, "print each component's formula with its inputs and source")

	// Precision and optimizer.
	fs.StringVar(&j.Dtype, "dtype", "", "weights as held on the GPU: fp32, fp16, bf16, fp8, int8, int4, nf4 (default bf16)")
	fs.StringVar(&j.MasterWeights, "master-weights", "", "fp32 master copy of the weights: fp32 or none (default: what the recipe implies)")
	fs.StringVar(&j.ComputeDtype, "compute-dtype", "", "autocast dtype when --dtype fp32 (AMP): bf16 or fp16")
	fs.StringVar(&j.Optimizer, "optimizer", "", "optimizer, Hugging Face optim name or short name (default adamw_torch); 'gpumem optimizers' lists them")

	// Batch and sequence.
	fs.IntVar(&j.MicroBatch, "per-device-batch", 0, "training micro-batch per GPU (default 1)")
	fs.IntVar(&o.BatchSize, "batch-size", 0, "batch: the micro-batch when training, concurrent sequences for inference")
	fs.IntVar(&j.GradAccum, "grad-accum", 0, "gradient accumulation steps (default 1)")
	fs.IntVar(&j.SeqLen, "seq-len", 0, "tokens per sample (training) or per sequence (inference)")
	fs.BoolVar(&o.Packed, "packed", true, "samples are packed to --seq-len; false means --seq-len only caps variable-length data")
	fs.BoolVar(&j.AllowLong, "allow-long", false, "allow --seq-len beyond the model's max_position_embeddings")

	// Activations.
	fs.StringVar(&j.Attention, "attn", "", "attention implementation: eager, sdpa or flash (default sdpa)")
	fs.BoolVar(&o.FlashAttn, "flashattn", false, "same as --attn flash")
	fs.StringVar(&o.GradCheckpoint, "grad-checkpoint", "", "gradient checkpointing: none, full, selective, every-N (true = full), or op (torchtitan's per-op selective policy, with --framework torchtitan)")
	fs.StringVar(&j.FusedLoss, "fused-loss", "", "loss implementation: none, liger, chunked or chunked-compiled (bare or true: liger, a fused linear cross-entropy)")
	fs.BoolVar(&o.Liger, "liger", false, "Liger kernels (fused linear cross-entropy, fused norms and SwiGLU)")
	fs.BoolVar(&j.Compile, "compile", false, "torch.compile the model")
	fs.StringVar(&j.Float8, "float8", "", "torchao float8 training of the Linears, by recipe: tensorwise, rowwise or rowwise_with_gw_hp")
	fs.BoolVar(&j.Float8AllGather, "float8-all-gather", false, "FSDP2 all-gathers the float8 weights (torchao enable_fsdp_float8_all_gather; tensorwise)")
	fs.BoolVar(&j.ActivationOffload, "activation-offload", false, "offload saved activations to CPU")
	fs.BoolVar(&j.OptimizerInBwd, "optimizer-in-backward", false, "step the optimizer inside backward (no full gradient set alive)")
	fs.StringVar(&j.Framework, "framework", "", "training framework whose activation layout to model: hf, torchtune, litgpt, megatron, torchtitan (default hf)")
	fs.Var(stackValue{&j.Stack}, "stack", "software versions the job runs, e.g. transformers=4.48.1,torch=2.4.1 (unstated packages: their newest release; 'gpumem constants --rules')")
	fs.StringSliceVar(&j.Software, "software", nil, "older software stack: torch1, transformers<4.36, bnb<0.43.2 (deprecated: use --stack)")
	fs.StringVar(&j.AllocConf, "alloc-conf", "", "CUDA caching allocator configuration as PYTORCH_CUDA_ALLOC_CONF takes it, e.g. expandable_segments:True (default: the PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF environment variable)")

	// Fine-tuning.
	fs.StringVar(&j.Method, "method", "", "fine-tuning method: full, lora, qlora or frozen, or a PEFT method by name (ia3, vera, prefix-tuning, ...; see --peft-variant) (default full)")
	fs.BoolVar(&o.LoRA, "lora", false, "same as --method lora")
	fs.BoolVar(&o.QLoRA, "qlora", false, "same as --method qlora")
	fs.IntVar(&j.LoRARank, "lora-rank", 0, "LoRA rank r (default 16)")
	fs.IntVar(&j.LoRAAlpha, "lora-alpha", 0, "LoRA alpha")
	fs.StringSliceVar(&j.LoRATargets, "lora-target-modules", nil, "modules that get adapters, comma- or space-separated (q_proj,v_proj,... or all-linear)")
	fs.Float64Var(&j.LoRADropout, "lora-dropout", 0, "LoRA dropout probability")
	fs.StringVar(&j.PEFTVariant, "peft-variant", "", "PEFT method: lora, dora, lora-fa, adalora, ia3, loha, lokr, oft, boft, vera, prefix-tuning, prompt-tuning or p-tuning (default lora)")
	fs.IntVar(&j.NumVirtualTokens, "num-virtual-tokens", 0, "virtual tokens of prefix-tuning, prompt-tuning and p-tuning (PEFT num_virtual_tokens)")
	fs.StringSliceVar(&j.FeedforwardModules, "feedforward-modules", nil, "IA3 modules that scale their input (PEFT feedforward_modules; default PEFT's per model type)")
	fs.IntVar(&j.OFTBlockSize, "oft-block-size", 0, "OFT block size when --lora-rank (OFT r) is not given (default 32)")
	fs.IntVar(&j.BOFTBlockSize, "boft-block-size", 0, "BOFT block size (default 4 unless --boft-block-num is given)")
	fs.IntVar(&j.BOFTBlockNum, "boft-block-num", 0, "BOFT blocks per module (instead of --boft-block-size)")
	fs.IntVar(&j.BOFTButterflyFactor, "boft-n-butterfly-factor", 0, "BOFT butterfly factor (default 1)")
	fs.IntVar(&j.DecomposeFactor, "decompose-factor", 0, "LoKr Kronecker decomposition factor (default -1: near the square root)")
	fs.BoolVar(&j.DecomposeBoth, "decompose-both", false, "LoKr: also split the left Kronecker factor into a rank-r pair")
	fs.BoolVar(&j.PrefixProjection, "prefix-projection", false, "prefix tuning through PEFT's two-layer MLP")
	fs.IntVar(&j.EncoderHiddenSize, "encoder-hidden-size", 0, "width of the P-tuning / prefix-projection MLP (default the token width)")
	fs.StringVar(&j.AdapterDtype, "adapter-dtype", "", "dtype of LoRA adapters (default fp32, as PEFT keeps them)")
	fs.StringVar(&j.QuantType, "quant-type", "", "QLoRA 4-bit type: nf4 or fp4 (default nf4)")
	fs.BoolVar(&o.DoubleQuant, "double-quant", true, "QLoRA double quantization of the absmax constants")
	fs.StringVar(&j.QuantStorage, "quant-storage", "", "dtype the packed 4-bit weights are stored in (bnb_4bit_quant_storage): uint8, or the model dtype so FSDP/ZeRO-3 can shard them (default uint8; the compute dtype when sharded)")
	fs.StringSliceVar(&j.Trainable, "trainable", nil, "train only these modules or layer ranges (e.g. projector, layers.28-31, lm_head)")
	fs.Int64Var(&j.TrainableParams, "trainable-params", 0, "number of trainable parameters when only the count is known (prompt tuning, LN-tuning)")

	// VLM inputs.
	fs.IntVar(&j.ImagesPerSample, "images-per-sample", 0, "images per sample (VLMs)")
	fs.IntVar(&j.ImageSize, "image-size", 0, "image side in pixels (VLMs; default the model's)")

	// Distributed.
	fs.StringVar(&j.Engine, "engine", "", "distributed engine: ddp, deepspeed, fsdp, fsdp2 or megatron")
	fs.IntVar(&j.ZeRO, "zero", 0, "DeepSpeed ZeRO stage 0-3")
	fs.StringVar(&j.FSDPStrategy, "fsdp-strategy", "", "FSDP sharding: full_shard, shard_grad_op, hybrid_shard or no_shard")
	fs.IntVar(&j.NumGPUs, "num-gpus", 0, "total number of GPUs (default 1)")
	fs.IntVar(&j.Nodes, "nodes", 0, "number of nodes (default 1)")
	fs.IntVar(&j.DP, "dp", 0, "data-parallel degree")
	fs.IntVar(&o.TP, "tp", 0, "tensor-parallel degree (alias --tensor-parallel-size)")
	fs.IntVar(&o.PP, "pp", 0, "pipeline-parallel degree (alias --pipeline-parallel-size)")
	fs.IntVar(&j.CP, "cp", 0, "context-parallel degree")
	fs.IntVar(&j.EP, "ep", 0, "expert-parallel degree")
	fs.BoolVar(&j.SP, "sp", false, "Megatron sequence parallelism")
	fs.IntVar(&j.VirtualStages, "virtual-stages", 0, "virtual pipeline stages per GPU (interleaved 1F1B)")
	fs.StringVar(&j.OffloadOptimizer, "offload-optimizer", "", "offload optimizer states: none, cpu or nvme")
	fs.StringVar(&j.OffloadParams, "offload-params", "", "offload parameters: none, cpu or nvme")

	// Inference and serving.
	fs.IntVar(&j.PromptLen, "prompt-len", 0, "prompt tokens per sequence (inference)")
	fs.IntVar(&j.GenLen, "gen-len", 0, "generated tokens per sequence (inference)")
	fs.BoolVar(&j.NoKVCache, "no-kv-cache", false, "run without a KV cache")
	addServingFlags(fs, j)
	fs.StringVar(&j.InferenceEngine, "inference-engine", "", "inference engine: hf or vllm, or sglang when serving (--engine sglang also names it in serving mode)")

	// Loading.
	fs.StringVar(&j.DeviceMap, "device-map", "", "from_pretrained device_map: none (built in host RAM, then moved) or auto/cuda/local (straight to the GPU); default none, QLoRA on the GPU")
	fs.BoolVar(&o.LowCPUMemUsage, "low-cpu-mem-usage", true, "from_pretrained builds the model on the meta device (false: a random model first, then a state dict: two copies in host RAM)")
	fs.BoolVar(&o.ZeroInit, "zero-init", true, "DeepSpeed ZeRO-3: the model is built under deepspeed.zero.Init (false: whole on every GPU before partitioning)")
	fs.BoolVar(&o.CPURAMEfficientLoading, "cpu-ram-efficient-loading", false, "FSDP: only local rank 0 reads the checkpoint (accelerate)")
	fs.BoolVar(&o.SyncModuleStates, "sync-module-states", false, "FSDP1: broadcast rank 0's weights unit by unit (forced on by --cpu-ram-efficient-loading)")
	fs.StringVar(&o.HostMemory, "host-memory", "", "host RAM of one node, e.g. 512GiB: a loading peak above it does not fit")
	fs.StringVar(&j.DecideOn, "decide-on", "", "verdicts decide on the band's upper edge (upper, default) or on the estimate (point)")

	// Runtime.
	fs.StringVar(&j.GPU, "gpu", "", "GPU kind, e.g. H100, A100-80GB, MI300X ('gpumem gpus' lists them; sets the workspace size and the memory planned against)")
	fs.StringVar(&o.GPUMemory, "gpu-memory", "", "GPU memory when not implied by --gpu, e.g. 80GiB")
	fs.StringArrayVar(&o.Set, "set", nil, "override a named constant of the memory model, name=value (repeatable); 'gpumem constants' lists them")
	fs.StringVar(&o.ConstantsFile, "constants", "", "profile of named constants (JSON or YAML object name: value); --set and --calibration win over it")

	// Optional values and spaced lists (see rewriteBoolArgs).
	fs.Lookup("fused-loss").NoOptDefVal = "true"
	_ = fs.SetAnnotation("fused-loss", valuesAnnotation, []string{"true", "false", "none", "liger", "chunked", "chunked-compiled"})
	_ = fs.SetAnnotation("lora-target-modules", listAnnotation, []string{"true"})
	_ = fs.SetAnnotation("trainable", listAnnotation, []string{"true"})

	addCompatFlags(fs, &o.Compat)
	fs.SetNormalizeFunc(normalizeJobFlag)
}

// normalizeJobFlag accepts underscores for dashes (--seq_len). Other
// tools' names for gpumem flags are alias flags (compat.go), so that two
// spellings that disagree can be reported.
func normalizeJobFlag(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
}

// finish turns flags that need interpretation into Job fields and checks
// that they agree with each other.
func (o *estimateOptions) finish(fs *pflag.FlagSet) error {
	j := &o.Job
	j.Explain = o.Explain // formulas with the job's numbers filled in
	if err := o.Compat.finishAliases(fs); err != nil {
		return err
	}
	mode, err := memory.ParseMode(o.Mode)
	if err != nil {
		return usageErrorf("--mode: %v", err)
	}
	j.Mode = mode
	if fs.Changed("batch-size") {
		if j.Mode == memory.Train {
			if fs.Changed("per-device-batch") && j.MicroBatch != o.BatchSize {
				return usageErrorf("--batch-size %d and --per-device-batch %d disagree; give one", o.BatchSize, j.MicroBatch)
			}
			j.MicroBatch = o.BatchSize
		} else {
			j.Batch = o.BatchSize
		}
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"per-device-batch", j.MicroBatch}, {"batch-size", o.BatchSize}, {"grad-accum", j.GradAccum}, {"seq-len", j.SeqLen},
		{"lora-rank", j.LoRARank}, {"num-gpus", j.NumGPUs}, {"nodes", j.Nodes}, {"dp", j.DP}, {"tp", o.TP}, {"pp", o.PP},
		{"cp", j.CP}, {"ep", j.EP}, {"prompt-len", j.PromptLen}, {"gen-len", j.GenLen}, {"max-model-len", j.MaxModelLen},
		{"max-num-seqs", j.MaxNumSeqs}, {"max-num-batched-tokens", j.MaxNumBatchedTokens}, {"block-size", j.BlockSize},
		{"images-per-sample", j.ImagesPerSample}, {"image-size", j.ImageSize}} {
		if fs.Changed(c.name) && c.v <= 0 && !(c.v == 0 && (c.name == "gen-len" || c.name == "images-per-sample")) {
			return usageErrorf("--%s: want a positive integer, got %d", c.name, c.v)
		}
	}
	j.TP, j.PP = o.TP, o.PP
	if fs.Changed("zero") && (j.ZeRO < 0 || j.ZeRO > 3) {
		return usageErrorf("--zero: want a stage 0, 1, 2 or 3, got %d", j.ZeRO)
	}
	if fs.Changed("gpu-memory-utilization") && !(j.GPUMemoryUtilization > 0 && j.GPUMemoryUtilization <= 1) {
		return usageErrorf("--gpu-memory-utilization: want a fraction in (0, 1], got %g", j.GPUMemoryUtilization)
	}
	if fs.Changed("lora-dropout") && !(j.LoRADropout >= 0 && j.LoRADropout < 1) {
		return usageErrorf("--lora-dropout: want a probability in [0, 1), got %g", j.LoRADropout)
	}
	if fs.Changed("trainable-params") && j.TrainableParams <= 0 {
		return usageErrorf("--trainable-params: want a positive count, got %d", j.TrainableParams)
	}
	if o.FlashAttn {
		if j.Attention != "" && j.Attention != "flash" {
			return usageErrorf("--flashattn and --attn %s disagree; give one", j.Attention)
		}
		j.Attention = "flash"
	}
	if err := o.finishMethod(fs); err != nil {
		return err
	}
	switch strings.ToLower(j.FusedLoss) {
	case "true":
		j.FusedLoss = "liger" // a bare --fused-loss means a fused linear cross-entropy (MODEL.md §15.8)
	case "false":
		j.FusedLoss = "none"
	}
	if o.Liger {
		if j.FusedLoss != "" && j.FusedLoss != "liger" {
			return usageErrorf("--liger and --fused-loss %s disagree; give one", j.FusedLoss)
		}
		j.FusedLoss = "liger"
	}
	gc, err := parseGradCheckpoint(o.GradCheckpoint)
	if err != nil {
		return err
	}
	j.GradCheckpoint = gc
	if fs.Changed("packed") {
		p := o.Packed
		j.Packed = &p
	}
	if fs.Changed("double-quant") {
		d := o.DoubleQuant
		j.DoubleQuant = &d
	}
	for _, b := range []struct {
		name string
		v    bool
		dst  **bool
	}{{"low-cpu-mem-usage", o.LowCPUMemUsage, &j.LowCPUMemUsage}, {"zero-init", o.ZeroInit, &j.ZeroInit},
		{"cpu-ram-efficient-loading", o.CPURAMEfficientLoading, &j.CPURAMEfficientLoading}, {"sync-module-states", o.SyncModuleStates, &j.SyncModuleStates}} {
		if fs.Changed(b.name) {
			v := b.v
			*b.dst = &v
		}
	}
	if d, err := memory.ParseDecideOn(j.DecideOn); err != nil {
		return usageErrorf("--decide-on: %v", err)
	} else if fs.Changed("decide-on") {
		j.DecideOn = d
	}
	if o.HostMemory != "" {
		b, err := units.ParseBytes(o.HostMemory)
		if err != nil {
			return &UsageError{Err: fmt.Errorf("--host-memory: %w", err)}
		}
		if b <= 0 {
			return usageErrorf("--host-memory: want a positive size, got %q", o.HostMemory)
		}
		j.HostMemory = b
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
	if err := o.finishSet(); err != nil {
		return err
	}
	o.allocConfFromEnv()
	return o.Compat.finishCompat(fs, j)
}

func (o *estimateOptions) finishMethod(fs *pflag.FlagSet) error {
	j := &o.Job
	implied := ""
	switch {
	case o.LoRA && o.QLoRA:
		implied = "qlora" // QLoRA is LoRA on a 4-bit base; both flags together mean QLoRA
	case o.QLoRA:
		implied = "qlora"
	case o.LoRA:
		implied = "lora"
	}
	if implied == "" {
		return nil
	}
	if j.Method != "" && j.Method != implied {
		return usageErrorf("--method %s and --%s disagree; give one", j.Method, implied)
	}
	j.Method = implied
	return nil
}

// parseGradCheckpoint accepts the spellings users bring: true/false,
// none/full/selective/op and every-N.
func parseGradCheckpoint(s string) (string, error) {
	gc, err := memory.ParseGradCheckpoint(s)
	if err != nil {
		return "", usageErrorf("--grad-checkpoint: %w", err)
	}
	return gc, nil
}

// finishSet parses --set name=value overrides, then adds the constants
// of a --constants profile that --set does not name.
func (o *estimateOptions) finishSet() error {
	if len(o.Set) == 0 && len(o.profile) == 0 {
		return nil
	}
	set, err := parseSetFlags(o.Set)
	if err != nil {
		return err
	}
	o.Job.Constants = make(map[string]float64, len(set)+len(o.profile))
	for name, v := range set {
		o.Job.Constants[name] = v
	}
	for name, v := range o.profile {
		if _, ok := o.Job.Constants[name]; !ok {
			o.Job.Constants[name] = v
		}
	}
	return nil
}

// checkConstant checks a constant's name and range against
// memory.Constants, suggesting the nearest name for a typo.
func checkConstant(name string, v float64) error {
	var names []string
	for _, c := range memory.Constants() {
		if strings.EqualFold(c.Name, name) {
			if math.IsNaN(v) || v < c.Min || v > c.Max {
				return fmt.Errorf("%s=%v: out of range [%v, %v] %s", name, v, c.Min, c.Max, c.Unit)
			}
			return nil
		}
		names = append(names, c.Name)
	}
	if s := suggestName(name, names); s != "" {
		return fmt.Errorf("%s: unknown constant (did you mean %q? 'gpumem constants' lists them)", name, s)
	}
	return fmt.Errorf("%s: unknown constant ('gpumem constants' lists them)", name)
}

// suggestName returns the name in names nearest to s, if close.
func suggestName(s string, names []string) string {
	best, bestD := "", 1<<30
	for _, n := range names {
		if d := textdist.Levenshtein(strings.ToLower(s), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	if bestD <= max(2, len(s)/4) {
		return best
	}
	return ""
}

// stackValue is the --stack flag: package=version pairs, comma-separated,
// into the job's Stack (memory.ParseStack); given twice, the pairs add up.
type stackValue struct{ st *memory.Stack }

func (v stackValue) String() string {
	if v.st == nil || len(*v.st) == 0 {
		return ""
	}
	return v.st.String()
}

func (v stackValue) Set(s string) error {
	st, err := memory.ParseStack(s)
	if err != nil {
		return err
	}
	if *v.st == nil {
		*v.st = memory.Stack{}
	}
	for name, ver := range st {
		if err := v.st.Set(name, ver); err != nil {
			return err
		}
	}
	return nil
}

func (v stackValue) Type() string { return "pkg=version,..." }
