package memory

import (
	"math"
	"sort"
	"strings"
)

// ConstantInfo describes one named empirical constant of the memory model.
// Every number the model cannot derive from code or papers lives in this
// table so that it can be listed, overridden ([Job.Constants]) and fitted
// by calibration.
type ConstantInfo struct {
	// Name is the key accepted by Job.Constants and --set.
	Name string `json:"name"`
	// Default is the value used when the job does not override it.
	Default float64 `json:"default"`
	// Unit is the unit of Default: "fraction", "MiB", "factor".
	Unit string `json:"unit"`
	// Min and Max bound accepted overrides.
	Min float64 `json:"min"`
	Max float64 `json:"max"`
	// Source says where the default comes from.
	Source string `json:"source"`
	// Description says what the constant scales.
	Description string `json:"description"`
	// Derived is true for a constant whose Default 0 means "derived": the
	// model computes the quantity itself (from its per-tensor inventory),
	// and a value replaces the derived one.
	Derived bool `json:"derived,omitempty"`
	// Records are the ids of the development-set measurements (package
	// accuracy) the default was read off or chosen against; empty when it
	// comes from source code, documentation or a paper alone. The
	// accuracy report refits such a constant without each source's
	// records (leave one source out).
	Records []string `json:"records,omitempty"`
	// Prior is the value the model has without those records, and
	// PriorSource where it comes from: a refit with no record left falls
	// back to it. Unset when Records is empty.
	Prior       float64 `json:"prior,omitempty"`
	PriorSource string  `json:"prior_source,omitempty"`
}

// The development records the empirical constants were read off (see
// ConstantInfo.Records), all of the first round: the records held out
// then informed nothing.
var (
	recsLlamaReserved = []string{"peft-mmqa-llama32-3b-lora-r32-qv", "peft-mmqa-llama32-3b-lora-r64-qv", "peft-mmqa-llama32-3b-dora-r32-qv"}
	recsHFInference   = []string{"optimum-gptq-llama2-13b-fp16-bs4-gen", "optimum-gptq-llama2-13b-int4-exllama-bs1-gen",
		"optimum-gptq-llama2-13b-fp16-bs16-prefill", "optimum-gptq-llama2-13b-int4-exllama-bs16-prefill"}
	recsTorch1BERT = []string{"tf-docs-bert-large-fp32-bs4", "tf-docs-bert-large-fp16-bs1-ga4-gc", "tf-docs-bert-large-fp16-bs1-ga4-gc-adafactor"}
	recsZeRO3      = []string{"peft-docs-llama2-70b-lora-zero3-8xh100"}
	recsEagerCtx   = []string{"tf-docs-bert-large-weights-only"}
	recsCompile    = []string{"torchtune-flags-llama32-3b-full-optbwd-actoffload", "torchtune-readme-llama31-8b-full-4090",
		"torchtune-readme-llama31-8b-lora-4090", "torchtune-readme-llama31-70b-full-8xa100", "torchtune-readme-llama31-70b-lora-8xa100",
		"torchtune-oldreadme-llama2-7b-qlora-4090"}
)

// The documented training fraction, the prior of the other
// fragmentation constants: without their records nothing sets them apart.
const (
	fragPrior       = 0.06
	fragPriorSource = "the training fraction: MODEL.md §10's 2-10 % range, midpoint (nothing else sets this regime apart)"
)

// constID indexes the constant table; the resolved values of a job are an
// array so that the hot path needs no map lookups or allocations.
type constID int

const (
	cActivationScale constID = iota
	cFragmentation
	cFragmentationInference
	cFragmentationLegacy
	cFragmentationSharded
	cCUDAContextMiB
	cCUDAContextEagerMiB
	cWorkspaceMiB
	cWorkspaceSM90MiB
	cMiscOverheadMiB
	cCompileActivationFactor
	cDequantWorkspaceFactor
	cNCCLMiB
	cAttnActFactorFA
	cAttnActFactorNoFA
	cMLPActFactor
	cGradCkptReduction
	numConstants
)

