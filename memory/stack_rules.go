package memory

import "slices"

// Rule is one version boundary of the memory model: a behaviour of a
// package that holds for a range of its versions and changes memory.
// Every rule names its source; `gpumem constants --rules` lists them.
type Rule struct {
	// Name identifies the rule ("transformers-tuple-kv-cache").
	Name string `json:"name"`
	// Package is the package whose version decides the rule.
	Package string `json:"package"`
	// From is the first version the rule holds for ("" = every earlier
	// version gpumem models).
	From string `json:"from,omitempty"`
	// Before is the first version it no longer holds for ("" = still
	// true in the newest release).
	Before string `json:"before,omitempty"`
	// Effect says what changes in memory while the rule holds.
	Effect string `json:"effect"`
	// Source is where the behaviour and its boundary come from.
	Source string `json:"source"`
	// Records are the ids of the development-set measurements the rule
	// was read off (package accuracy); empty for a rule taken from the
	// framework's source, which stands whatever the measurements say.
	Records []string `json:"records,omitempty"`
}

// ruleID is a rule's index in rules.
type ruleID uint8

// ruleSet is a set of rule IDs.
type ruleSet uint64

func (s ruleSet) has(id ruleID) bool     { return s&(1<<id) != 0 }
func (s ruleSet) with(id ruleID) ruleSet { return s | 1<<id }

// ruleBounds are the rules' From and Before, parsed once (a zero
// Version where the bound is open).
var ruleBounds = func() (b [numRules][2]Version) {
	for i := range rules {
		r := &rules[i]
		p, _ := stackPackage(r.Package)
		for j, s := range [2]string{r.From, r.Before} {
			if s != "" {
				b[i][j] = mustVersion(s, p.Dated)
			}
		}
	}
	return b
}()

// mustVersion parses a version of the rule and package tables, which a
// test checks, as regexp.MustCompile does for a pattern in the source.
func mustVersion(s string, dated bool) Version {
	v, err := ParseVersion(s, dated)
	if err != nil {
		panic("memory: version table: " + err.Error())
	}
	return v
}

// covers reports whether rule id holds for version v of its package.
func (id ruleID) covers(v Version) bool {
	r, b := &rules[id], &ruleBounds[id]
	return (r.From == "" || v.Compare(b[0]) >= 0) && (r.Before == "" || v.Compare(b[1]) < 0)
}

// The rules, by ID. The order is the table's; IDs are indexes into it.
const (
	ruleTorchZeroGradKeeps ruleID = iota
	ruleTorchEagerModules
	ruleTorchFragmentation1x
	ruleTransformersTupleCache
	ruleTransformersFullLogits
	ruleBnb4bitSavesInput
	ruleVLLMV0Sampler
	ruleVLLMFullKVForMLA
	ruleVLLMCUDAGraphsOutsideBudget
	ruleTitanLogitsThroughBackward
	ruleTorchNoExpandableSegments
	ruleTitanDefaultSegments
	ruleTitanFSDP1
	ruleTitanNoCP
	ruleTitanCPUnsharded
	ruleBnbNoQuantStorage
	ruleTRLShardedQLoRAKbitPrep
	ruleTRLShardedQLoRAFP32Adapters
	rulePEFTNoIA3
	rulePEFTNoLyCORIS
	rulePEFTNoBOFTVeRA
	rulePEFTOFTv1
	ruleTorchaoBlock2048
	numRules
)

