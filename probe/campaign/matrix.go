package campaign

import "github.com/gpumem/gpumem/memory"

// Groups name what a job varies; a job can serve two groups (the first
// point of both sweeps is one job).
const (
	GroupOptimizer  = "optimizer"
	GroupPrecision  = "precision"
	GroupAttention  = "attention"
	GroupCheckpoint = "checkpointing"
	GroupSweepBatch = "sweep-batch"
	GroupSweepSeq   = "sweep-seq"
	GroupFull       = "full"
	GroupLoRA       = "lora"
	GroupFrozen     = "frozen"
	GroupMoE        = "moe"
	GroupVLM        = "vlm"
	GroupGenerate   = "generate"
	GroupCompile    = "compile"
	GroupNeedsBnB   = "needs-bitsandbytes"
	GroupNeedsFlash = "needs-flash-attn"
)

// Models and shapes the matrix repeats.
const (
	smallModel      = "qwen2.5-0.5b"
	smallBatch      = 4
	smallSeq        = 512
	sweepModel      = "llama3.2-1b"
	sweepSeqFirst   = 1024
	qwenOneAndHalfB = "qwen2.5-1.5b"
	gemma2B         = "gemma2-2b"
	threeBLlama     = "llama3.2-3b"
	phiMini         = "phi3.5-mini"
	sevenBMistral   = "mistral-7b"
	eightB          = "llama3.1-8b"
	olmoe           = "olmoe-1b-7b"
	llava           = "llava-1.5-7b"
	gcFull          = "full"
	attnAll         = "all-linear"
	cacheStatic     = "static"
	defaultLoRARank = 16
	imagesPerSample = 1
)

// Entry is one job of the matrix before it is estimated.
type Entry struct {
	// ID names the job in the results and the records: short, unique,
	// lower case.
	ID string
	// Model is the catalog model (alias) whose config.json the job builds.
	Model string
	// Groups say what the job varies.
	Groups []string
	// What says in words what the job runs.
	What string
	// Job is the gpumem job: the probe script reads it, and the estimate
	// is of it.
	Job memory.Job
	// Cache is the probe's --cache-implementation for generate ("" for
	// the default dynamic cache).
	Cache string
	// Note says where the estimate does not model the run exactly.
	Note string
}

// lora targets.
var (
	attnTargets    = []string{"q_proj", "k_proj", "v_proj", "o_proj"}
	phiAttnTargets = []string{"qkv_proj", "o_proj"}
)

