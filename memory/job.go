package memory

import (
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// Mode is what the job does with the model.
type Mode string

// Job modes.
const (
	Train     Mode = "train"
	Inference Mode = "inference"
	Serving   Mode = "serving"
)

// ParseMode reads a job mode as the CLI's --mode and the API's "mode"
// take it: train (or training, or empty), inference (infer) and serving
// (serve), in any case. The error lists the modes.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "train", "training", "":
		return Train, nil
	case "inference", "infer":
		return Inference, nil
	case "serving", "serve":
		return Serving, nil
	}
	return "", FieldErrorf("mode", "unknown mode %q (want train, inference or serving)", s)
}

// ParseGradCheckpoint reads a checkpointing setting as the CLI's
// --grad-checkpoint, job files and the API take it: true/false,
// none/full/selective (op, sac) and every-N, in any case. It returns the
// Job.GradCheckpoint value ("" for none); the error lists the spellings.
func ParseGradCheckpoint(s string) (string, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	switch v {
	case "":
		return "", nil
	case "false", "no", "0", "off", "none":
		// Stated as off: not the same as unset, whose default depends
		// on the method (QLoRA checkpoints).
		return "none", nil
	case "true", "yes", "1", "on", "full":
		return "full", nil
	case "selective", "op", "sac":
		// op: torchtitan's per-op selective policy with framework
		// torchtitan, Megatron-style selective recompute otherwise.
		return v, nil
	}
	if n, ok := strings.CutPrefix(v, "every-"); ok {
		if k, err := strconv.Atoi(n); err == nil && k > 0 {
			return v, nil
		}
	}
	return "", FieldErrorf("grad_checkpoint", "unknown mode %q (want none, full, selective, op, every-N or true/false)", s)
}

// Decisions of fit (Job.DecideOn).
const (
	// DecideUpper compares the upper edge of the estimate's band (and the
	// loading peak) with the GPU: a job fits when even that leaves the
	// safety margin free.
	DecideUpper = "upper"
	// DecidePoint compares the estimate itself (and the loading peak).
	DecidePoint = "point"
)

// ParseDecideOn reads Job.DecideOn: upper (or empty, the default,
// "band" and "high") or point ("expected", "estimate"), in any case.
func ParseDecideOn(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", DecideUpper, "band", "high":
		return DecideUpper, nil
	case DecidePoint, "expected", "estimate":
		return DecidePoint, nil
	}
	return "", FieldErrorf("decide_on", "unknown decision %q (want upper, the band's upper edge, or point, the estimate)", s)
}

// Engines: the values of Job.Engine the estimators resolve the engine
// spellings to ("torch-ddp", "zero3", "fully_shard", ...).
const (
	EngineSingle    = ""          // one process, one GPU
	EngineDDP       = "ddp"       // PyTorch DDP: full replica per GPU
	EngineDeepSpeed = "deepspeed" // ZeRO stages 0–3
	EngineFSDP      = "fsdp"      // FSDP1: full_shard, shard_grad_op, hybrid_shard or no_shard
	EngineFSDP2     = "fsdp2"     // fully_shard (ZeRO-3 like), may combine with TP/PP/CP
	EngineMegatron  = "megatron"  // TP/PP/CP/EP, distributed optimizer as ZeRO 1
)