// rules is the table of version rules, indexed by ruleID.
var rules = [numRules]Rule{
	ruleTorchZeroGradKeeps: {
		Name: "torch-zero-grad-keeps-grads", Package: "torch", Before: "2.0",
		Effect: "optimizer.zero_grad() zeroes gradients in place instead of freeing them, so gradients stay allocated through the next forward",
		Source: "pytorch/pytorch PR #92731 (set_to_none=True by default, released in 2.0)",
	},
	ruleTorchEagerModules: {
		Name: "torch-eager-module-loading", Package: "torch", Before: "1.13",
		Effect: "CUDA modules load eagerly: a CUDA context of about 1.3 GiB instead of about 0.4 GiB (constant cuda_context_eager_mib)",
		Source: "pytorch/pytorch PR #86509 (CUDA_MODULE_LOADING=LAZY by default from 1.13); MODEL.md §10, §15.5",
	},
	ruleTorchFragmentation1x: {
		Name: "torch-1x-fragmentation", Package: "torch", Before: "2.0",
		Effect:  "the caching allocator of torch 1.x leaves more reserved than allocated in training (constant fragmentation_torch1)",
		Source:  "MODEL.md §15.5 (reserved/allocated of the torch 1.x BERT records)",
		Records: recsTorch1BERT,
	},
	ruleTransformersTupleCache: {
		Name: "transformers-tuple-kv-cache", Package: "transformers", Before: "4.36",
		Effect: "generate keeps the KV cache as tuples that torch.cat rebuilds each step, so two copies are alive while it grows",
		Source: "huggingface/transformers v4.36.0 (DynamicCache, src/transformers/cache_utils.py); MODEL.md §15.2",
	},
	ruleTransformersFullLogits: {
		Name: "transformers-full-prompt-logits", Package: "transformers", Before: "4.45",
		Effect: "generate computes and upcasts to fp32 the logits of every prompt position, not only the last",
		Source: "huggingface/transformers v4.45.0 (num_logits_to_keep in generate, src/transformers/generation/utils.py)",
	},
	ruleBnb4bitSavesInput: {
		Name: "bnb-4bit-saves-input", Package: "bitsandbytes", Before: "0.43.2",
		Effect: "MatMul4Bit saves its input for backward, so each quantized linear keeps an activation even when frozen",
		Source: "bitsandbytes-foundation/bitsandbytes PR #1270 (released in 0.43.2); MODEL.md §15",
	},
	ruleVLLMV0Sampler: {
		Name: "vllm-v0-sampler-warmup", Package: "vllm", Before: "0.8",
		Effect: "the V0 engine's profile run keeps only the fp32 logits of max_num_seqs rows (a smaller sampler warm-up)",
		Source: "vllm-project/vllm v0.8.0 (V1 engine by default); the sampler of vllm/model_executor/layers/sampler.py",
	},
	ruleVLLMFullKVForMLA: {
		Name: "vllm-mla-full-kv", Package: "vllm", Before: "0.7.1",
		Effect: "MLA models (DeepSeek-V2/V3) cache the full K and V of every attention head, padded to head size 256, " +
			"instead of the (kv_lora_rank + qk_rope_head_dim)-wide latent: 14× the cache per token of DeepSeek-V2-Lite",
		Source: "vllm-project/vllm PR #12601 (MLA attention for DeepSeek-V2/V3, released in 0.7.1); the pre-MLA layout is " +
			"vllm/model_executor/models/deepseek_v2.py Attention(num_local_heads, 256, num_kv_heads=num_local_heads), and " +
			"the startup log in PR #10927 (DeepSeek-V2-Lite-Chat, fp16: 35.42 GiB = 5373 blocks × 16 tokens × 442,368 B = 27 layers × 2 × 16 heads × 256 × 2 B)",
	},
	ruleVLLMCUDAGraphsOutsideBudget: {
		Name: "vllm-cudagraph-outside-budget", Package: "vllm", Before: "0.21",
		Effect: "CUDA graphs are captured after the KV cache is sized, outside gpu_memory_utilization; from 0.21 the profiler " +
			"estimates their pool first and takes it out of the KV budget (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS on by default)",
		Source: "vllm-project/vllm PR #30515 (the estimate: a dummy capture with a small KV cache, off by default); " +
			"vllm/envs.py \"Enabled by default as of v0.21.0\" and vllm/v1/worker/gpu_worker.py \"CUDA graph memory profiling is enabled (default since v0.21.0)\"",
	},
	ruleTitanLogitsThroughBackward: {
		Name: "torchtitan-logits-through-backward", Package: "torchtitan", Before: "2024-04",
		Effect: "the training loop keeps the model's fp32 logits (pred) through backward",
		Source: "pytorch/torchtitan train.py (\"del pred\" before backward, added in April 2024)",
	},
	ruleTorchNoExpandableSegments: {
		Name: "torch-no-expandable-segments", Package: "torch", Before: "2.1",
		Effect: "the caching allocator has no expandable segments: PYTORCH_CUDA_ALLOC_CONF's expandable_segments key is refused as unknown",
		Source: "pytorch/pytorch PR #96995 (expandable blocks in the allocator, first released in 2.1); c10/cuda/CUDACachingAllocator.cpp Note [Expandable Segments]",
	},
	ruleTitanDefaultSegments: {
		Name: "torchtitan-default-allocator", Package: "torchtitan", Before: "2024-10",
		Effect: "torchtitan's launch script leaves the allocator at its defaults; from 2024-10-22 it sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PYTORCH_ALLOC_CONF later), which gpumem assumes for torchtitan jobs that state no configuration",
		Source: "pytorch/torchtitan commit a5e57e4a9 (2024-10-22, run_llama_train.sh; run_train.sh at 0168bd51 keeps it)",
	},
	ruleTitanFSDP1: {
		Name: "torchtitan-fsdp1", Package: "torchtitan", Before: "2024-04",
		Effect: "torchtitan wraps the model with FSDP1 (FullyShardedDataParallel, flat parameters) instead of per-parameter FSDP2 (fully_shard); the change merged on 2024-03-28, so a torchtitan dated March 2024 reads as before it",
		Source: "pytorch/torchtitan PR #165 \"Used per-parameter FSDP\" (commit 83c879f, 2024-03-28)",
	},
	ruleTitanNoCP: {
		Name: "torchtitan-no-context-parallel", Package: "torchtitan", Before: "2024-10",
		Effect: "torchtitan has no context parallelism: a job with cp > 1 is refused (it merged on 2024-10-22; a torchtitan dated October 2024 has it)",
		Source: "pytorch/torchtitan PR #592 \"enable Context Parallel\" (commit b19456a, 2024-10-22)",
	},
	ruleTitanCPUnsharded: {
		Name: "torchtitan-cp-without-fsdp", Package: "torchtitan", From: "2024-10", Before: "2024-12",
		Effect: "with cp > 1 and no data-parallel sharding (dp_shard 1), torchtitan applies no FSDP: every rank holds the whole model, its gradients and optimizer states (fixed on 2024-12-11; a torchtitan dated December 2024 reads as fixed)",
		Source: "pytorch/torchtitan PR #685 (commit 40a0873, 2024-12-11): \"Previously CP forgot to shard the model via apply_fsdp when DP is not combined with CP\"",
	},
	ruleBnbNoQuantStorage: {
		Name: "bnb-no-quant-storage", Package: "bitsandbytes", Before: "0.43.0",
		Effect: "Params4bit stores packed 4-bit weights only as uint8 (no bnb_4bit_quant_storage), so FSDP and ZeRO-3 cannot shard them with the model's float parameters: sharded QLoRA is refused",
		Source: "bitsandbytes-foundation/bitsandbytes PR #970 \"Initial FSDP Support for QLoRA Finetuning\" (commit dcfb6f8, released in 0.43.0)",
	},
	ruleTRLShardedQLoRAKbitPrep: {
		Name: "trl-sharded-qlora-kbit-prep", Package: "trl", Before: "0.8.0",
		Effect: "TRL runs prepare_model_for_kbit_training on every 4-bit model, sharded (FSDP, ZeRO-3) or not: embeddings, norms, the head and the residual stream are upcast to fp32; from 0.8.0 it skips it when the 4-bit weights are sharded",
		Source: "huggingface/trl PR #1416 \"Add support for FSDP+QLoRA and DeepSpeed ZeRO3+QLoRA\" (commit 58c0888, released in 0.8.0): trl/trainer/sft_trainer.py is_sharded_qlora; since 0.24 trl/models/utils.py prepare_peft_model",
	},
	ruleTRLShardedQLoRAFP32Adapters: {
		Name: "trl-sharded-qlora-fp32-adapters", Package: "trl", Before: "0.9.3",
		Effect: "sharded QLoRA upcasts the adapters to fp32 (get_peft_model's autocast_adapter_dtype default); from 0.9.3 TRL passes autocast_adapter_dtype=False and they stay in the model dtype",
		Source: "huggingface/trl PR #1654 \"do not upcast adapters when using FSDP+QLoRA\" (commit e4ed7a3, released in 0.9.3)",
	},
	rulePEFTNoIA3: {
		Name: "peft-no-ia3", Package: "peft", Before: "0.4.0",
		Effect: "PEFT before 0.4.0 has no IA3",
		Source: "huggingface/peft commit c33c42f (IA3, first released in v0.4.0)",
	},
	rulePEFTNoLyCORIS: {
		Name: "peft-no-loha-lokr", Package: "peft", Before: "0.6.0",
		Effect: "PEFT before 0.6.0 has no LoHa or LoKr",
		Source: "huggingface/peft commits 7a5f17f (LoHa) and 884b1ac (LoKr), first released in v0.6.0",
	},
	rulePEFTNoBOFTVeRA: {
		Name: "peft-no-boft-vera", Package: "peft", Before: "0.11.0",
		Effect: "PEFT before 0.11.0 has no BOFT or VeRA",
		Source: "huggingface/peft commits 8111699 (BOFT) and 5a4b9ca (VeRA), first released in v0.11.0",
	},
	rulePEFTOFTv1: {
		Name: "peft-oft-before-0.14", Package: "peft", Before: "0.14.0",
		Effect: "PEFT before 0.14.0 has no OFT or its first form (full r × out/r × out/r blocks applied to the weight, not the skew-symmetric input rotation of 0.14), which gpumem does not model",
		Source: "huggingface/peft src/peft/tuners/oft/config.py check_kwargs (\"OFT has been updated since PEFT 0.14.0\"); oft/layer.py @v0.13.2 vs @v0.18.0",
	},
	ruleTorchaoBlock2048: {
		Name: "torchao-8bit-block-2048", Package: "torchao", Before: "0.6.0",
		Effect: "torchao's 8-bit and fp8 low-bit optimizers keep one fp32 scale per 2048 values instead of per 256",
		Source: "pytorch/ao PR #927 \"Change 8-bit and FP8 optim block size from 2048 to 256 to match new bnb v0.44\" (commit 728d629, released in 0.6.0)",
	},
}

// Rules lists the memory model's version rules, in table order.
func Rules() []Rule { return slices.Clone(rules[:]) }

// defaultRules is the rule set of a job that states no versions: every
// package at its default.
var defaultRules = func() ruleSet {
	r, err := ResolveStack(nil, nil)
	if err != nil {
		panic("memory: default stack: " + err.Error()) // checked by a test
	}
	return r.active
}()

// jobRules resolves the job's stack into the set of rules in effect and
// the warnings it draws. A job that states no versions, the usual case,
// costs no allocation.
func jobRules(job *Job) (ruleSet, []string, error) {
	if len(job.Stack) == 0 && len(job.Software) == 0 {
		return defaultRules, nil, nil
	}
	r, err := ResolveStack(job.Stack, job.Software)
	if err != nil {
		return 0, nil, err
	}
	return r.active, r.Warnings, nil
}

// rulesOf is jobRules where the stack was already checked (an invalid
// stack reads as the default one).
func rulesOf(job *Job) ruleSet {
	rs, _, err := jobRules(job)
	if err != nil {
		return defaultRules
	}
	return rs
}