// constantTable is the single table of empirical constants, indexed by constID.
var constantTable = [numConstants]ConstantInfo{
	cActivationScale: {
		Name: "activation_scale", Default: 1.0, Unit: "factor", Min: 0.1, Max: 10,
		Source:      "none: neutral default for calibration",
		Description: "multiplies the activations rows (saved per-layer activations, or checkpoints and the recomputed layer) of every stack; a calibration knob, the inventories themselves are derived",
	},
	cFragmentation: {
		Name: "fragmentation", Default: 0.06, Unit: "fraction", Min: 0, Max: 2,
		Source:  "MODEL.md §10 (2-10 % in steady training), §15.5 (5-8 % consistent with Llama training records)",
		Records: recsLlamaReserved, Prior: fragPrior, PriorSource: "MODEL.md §10 (PyTorch's notes: 2-10 % in steady training), midpoint",
		Description: "training: reserved = allocated peak × (1 + fragmentation) (caching-allocator rounding and split blocks)",
	},
	cFragmentationInference: {
		Name: "fragmentation_inference", Default: 0.02, Unit: "fraction", Min: 0, Max: 2,
		Source:  "MODEL.md §15.5 (≈ 0-2 % for HF inference records)",
		Records: recsHFInference, Prior: fragPrior, PriorSource: fragPriorSource,
		Description: "inference: reserved = allocated peak × (1 + fragmentation_inference)",
	},
	cFragmentationLegacy: {
		Name: "fragmentation_torch1", Default: 0.15, Unit: "fraction", Min: 0, Max: 2,
		Source:  "MODEL.md §15.5 (torch-1.x eager-attention BERT runs show ≈ 15 %)",
		Records: recsTorch1BERT, Prior: fragPrior, PriorSource: fragPriorSource,
		Description: "training on a torch 1.x stack (Software contains \"torch1\")",
	},
	cFragmentationSharded: {
		Name: "fragmentation_sharded", Default: 0.15, Unit: "fraction", Min: 0, Max: 2,
		Source:  "MODEL.md §15.11 (the ZeRO-3 record sits 13-22 % above an allocated-based estimate); FSDP/ZeRO-3 all-gather and reduce-scatter run on their own CUDA streams, whose blocks the caching allocator pools per stream",
		Records: recsZeRO3, Prior: fragPrior, PriorSource: fragPriorSource,
		Description: "training with sharded parameters whose stream pools are not modelled (FSDP and ZeRO-3 through RuntimeOverheads, which has no model; ZeRO-3 without overlap_comm): reserved = allocated × (1 + fragmentation_sharded); FSDP training and ZeRO-3 training with overlap_comm count their pools as the stream_cache row and use fragmentation",
	},
	cCUDAContextMiB: {
		Name: "cuda_context_mib", Default: 500, Unit: "MiB", Min: 0, Max: 8192,
		Source:      "MODEL.md §10: pytorch/pytorch PR #86509 (287 MB lazy), maintainers' \"around 400MB\"; kernels of flash-attn/Triton add more",
		Description: "CUDA context with lazy module loading (CUDA >= 11.7, torch >= 1.13): outside the caching allocator, seen by nvidia-smi",
	},
	cCUDAContextEagerMiB: {
		Name: "cuda_context_eager_mib", Default: 1343, Unit: "MiB", Min: 0, Max: 8192,
		Source:  "MODEL.md §15.5: 1343 MiB measured on V100 with torch 1.x (transformers model_memory_anatomy)",
		Records: recsEagerCtx, Prior: 666632192.0 / (1 << 20), PriorSource: "pytorch/pytorch PR #86509: 666,632,192 B with eager module loading",
		Description: "CUDA context with eager module loading (Software contains \"torch1\")",
	},
	cWorkspaceMiB: {
		Name: "workspace_mib", Default: 8.125, Unit: "MiB", Min: 0, Max: 4096,
		Source:      "pytorch/pytorch:aten/src/ATen/cuda/CublasHandlePool.cpp default CUBLAS_WORKSPACE_CONFIG :4096:2:16:8 (MODEL.md §10)",
		Description: "cuBLAS workspace per handle and stream before Hopper; also used when the GPU is unknown",
	},
	cWorkspaceSM90MiB: {
		Name: "workspace_sm90_mib", Default: 32, Unit: "MiB", Min: 0, Max: 4096,
		Source:      "pytorch/pytorch:aten/src/ATen/cuda/CublasHandlePool.cpp (32 MiB on sm90/sm100/sm120, MODEL.md §10)",
		Description: "cuBLAS workspace per handle and stream on Hopper and Blackwell",
	},
	cMiscOverheadMiB: {
		Name: "misc_overhead_mib", Default: 0, Unit: "MiB", Min: 0, Max: 65536,
		Source:      "none: unknown non-torch allocations are 0 until calibrated (MODEL.md §10 lists NCCL, managed memory, other libraries)",
		Description: "other non-PyTorch device memory of the process (library state, NCCL for single GPU runs)",
	},
	cCompileActivationFactor: {
		Name: "compile_activation_factor", Default: 0.7, Unit: "factor", Min: 0.1, Max: 1,
		Source:  "MODEL.md §15.14 (torch.compile fuses norms and SwiGLU: about 30 % fewer saved bytes per layer in the torchtune rows)",
		Records: recsCompile, Prior: 1, PriorSource: "no effect of compile on the saved activations assumed without measurements",
		Description: "multiplies per-layer saved activations when Compile is set",
	},
	cDequantWorkspaceFactor: {
		Name: "dequant_buffers", Default: 2, Unit: "factor", Min: 0, Max: 8,
		Source:      "MODEL.md §6.2 (each 4-bit Linear dequantizes its weight for the matmul, forward and backward)",
		Description: "number of largest-Linear dequantized weight copies alive at once in QLoRA",
	},
	cNCCLMiB: {
		Name: "nccl_mib", Default: 512, Unit: "MiB", Min: 0, Max: 16384,
		Source:      "MODEL.md §10: NCCL buffers per communicator, channel and peer (NCCL_BUFFSIZE 4 MiB × 16-32 channels × 2-3 peers ⇒ 0.2-1 GiB)",
		Description: "device memory of one NCCL communicator (one per data-, tensor-, pipeline- and expert-parallel group a rank joins)",
	},
	// The activation factors of the LLM/VLM estimator some users come
	// from: its attn_act_factor_fa, attn_act_factor_no_fa, mlp_act_factor
	// and grad_ckpt_reduction, in its units. Each is derived by default;
	// a value replaces one part of the per-layer inventory (actRegime,
	// layerSplit in activations.go say which tensors each part holds).
	// activation_scale, and compile_activation_factor with Compile, still
	// multiply the whole activations row, replaced parts included.
	cAttnActFactorFA: {
		Name: "attn_act_factor_fa", Default: 0, Unit: "× hidden per token per layer (0 = derived)", Min: 0, Max: 1000, Derived: true,
		Source:      "derived by default: the attention part of the MODEL.md §4.3 inventory; a value is the LLM/VLM estimator's attn_act_factor_fa (its default 0.8)",
		Description: "training with fused attention (flash, SDPA): replaces what each text layer's attention block saves (its norm, q/k/v, kernel output, logsumexp, adapters on q/k/v/o) by value × hidden × bytes(compute dtype) per token, split over tensor-parallel ranks",
	},
	cAttnActFactorNoFA: {
		Name: "attn_act_factor_no_fa", Default: 0, Unit: "× hidden per token per layer (0 = derived)", Min: 0, Max: 1000, Derived: true,
		Source:      "derived by default: the attention part of the MODEL.md §4.3.2 eager inventory; a value is the LLM/VLM estimator's attn_act_factor_no_fa (its default 4.0)",
		Description: "training with eager attention: replaces the per-token part of what each text layer's attention block saves by value × hidden × bytes(compute dtype); the s² scores and probabilities stay derived, as that estimator adds them separately",
	},
	cMLPActFactor: {
		Name: "mlp_act_factor", Default: 0, Unit: "× hidden per token per layer (0 = derived)", Min: 0, Max: 1000, Derived: true,
		Source:      "derived by default: the MLP part of the MODEL.md §4.3 inventory (§8 for MoE); a value is the LLM/VLM estimator's mlp_act_factor (its default 6.0)",
		Description: "training: replaces what each text layer's MLP block saves (its norm, gate/up outputs, activation output, down input, MoE router and expert copies, adapters on gate/up/down) by value × hidden × bytes(compute dtype) per token, split over tensor-parallel ranks",
	},
	cGradCkptReduction: {
		Name: "grad_ckpt_reduction", Default: 0, Unit: "fraction (0 = derived)", Min: 0, Max: 1, Derived: true,
		Source:      "derived by default: layer checkpoints plus one recomputed layer (MODEL.md §5.1); a value is the LLM/VLM estimator's grad_ckpt_reduction (its default 0.35)",
		Description: "training with layer checkpointing (full, every-N): saved activations of the text, vision and encoder layers are this fraction of what they are without checkpointing, in every phase",
	},
}