// Job describes one run whose per-GPU memory is estimated. Its zero value
// (plus a model) is a valid job: every empty field means the documented
// default of the framework being modelled. Fields are grouped by the issue
// that introduced them; flag names in comments are the CLI spellings.
type Job struct {
	Mode Mode `json:"mode,omitempty"` // --mode train|inference|serving (default train)

	// Precision.
	Dtype         string `json:"dtype,omitempty"`          // --dtype: weights as held on the GPU: fp32, fp16, bf16, fp8, int8, int4, nf4, fp4 (default bf16)
	MasterWeights string `json:"master_weights,omitempty"` // --master-weights fp32|none ("" = what the recipe implies)
	ComputeDtype  string `json:"compute_dtype,omitempty"`  // autocast dtype when Dtype is fp32 (AMP), default bf16

	// Optimizer.
	Optimizer string `json:"optimizer,omitempty"` // --optimizer: HF optim name or short name (default adamw_torch)

	// Batch and sequence.
	MicroBatch int   `json:"per_device_batch,omitempty"` // --per-device-batch / --batch-size (default 1)
	GradAccum  int   `json:"grad_accum,omitempty"`       // --grad-accum (default 1)
	SeqLen     int   `json:"seq_len,omitempty"`          // --seq-len (tokens per sample)
	Packed     *bool `json:"packed,omitempty"`           // --packed: false means SeqLen is only a cap of variable-length data
	AllowLong  bool  `json:"allow_long,omitempty"`       // --allow-long: permit SeqLen above max_position_embeddings

	// Activations.
	Attention      string `json:"attn,omitempty"`            // --attn eager|sdpa|flash (default sdpa)
	GradCheckpoint string `json:"grad_checkpoint,omitempty"` // --grad-checkpoint none|full|selective|every-N ("" = none)
	FusedLoss      string `json:"fused_loss,omitempty"`      // --fused-loss none|liger|chunked|chunked-compiled
	Compile        bool   `json:"torch_compile,omitempty"`   // --compile
	// Float8 is torchao float8 training of the Linears (Float8Linear, as
	// torchtitan's float8 converter applies it): the recipe name,
	// tensorwise, rowwise or rowwise_with_gw_hp ("" = none).
	Float8 string `json:"float8,omitempty"` // --float8
	// Float8AllGather is torchao's enable_fsdp_float8_all_gather: FSDP2
	// all-gathers the Linear weights in float8 (tensorwise only).
	Float8AllGather   bool   `json:"enable_fsdp_float8_all_gather,omitempty"` // --float8-all-gather
	ActivationOffload bool   `json:"activation_offload,omitempty"`            // --activation-offload
	OptimizerInBwd    bool   `json:"optimizer_in_backward,omitempty"`         // --optimizer-in-backward
	Framework         string `json:"framework,omitempty"`                     // --framework hf|torchtune|litgpt|megatron|torchtitan (activation inventory)
	// TaskHead is the head actually trained when it differs from the
	// config's architecture: "sequence_classification",
	// "token_classification" or "none" drop the vocabulary logits and loss
	// ("" = the model's own LM head).
	TaskHead string `json:"task_head,omitempty"` // job files, training configs and the API (no flag)

	// Fine-tuning method.
	Method       string   `json:"method,omitempty"`              // full|lora|qlora|frozen (default full)
	LoRARank     int      `json:"lora_rank,omitempty"`           // --lora-rank (default 16)
	LoRAAlpha    int      `json:"lora_alpha,omitempty"`          // --lora-alpha
	LoRATargets  []string `json:"lora_target_modules,omitempty"` // --lora-target-modules (default q_proj,v_proj as PEFT)
	LoRADropout  float64  `json:"lora_dropout,omitempty"`        // --lora-dropout
	PEFTVariant  string   `json:"peft_variant,omitempty"`        // --peft-variant: the PEFT method, see [PEFTVariants] (default lora)
	AdapterDtype string   `json:"adapter_dtype,omitempty"`       // --adapter-dtype (default fp32 as PEFT autocast_adapter_dtype)
	QuantType    string   `json:"quant_type,omitempty"`          // --quant-type nf4|fp4 (QLoRA)
	DoubleQuant  *bool    `json:"double_quant,omitempty"`        // --double-quant
	// QuantStorage is bitsandbytes' bnb_4bit_quant_storage, the dtype the
	// packed 4-bit weights are stored in: uint8 (bitsandbytes' default)
	// or the model's float dtype, which FSDP and ZeRO-3 need to shard
	// them with the other parameters. "" is uint8 on unsharded engines
	// and the compute dtype under FSDP or ZeRO-3 (a warning says so).
	QuantStorage    string   `json:"quant_storage,omitempty"`    // --quant-storage
	Trainable       []string `json:"trainable,omitempty"`        // --trainable module names or layer ranges
	TrainableParams int64    `json:"trainable_params,omitempty"` // --trainable-params N

	// Options of the PEFT methods beyond LoRA, under PEFT's config names
	// (peft/tuners/<method>/config.py); zero is PEFT's default. The
	// methods' ranks (LoHa, LoKr, VeRA r; AdaLoRA init_r; OFT r) are
	// LoRARank.
	NumVirtualTokens    int      `json:"num_virtual_tokens,omitempty"`      // --num-virtual-tokens: prefix, prompt and P-tuning (required)
	FeedforwardModules  []string `json:"feedforward_modules,omitempty"`     // --feedforward-modules: IA3 modules that scale their input (default PEFT's per model type)
	OFTBlockSize        int      `json:"oft_block_size,omitempty"`          // --oft-block-size: OFT block size when no rank is given (default 32)
	BOFTBlockSize       int      `json:"boft_block_size,omitempty"`         // --boft-block-size (default 4 unless boft_block_num is given)
	BOFTBlockNum        int      `json:"boft_block_num,omitempty"`          // --boft-block-num
	BOFTButterflyFactor int      `json:"boft_n_butterfly_factor,omitempty"` // --boft-n-butterfly-factor (default 1)
	DecomposeFactor     int      `json:"decompose_factor,omitempty"`        // --decompose-factor: LoKr Kronecker factor (default -1, near the square root)
	DecomposeBoth       bool     `json:"decompose_both,omitempty"`          // --decompose-both: LoKr also splits its left factor
	PrefixProjection    bool     `json:"prefix_projection,omitempty"`       // --prefix-projection: prefix tuning through an MLP
	EncoderHiddenSize   int      `json:"encoder_hidden_size,omitempty"`     // --encoder-hidden-size: P-tuning / prefix projection MLP width (default the token width)

	// VLM inputs.
	ImagesPerSample int `json:"images_per_sample,omitempty"` // --images-per-sample
	ImageSize       int `json:"image_size,omitempty"`        // --image-size (pixels per side)

	// Distributed training (engine, sharding, offload).
	Engine           string `json:"engine,omitempty"`        // --engine ddp|deepspeed|fsdp|fsdp2|megatron ("" = single process)
	ZeRO             int    `json:"zero,omitempty"`          // --zero 0..3
	FSDPStrategy     string `json:"fsdp_strategy,omitempty"` // full_shard|shard_grad_op|hybrid_shard|no_shard
	NumGPUs          int    `json:"num_gpus,omitempty"`      // --num-gpus (default 1)
	Nodes            int    `json:"nodes,omitempty"`         // --nodes (default 1)
	DP               int    `json:"dp,omitempty"`            // --dp
	TP               int    `json:"tp,omitempty"`            // --tp
	PP               int    `json:"pp,omitempty"`            // --pp
	CP               int    `json:"cp,omitempty"`            // --cp
	EP               int    `json:"ep,omitempty"`            // --ep
	SP               bool   `json:"sp,omitempty"`            // --sp (Megatron sequence parallel)
	VirtualStages    int    `json:"virtual_pipeline_stages,omitempty"`
	OffloadOptimizer string `json:"offload_optimizer,omitempty"` // none|cpu|nvme
	OffloadParams    string `json:"offload_params,omitempty"`    // none|cpu|nvme
	// PipelineSchedule is the pipeline schedule: 1f1b (default),
	// interleaved (the default when VirtualStages > 1) or gpipe.
	PipelineSchedule string `json:"pipeline_schedule,omitempty"` // --pipeline-schedule

	// Loading: how the checkpoint reaches the GPUs before the first step
	// (the loading phase, [Loading]). Nil or empty means the default of
	// the stack, which the resolved job states.
	//
	// DeviceMap is from_pretrained's device_map: "none" builds the model
	// in host RAM and the trainer moves it to the GPU afterwards; "auto",
	// "cuda" or "local" ({"": local_rank}) place each weight straight on
	// the GPU. Default none, except QLoRA, whose bitsandbytes quantizer
	// places the model on the current GPU.
	DeviceMap string `json:"device_map,omitempty"` // --device-map none|auto|cuda|local
	// LowCPUMemUsage is from_pretrained's low_cpu_mem_usage: the model is
	// built on the meta device and each weight loaded in turn. False
	// builds a randomly initialised model first and loads a state dict
	// into it (two copies in host RAM). Default true: transformers has
	// loaded this way only since it dropped the argument (PR #36963).
	LowCPUMemUsage *bool `json:"low_cpu_mem_usage,omitempty"` // --low-cpu-mem-usage
	// ZeroInit says whether a DeepSpeed ZeRO-3 model is built under
	// deepspeed.zero.Init (each parameter partitioned as it is created),
	// which transformers does when a ZeRO-3 config reaches
	// TrainingArguments (or accelerate's zero3_init_flag) before
	// from_pretrained. False: every rank builds the whole model and
	// DeepSpeed moves it to its GPU before partitioning. Default true.
	ZeroInit *bool `json:"zero_init,omitempty"` // --zero-init
	// CPURAMEfficientLoading is accelerate's FSDP
	// cpu_ram_efficient_loading: only local rank 0 reads the checkpoint,
	// the other ranks build empty weights. Default false.
	CPURAMEfficientLoading *bool `json:"cpu_ram_efficient_loading,omitempty"` // --cpu-ram-efficient-loading
	// SyncModuleStates is FSDP1's sync_module_states: each unit is
	// broadcast from rank 0 as it is wrapped. Default false; accelerate
	// forces it on with cpu_ram_efficient_loading.
	SyncModuleStates *bool `json:"sync_module_states,omitempty"` // --sync-module-states
	// HostMemory is the host RAM of one node, in bytes (--host-memory):
	// with it, a loading peak above it does not fit. 0 means unknown.
	HostMemory units.Bytes `json:"host_memory_bytes,omitempty"`

	// Engine buffers. Zero or nil means the engine's default; for
	// DeepSpeed under the HF Trainer (Framework hf) the Trainer's "auto"
	// values. Sizes are in elements, as DeepSpeed's config counts them.
	// The four ZeRO-3 knobs for which 0 is a setting of its own (no
	// prefetching, nothing kept for reuse, no persistent parameters) are
	// pointers: nil is the default, a pointer to 0 is 0.
	OverlapComm               *bool   `json:"overlap_comm,omitempty"`                       // DeepSpeed zero_optimization.overlap_comm (default true for ZeRO-3, false below)
	ContiguousGradients       *bool   `json:"contiguous_gradients,omitempty"`               // DeepSpeed zero_optimization.contiguous_gradients (default true)
	ReduceBucketSize          int64   `json:"reduce_bucket_size,omitempty"`                 // DeepSpeed reduce_bucket_size (default 5e8; HF auto hidden²)
	AllgatherBucketSize       int64   `json:"allgather_bucket_size,omitempty"`              // DeepSpeed allgather_bucket_size (default 5e8)
	PrefetchBucketSize        *int64  `json:"stage3_prefetch_bucket_size,omitempty"`        // DeepSpeed stage3_prefetch_bucket_size (default 5e7; HF auto 0.9·hidden²)
	MaxLiveParameters         *int64  `json:"stage3_max_live_parameters,omitempty"`         // DeepSpeed stage3_max_live_parameters (default 1e9)
	MaxReuseDistance          *int64  `json:"stage3_max_reuse_distance,omitempty"`          // DeepSpeed stage3_max_reuse_distance (default 1e9): a released module's parameters met again within this many elements stay gathered
	ParamPersistenceThreshold *int64  `json:"stage3_param_persistence_threshold,omitempty"` // DeepSpeed stage3_param_persistence_threshold (default 1e5; HF auto 10·hidden)
	SubGroupSize              int64   `json:"sub_group_size,omitempty"`                     // DeepSpeed sub_group_size (default 1e9)
	DDPBucketCapMB            float64 `json:"ddp_bucket_cap_mb,omitempty"`                  // torch DDP bucket_cap_mb (default 25)
	GradientAsBucketView      bool    `json:"gradient_as_bucket_view,omitempty"`            // torch DDP gradient_as_bucket_view (default false: buckets are a second gradient copy)

	// Inference and serving.
	Batch                int     `json:"batch,omitempty"`                  // --batch-size in inference mode
	PromptLen            int     `json:"prompt_len,omitempty"`             // --prompt-len
	GenLen               int     `json:"gen_len,omitempty"`                // --gen-len
	KVCacheDtype         string  `json:"kv_cache_dtype,omitempty"`         // auto|fp16|bf16|fp8
	NoKVCache            bool    `json:"no_kv_cache,omitempty"`            // --no-kv-cache
	MaxModelLen          int     `json:"max_model_len,omitempty"`          // vLLM --max-model-len
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"` // vLLM --gpu-memory-utilization (default 0.9)
	MaxNumSeqs           int     `json:"max_num_seqs,omitempty"`           // vLLM --max-num-seqs
	MaxNumBatchedTokens  int     `json:"max_num_batched_tokens,omitempty"` // vLLM --max-num-batched-tokens
	BlockSize            int     `json:"block_size,omitempty"`             // vLLM --block-size (default 16)
	CUDAGraphs           bool    `json:"cuda_graphs,omitempty"`            // count CUDA-graph pools
	EnforceEager         bool    `json:"enforce_eager,omitempty"`          // vLLM --enforce-eager: no CUDA graph is captured
	InferenceEngine      string  `json:"inference_engine,omitempty"`       // hf|vllm|sglang (serving defaults to vllm)
	// MemFractionStatic is SGLang's --mem-fraction-static: the share of
	// the free GPU memory at startup that weights and KV pool take
	// together (0 = SGLang's default for the GPU).
	MemFractionStatic float64 `json:"mem_fraction_static,omitempty"`
	// CUDAGraphMaxBS is SGLang's --cuda-graph-max-bs, the largest decode
	// batch captured in a CUDA graph (0 = SGLang's default for the GPU).
	CUDAGraphMaxBS int `json:"cuda_graph_max_bs,omitempty"`
	// DisableCUDAGraph is SGLang's --disable-cuda-graph.
	DisableCUDAGraph bool `json:"disable_cuda_graph,omitempty"`

	// Runtime.
	// GPU is the GPU's catalog name, e.g. "H100-SXM" (--gpu). It is
	// informational (and picks vLLM's A100 batch defaults): the estimator
	// reads no catalog, so front ends copy the board's facts into
	// GPUMemory and GPUComputeCapability (plan.OnGPU). A name without
	// either fact draws a warning.
	GPU string `json:"gpu,omitempty"`
	// GPUMemory is the total memory of one GPU the job plans against, in
	// bytes (--gpu-memory, else the catalog's CUDA-reported total): vLLM
	// budgets gpu_memory_utilization of it, and training caps the
	// reserved peak and paged optimizer states by it. 0 means unknown.
	GPUMemory units.Bytes `json:"gpu_memory_bytes,omitempty"`
	// GPUMemoryIsDriverTotal is true when GPUMemory is the driver's total
	// (nvidia-smi) because the catalog has no CUDA-reported figure for the
	// board: CUDA reports a few hundred MiB less, so vLLM's budget is
	// smaller than the one estimated, and serving says so.
	GPUMemoryIsDriverTotal bool `json:"gpu_memory_is_driver_total,omitempty"`
	// GPUFormFactor is the board's form factor from the GPU catalog (PCIe,
	// SXM, OAM, Superchip; "" unknown). vLLM's tensor-parallel buffers
	// outside torch differ between NVLink-connected boards and PCIe ones.
	GPUFormFactor string `json:"gpu_form_factor,omitempty"`
	// GPUComputeCapability is the CUDA compute capability times ten (90
	// for Hopper, 100 for B200; 0 unknown or not NVIDIA). From 90 on
	// PyTorch's cuBLAS workspace is larger (MODEL.md §10).
	GPUComputeCapability int `json:"gpu_compute_capability,omitempty"`
	// DecideOn says which figure a question of fit compares with the
	// GPU's memory: "upper", the upper edge of the band (default), or
	// "point", the estimate itself (--decide-on). The estimators do not
	// read it; plan does ([ParseDecideOn]).
	DecideOn string `json:"decide_on,omitempty"`
	// Stack is the software the job runs on, package → version
	// (--stack transformers=4.48.1,torch=2.4.1); packages it leaves out
	// run their newest release known to gpumem. See [Stack] and [Rules].
	Stack Stack `json:"stack,omitempty"`
	// Software is the older way to name a stack, by era; each era reads
	// as the last version inside it (see [ResolveStack]), and a version
	// in Stack wins over it:
	// "torch1" (zero_grad keeps grads, eager module loading),
	// "transformers<4.36" (tuple KV cache), "bnb<0.43.2" (4-bit inputs saved),
	// "transformers<4.45" (logits of every prompt position upcast to fp32),
	// "vllm<0.8" (V0 engine: smaller sampler warm-up in the profile run),
	// "torchtitan-2024q1" (the training loop held the model's fp32 logits
	// through backward, before torchtitan freed them with del pred).
	Software []string `json:"software,omitempty"`

	// AllocConf is the CUDA caching allocator's configuration, written as
	// PYTORCH_CUDA_ALLOC_CONF takes it (--alloc-conf; the CLI reads the
	// environment variable): "expandable_segments:True",
	// "max_split_size_mb:512,roundup_power2_divisions:16". Empty means
	// PyTorch's defaults, or what the framework sets (torchtitan's launch
	// script turns expandable segments on). See [ParseAllocConf].
	AllocConf string `json:"alloc_conf,omitempty"`

	// Constants overrides named empirical constants of the memory model
	// (--set name=value, calibration profiles). Names and defaults are
	// listed by [Constants]; an unknown name is an error.
	Constants map[string]float64 `json:"constants,omitempty"`

	// Explain fills every Component.Formula with the job's inputs
	// (--explain); otherwise formulas are the symbolic templates, which
	// keeps estimation allocation-light.
	Explain bool `json:"explain,omitempty"`
}