// Matrix is the campaign's jobs: catalog models from 0.5B to 8B (Llama,
// Qwen, Gemma, Mistral, Phi), OLMoE for MoE and LLaVA-1.5 with images;
// full fine-tuning in pure bf16 and in fp32 with bf16 autocast; AdamW
// (foreach and fused), SGD with and without momentum, Adafactor; LoRA on
// attention and on every linear layer; frozen layers; checkpointing on and
// off; SDPA and eager attention; three points each of micro-batch and
// sequence length; generate with the dynamic and the static cache; one
// torch.compile job; and the jobs that need packages the GPU host may lack
// (bitsandbytes for QLoRA and 8-bit optimizers, flash-attn), which the
// runner skips and reports when they are missing.
func Matrix() []Entry {
	small := func(id, what string, groups []string, mod func(*memory.Job)) Entry {
		j := memory.Job{MicroBatch: smallBatch, SeqLen: smallSeq}
		if mod != nil {
			mod(&j)
		}
		return Entry{ID: id, Model: smallModel, Groups: groups, What: what, Job: j}
	}
	sweep := func(b, s int) memory.Job { return memory.Job{MicroBatch: b, SeqLen: s} }
	infer := func(b, p, g int) memory.Job {
		return memory.Job{Mode: memory.Inference, Batch: b, PromptLen: p, GenLen: g}
	}
	staticNote := "gpumem models the dynamic cache (torch.cat growth); this job measures how far the static cache, allocated for prompt + generated tokens up front, differs"
	return []Entry{
		// Optimizers on one small model, everything else fixed.
		small("q05-full-adamw", "full bf16, AdamW (foreach)", []string{GroupOptimizer}, nil),
		small("q05-full-adamw-fused", "full bf16, AdamW fused", []string{GroupOptimizer}, func(j *memory.Job) { j.Optimizer = "adamw_torch_fused" }),
		small("q05-full-sgd", "full bf16, SGD without momentum (no state)", []string{GroupOptimizer}, func(j *memory.Job) { j.Optimizer = "sgd" }),
		small("q05-full-sgd-momentum", "full bf16, SGD with momentum 0.9", []string{GroupOptimizer}, func(j *memory.Job) { j.Optimizer = "sgd_momentum" }),
		small("q05-full-adafactor", "full bf16, Adafactor (transformers)", []string{GroupOptimizer}, func(j *memory.Job) { j.Optimizer = "adafactor" }),
		// Precision, attention and checkpointing against q05-full-adamw.
		small("q05-full-fp32-amp", "fp32 weights, bf16 autocast, AdamW", []string{GroupPrecision}, func(j *memory.Job) { j.Dtype, j.ComputeDtype = "fp32", "bf16" }),
		small("q05-full-eager", "full bf16, eager attention", []string{GroupAttention}, func(j *memory.Job) { j.Attention = "eager" }),
		small("q05-full-gc", "full bf16, gradient checkpointing", []string{GroupCheckpoint}, func(j *memory.Job) { j.GradCheckpoint = gcFull }),
		{ID: "q15-full-fp32-amp-gc", Model: qwenOneAndHalfB, Groups: []string{GroupPrecision}, What: "fp32 weights, bf16 autocast, checkpointing",
			Job: memory.Job{MicroBatch: 2, SeqLen: 1024, Dtype: "fp32", ComputeDtype: "bf16", GradCheckpoint: gcFull}},
		// Three micro-batches at 1k tokens, three lengths at batch 1.
		{ID: "l1b-full-b1-s1024", Model: sweepModel, Groups: []string{GroupSweepBatch, GroupSweepSeq}, What: "full bf16, batch 1, 1024 tokens", Job: sweep(1, sweepSeqFirst)},
		{ID: "l1b-full-b2-s1024", Model: sweepModel, Groups: []string{GroupSweepBatch}, What: "full bf16, batch 2, 1024 tokens", Job: sweep(2, sweepSeqFirst)},
		{ID: "l1b-full-b4-s1024", Model: sweepModel, Groups: []string{GroupSweepBatch}, What: "full bf16, batch 4, 1024 tokens", Job: sweep(4, sweepSeqFirst)},
		{ID: "l1b-full-b1-s2048", Model: sweepModel, Groups: []string{GroupSweepSeq}, What: "full bf16, batch 1, 2048 tokens", Job: sweep(1, 2048)},
		{ID: "l1b-full-b1-s4096", Model: sweepModel, Groups: []string{GroupSweepSeq}, What: "full bf16, batch 1, 4096 tokens", Job: sweep(1, 4096)},
		// Full fine-tuning of larger models.
		{ID: "g2b-full-eager-gc", Model: gemma2B, Groups: []string{GroupFull, GroupAttention}, What: "full bf16, eager attention (Gemma 2's soft-capping), checkpointing",
			Job: memory.Job{MicroBatch: 1, SeqLen: 1024, Attention: "eager", GradCheckpoint: gcFull}},
		{ID: "phi-full-fused-gc", Model: phiMini, Groups: []string{GroupFull}, What: "full bf16, AdamW fused, checkpointing",
			Job: memory.Job{MicroBatch: 1, SeqLen: 1024, Optimizer: "adamw_torch_fused", GradCheckpoint: gcFull}},
		{ID: "m7b-full-adafactor-gc", Model: sevenBMistral, Groups: []string{GroupFull, GroupOptimizer}, What: "full bf16, Adafactor, checkpointing",
			Job: memory.Job{MicroBatch: 1, SeqLen: 1024, Optimizer: "adafactor", GradCheckpoint: gcFull}},
		{ID: "l8b-full-fused-gc", Model: eightB, Groups: []string{GroupFull}, What: "full bf16, AdamW fused (bf16 states), checkpointing: 8B weights, gradients and states on one GPU",
			Job: memory.Job{MicroBatch: 1, SeqLen: 1024, Optimizer: "adamw_torch_fused", GradCheckpoint: gcFull}},
		// LoRA on attention and on every linear layer.
		{ID: "l3b-lora-attn", Model: threeBLlama, Groups: []string{GroupLoRA}, What: "LoRA r16 on q/k/v/o",
			Job: memory.Job{Method: "lora", LoRARank: defaultLoRARank, LoRATargets: attnTargets, MicroBatch: 2, SeqLen: 1024}},
		{ID: "l3b-lora-all", Model: threeBLlama, Groups: []string{GroupLoRA}, What: "LoRA r16 on all linear layers",
			Job: memory.Job{Method: "lora", LoRARank: defaultLoRARank, LoRATargets: []string{attnAll}, MicroBatch: 2, SeqLen: 1024}},
		{ID: "l3b-lora-all-gc", Model: threeBLlama, Groups: []string{GroupLoRA, GroupCheckpoint}, What: "LoRA r16 on all linear layers, checkpointing",
			Job: memory.Job{Method: "lora", LoRARank: defaultLoRARank, LoRATargets: []string{attnAll}, MicroBatch: 2, SeqLen: 1024, GradCheckpoint: gcFull}},
		{ID: "phi-lora-attn", Model: phiMini, Groups: []string{GroupLoRA}, What: "LoRA r16 on the fused qkv_proj and o_proj",
			Job: memory.Job{Method: "lora", LoRARank: defaultLoRARank, LoRATargets: phiAttnTargets, MicroBatch: 2, SeqLen: 1024}},
		{ID: "l8b-lora-qv-gc", Model: eightB, Groups: []string{GroupLoRA}, What: "LoRA r16 on q/v (PEFT's default), checkpointing",
			Job: memory.Job{Method: "lora", LoRARank: defaultLoRARank, MicroBatch: 1, SeqLen: 2048, GradCheckpoint: gcFull}},
		{ID: "l8b-lora-all-gc", Model: eightB, Groups: []string{GroupLoRA}, What: "LoRA r16 on all linear layers, checkpointing",
			Job: memory.Job{Method: "lora", LoRARank: defaultLoRARank, LoRATargets: []string{attnAll}, MicroBatch: 1, SeqLen: 2048, GradCheckpoint: gcFull}},
		{ID: "m7b-lora-all-gc", Model: sevenBMistral, Groups: []string{GroupLoRA}, What: "LoRA r16 on all linear layers, checkpointing, 4k tokens",
			Job: memory.Job{Method: "lora", LoRARank: defaultLoRARank, LoRATargets: []string{attnAll}, MicroBatch: 1, SeqLen: 4096, GradCheckpoint: gcFull}},
		// Frozen layers: only a range of decoder layers trains.
		{ID: "l1b-frozen-top4", Model: sweepModel, Groups: []string{GroupFrozen}, What: "the last 4 of 16 layers train, AdamW",
			Job: memory.Job{Method: "frozen", Trainable: []string{"layers.12-15"}, MicroBatch: 2, SeqLen: 1024}},
		{ID: "q15-frozen-bottom14", Model: qwenOneAndHalfB, Groups: []string{GroupFrozen}, What: "the first 14 of 28 layers train, AdamW",
			Job: memory.Job{Method: "frozen", Trainable: []string{"layers.0-13"}, MicroBatch: 2, SeqLen: 1024}},
		// Mixture of experts.
		{ID: "olmoe-full-sgd-gc", Model: olmoe, Groups: []string{GroupMoE, GroupFull}, What: "full bf16, SGD (no state), checkpointing",
			Job: memory.Job{MicroBatch: 1, SeqLen: 1024, Optimizer: "sgd", GradCheckpoint: gcFull}},
		{ID: "olmoe-lora-attn", Model: olmoe, Groups: []string{GroupMoE, GroupLoRA}, What: "LoRA r16 on q/k/v/o",
			Job: memory.Job{Method: "lora", LoRARank: defaultLoRARank, LoRATargets: attnTargets, MicroBatch: 2, SeqLen: 1024}},
		{ID: "olmoe-generate", Model: olmoe, Groups: []string{GroupMoE, GroupGenerate}, What: "generate 64 tokens after 1024, batch 4", Job: infer(4, 1024, 64)},
		// A vision-language model with images.
		{ID: "llava-generate", Model: llava, Groups: []string{GroupVLM, GroupGenerate}, What: "one 336 px image + 256 tokens, generate 32, batch 2",
			Job: memory.Job{Mode: memory.Inference, Batch: 2, PromptLen: 256, GenLen: 32, ImagesPerSample: imagesPerSample}},
		{ID: "llava-lora-gc", Model: llava, Groups: []string{GroupVLM, GroupLoRA}, What: "LoRA r16 on q/v, one image + 512 tokens per sample, checkpointing",
			Job: memory.Job{Method: "lora", LoRARank: defaultLoRARank, MicroBatch: 2, SeqLen: smallSeq, ImagesPerSample: imagesPerSample, GradCheckpoint: gcFull}},
		// HF generate, dynamic and static cache.
		{ID: "q05-generate", Model: smallModel, Groups: []string{GroupGenerate}, What: "generate 128 tokens after 512, batch 8", Job: infer(8, 512, 128)},
		{ID: "l1b-generate", Model: sweepModel, Groups: []string{GroupGenerate}, What: "generate 128 tokens after 2048, batch 8, dynamic cache", Job: infer(8, 2048, 128)},
		{ID: "l1b-generate-static", Model: sweepModel, Groups: []string{GroupGenerate}, What: "generate 128 tokens after 2048, batch 8, static cache", Job: infer(8, 2048, 128), Cache: cacheStatic, Note: staticNote},
		{ID: "l8b-generate", Model: eightB, Groups: []string{GroupGenerate}, What: "generate 128 tokens after 4096, batch 4, dynamic cache", Job: infer(4, 4096, 128)},
		{ID: "l8b-generate-static", Model: eightB, Groups: []string{GroupGenerate}, What: "generate 128 tokens after 4096, batch 4, static cache", Job: infer(4, 4096, 128), Cache: cacheStatic, Note: staticNote},
		{ID: "m7b-generate", Model: sevenBMistral, Groups: []string{GroupGenerate}, What: "generate 128 tokens after 4096, batch 2", Job: infer(2, 4096, 128)},
		// torch.compile, last: compiling takes longer than the run.
		small("q05-full-compile", "full bf16, AdamW, torch.compile of the whole model", []string{GroupCompile}, func(j *memory.Job) { j.Compile = true }),
		// Jobs that need packages the GPU host may lack.
		{ID: "l8b-qlora-all-gc", Model: eightB, Groups: []string{GroupNeedsBnB, GroupLoRA}, What: "QLoRA nf4, r16 on all linear layers, checkpointing",
			Job: memory.Job{Method: "qlora", LoRARank: defaultLoRARank, LoRATargets: []string{attnAll}, MicroBatch: 1, SeqLen: 2048, GradCheckpoint: gcFull}},
		{ID: "q15-full-adamw8bit", Model: qwenOneAndHalfB, Groups: []string{GroupNeedsBnB, GroupOptimizer}, What: "full bf16, 8-bit AdamW (bitsandbytes)",
			Job: memory.Job{MicroBatch: 2, SeqLen: 1024, Optimizer: "adamw_8bit"}},
		{ID: "l1b-full-flash", Model: sweepModel, Groups: []string{GroupNeedsFlash, GroupAttention}, What: "full bf16, FlashAttention-2, batch 1, 1024 tokens",
			Job: memory.Job{MicroBatch: 1, SeqLen: sweepSeqFirst, Attention: "flash"}},
	}
}