// Constants lists the named empirical constants with their defaults.
func Constants() []ConstantInfo {
	out := make([]ConstantInfo, numConstants)
	copy(out, constantTable[:])
	return out
}

// constants holds a job's resolved constant values.
type constants [numConstants]float64

// defaultConstants is the resolved table with no overrides.
var defaultConstants = func() constants {
	var c constants
	for i, info := range constantTable {
		c[i] = info.Default
	}
	return c
}()

// resolveConstants applies job overrides to the defaults. Unknown names and
// values outside a constant's bounds are errors naming the constant.
func resolveConstants(overrides map[string]float64) (constants, error) {
	var c constants
	err := c.resolve(overrides)
	return c, err
}

// resolve sets c to the defaults with overrides applied, as
// [resolveConstants] returns them, writing the table in place rather
// than copying it out and in again (a training estimate resolves it once
// per call).
func (c *constants) resolve(overrides map[string]float64) error {
	*c = defaultConstants
	if len(overrides) == 0 {
		return nil
	}
	names := make([]string, 0, len(overrides))
	for name := range overrides {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := overrides[name]
		id, ok := constantByName(name)
		if !ok {
			return FieldErrorf("constants", "{constants}: unknown constant %q (see gpumem constants for the list)", name)
		}
		info := &constantTable[id]
		if math.IsNaN(v) || math.IsInf(v, 0) || v < info.Min || v > info.Max {
			return FieldErrorf("constants", "{constants}: %s = %v out of range [%v, %v] %s", name, v, info.Min, info.Max, info.Unit)
		}
		c[id] = v
	}
	return nil
}

// constantByName finds a constant by its name (case-insensitive).
func constantByName(name string) (constID, bool) {
	for i := range constantTable {
		if strings.EqualFold(constantTable[i].Name, strings.TrimSpace(name)) {
			return constID(i), true
		}
	}
	return 0, false
}

// ConstantValue returns the value of the named constant for a job's
// overrides, or an error for an unknown name. Other estimators (inference,
// planning) read the shared runtime constants through it.
func ConstantValue(overrides map[string]float64, name string) (float64, error) {
	c, err := resolveConstants(overrides)
	if err != nil {
		return 0, err
	}
	id, ok := constantByName(name)
	if !ok {
		return 0, FieldErrorf("constants", "{constants}: unknown constant %q", name)
	}
	return c[id], nil
}

// fsdpGathersInFlight is the number of FSDP all-gather outputs alive at
// once, which sizes the all-gather stream's pool (gatherPool): FSDP1's
// limit_all_gathers waits for the free event of the all-gather before
// last (torch/distributed/fsdp/_limiter_utils.py _FreeEventQueue,
// _max_num_inflight_all_gathers = 2); FSDP2 keeps the previous
// all-gather result until the next copy-out
// (torch/distributed/_composable/fsdp/_fsdp_param_group.py
// AllGatherState). Not empirical, so not an overridable constant.
const fsdpGathersInFlight = 2
