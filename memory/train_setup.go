package memory

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/model"
)

// Training methods (Job.Method).
const (
	MethodFull   = "full"
	MethodLoRA   = "lora"
	MethodQLoRA  = "qlora"
	MethodFrozen = "frozen"
)

// Frameworks whose activation inventories differ (Job.Framework).
const (
	FrameworkHF         = "hf"
	FrameworkTorchtune  = "torchtune"
	FrameworkLitGPT     = "litgpt"
	FrameworkMegatron   = "megatron"
	FrameworkTorchtitan = "torchtitan"
	FrameworkDeepSpeed  = "deepspeed"
)

// ckptMode is the resolved gradient-checkpointing mode.
type ckptMode uint8

const (
	ckptNone ckptMode = iota
	ckptFull
	ckptSelective
	ckptEveryN
	// ckptOp is torchtitan's op-level selective checkpointing: every layer
	// is checkpointed, and the policy keeps the outputs of every other
	// matmul and of the attention kernel (titanOpSaved).
	ckptOp
)

// trAttn is the resolved attention implementation.
type trAttn uint8

const (
	trAttnSDPA trAttn = iota
	trAttnFlash
	trAttnEager
)

// lossImpl is the resolved output-layer loss implementation.
type lossImpl uint8

const (
	lossHF              lossImpl = iota // logits.float() + F.cross_entropy (MODEL.md §4.6)
	lossLitGPTChunked                   // lm_head in 128-token chunks, chunked CE (litgpt)
	lossLiger                           // Liger fused linear cross-entropy
	lossChunked                         // torchtune CEWithChunkedOutputLoss, eager
	lossChunkedCompiled                 // torchtune chunked CE, compiled
	lossNone                            // classification head: no vocabulary logits
)

// setup is a validated, defaulted training job: everything the component
// formulas read, resolved once.
type setup struct {
	m   *model.Model
	job *Job // the caller's job, read only
	c   constants

	method    string
	framework string
	weight    DType // base weights as held on the GPU
	compute   DType // matmul/activation dtype (autocast dtype under AMP)
	adapter   DType // LoRA adapter dtype
	residual  float64
	amp       bool      // fp32 weights + autocast (MODEL.md §2.1 AMP row)
	master    bool      // separate fp32 master copy of trainable params
	gradFP32  bool      // fp32 gradient accumulation buffers (Megatron main_grad)
	kbitFP32  bool      // prepare_model_for_kbit_training: non-quantized params fp32
	quantHead bool      // the output head is quantized too (litgpt bitsandbytes precision)
	double    bool      // bnb double quantisation
	alloc     AllocConf // the caching allocator's configuration (Job.AllocConf, or the framework's)
	shardedQ  bool      // sharded QLoRA: 4-bit weights sharded by FSDP or ZeRO-3 (resolveShardedQLoRA)
	// float8 is the torchao float8 recipe ("" none); float8Gather is
	// FSDP2's float8 all-gather of the Linear weights (resolveFloat8).
	float8       string
	float8Gather bool

	opt *optimizerSpec

	batch, accum, seq int
	tokens            float64 // LLM tokens per micro-batch (text + image)
	seqTotal          int     // LLM sequence length incl. image tokens
	images            int     // images per micro-batch
	ckptEvery         int
	attn              trAttn
	ckpt              ckptMode
	loss              lossImpl
	packed            bool
	compile           bool
	offload           bool
	optInBwd          bool
	torch1            bool
	bnbOld            bool
	titanLogits       bool    // torchtitan kept the model's fp32 logits through backward (early 2024)
	rules             ruleSet // the version rules in effect for the job's stack
	lora              loraSpec
	trainable         trainSpec
	dist              distSpec
	load              loadSpec
	wholeModel        bool // frac returns 1: count the whole model, not a rank's share
	warnings          []string
	buf               *trainBuf // the Estimator's memory; nil: allocate
	out               *outBuf   // where assemble writes the result; nil: allocate
	trained           float64   // the whole model's trainable parameters, once haveTrained
	haveTrained       bool
	tab               *modTab   // the model's inventory table; initJob makes one if nil
	fracs             []float64 // rankFrac of each module on the current stage (fillFracs)
	unitFracs         bool      // every module is wholly on this rank (all fracs are 1)
	slowSums          bool      // tests: sum module by module even where the model table's totals give the answer
	acts              actMemo   // what activations computes alike for every stage
	leanRows          bool      // build lean row tables: totals and sums only (Peak)
}

// init validates job against m and fills every default.
func (s *setup) init(m *model.Model, job Job) error {
	*s = setup{}
	return s.initJob(m, &job)
}

// initJob is init on a zero s, with the job passed by pointer: s points
// to it (copying 800 bytes per estimate cost more than the rest of the
// setup), so it must not change until the estimate is done.
func (s *setup) initJob(m *model.Model, job *Job) error {
	s.m, s.job = m, job
	if s.tab == nil {
		s.tab = newModTab(m)
	}
	if err := s.c.resolve(job.Constants); err != nil {
		return err
	}
	if err := s.resolveFramework(); err != nil {
		return err
	}
	if err := s.resolveMethod(); err != nil {
		return err
	}
	if err := s.resolvePrecision(); err != nil {
		return err
	}
	var err error
	if s.opt, err = lookupOptimizer(job.Optimizer); err != nil {
		return FieldErrorf("optimizer", "{optimizer}: %w", err)
	}
	if s.opt.kind == optTorchao && s.rules.has(ruleTorchaoBlock2048) {
		s.opt = torchaoOldBlock(s.opt)
	}
	if err := s.resolveBatch(); err != nil {
		return err
	}
	if err := s.resolveActivationKnobs(); err != nil {
		return err
	}
	if err := s.resolveDist(); err != nil {
		return err
	}
	if err := s.resolveLoading(); err != nil {
		return err
	}
	if err := s.resolveShardedQLoRA(); err != nil {
		return err
	}
	if err := s.checkOptimizerLayout(); err != nil {
		return err
	}
	if err := s.resolveFloat8(); err != nil {
		return err
	}
	if err := s.resolveTrainable(); err != nil {
		return err
	}
	if err := s.checkRecurrent(); err != nil {
		return err
	}
	s.warnUnusedActConstants()
	if job.GPU != "" {
		if w := gpuWarning(job); w != "" {
			// Once for the job, whichever pipeline stage is the peak.
			s.warn(w)
		}
	}
	return nil
}

// checkOptimizerLayout refuses what the optimizer cannot run with:
// torchao's CPUOffloadOptimizer is for one GPU ("Offload optimizer to CPU
// for single-GPU training", torchao/optim/cpu_offload.py), and freeing
// gradients as they are offloaded is "not compatible with gradient
// accumulation".
func (s *setup) checkOptimizerLayout() error {
	if s.opt.kind != optCPUOffload {
		return nil
	}
	if !s.dist.single {
		return FieldErrorf("optimizer", "{optimizer=%s}: torchao's CPUOffloadOptimizer offloads for single-GPU training only; use an engine's offload ({offload_optimizer=cpu} with deepspeed or fsdp)", s.opt.info.Name)
	}
	if s.opt.offloadGrads && s.accum > 1 {
		return FieldErrorf("optimizer", "{optimizer=%s} with {grad_accum=%d}: offload_gradients frees each gradient after copying it, which torchao says is not compatible with gradient accumulation", s.opt.info.Name, s.accum)
	}
	return nil
}

// resolveFramework reads Framework and the stack's version rules.
func (s *setup) resolveFramework() error {
	f := fold(s.job.Framework)
	switch f {
	case "":
		// The engine implies its framework: Megatron runs Megatron-Core
		// layers with fp32 main_grad buffers.
		s.framework = FrameworkHF
		if s.job.Engine == "" {
			break
		}
		if e, _ := normalizeEngine(s.job.Engine, 1); e == EngineMegatron {
			s.framework = FrameworkMegatron
		}
	case "hf", "transformers", "trl", "peft", "accelerate", "axolotl", "llamafactory", "llama-factory":
		s.framework = FrameworkHF
	case "torchtune", "litgpt", "megatron", "torchtitan", "deepspeed":
		s.framework = f
	case "lit-gpt":
		s.framework = FrameworkLitGPT
	case "megatron-core", "mcore", "nemo", "te":
		s.framework = FrameworkMegatron
	default:
		return FieldErrorf("framework", "{framework}: unknown framework %q (want hf, torchtune, litgpt, megatron or torchtitan)", s.job.Framework)
	}
	rs, warnings, err := jobRules(s.job)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		s.warn(w)
	}
	s.rules = rs
	s.torch1 = rs.has(ruleTorchZeroGradKeeps)
	s.bnbOld = rs.has(ruleBnb4bitSavesInput)
	s.titanLogits = rs.has(ruleTitanLogitsThroughBackward)
	return s.resolveAlloc(rs)
}

// resolveAlloc reads the allocator configuration (Job.AllocConf), or the
// one the framework sets, and checks it against the stack's torch.
func (s *setup) resolveAlloc(rs ruleSet) error {
	c, err := resolveAllocConf(s.job, rs, s.framework == FrameworkTorchtitan)
	if err != nil {
		return err
	}
	s.alloc = c.conf
	if c.assumed != "" {
		s.warn(c.assumed)
	}
	s.allocNotes()
	return nil
}

// resolveMethod reads Method and PEFT variant.
func (s *setup) resolveMethod() error {
	// The spelling as given first: almost every job gives a folded one,
	// which fold would only scan and return.
	m, ok := methodByName(s.job.Method)
	if !ok {
		m, ok = methodByName(fold(s.job.Method))
	}
	if !ok {
		return FieldErrorf("method", "{method}: unknown method %q (want full, lora, qlora, frozen or a PEFT method: %s)", s.job.Method, strings.Join(peftVariants[1:], ", "))
	}
	s.method = m
	if s.method == MethodFull && (len(s.job.Trainable) > 0 || s.job.TrainableParams > 0) {
		s.method = MethodFrozen
	}
	if s.method != MethodLoRA && s.method != MethodQLoRA {
		return nil
	}
	return s.resolveVariant()
}

// resolveVariant reads the PEFT method of an adapter job: PEFTVariant,
// or the method's own name (method ia3 is lora with variant ia3); the two
// must agree when both are given.
func (s *setup) resolveVariant() error {
	j := s.job
	v, ok := parsePEFTVariant(j.PEFTVariant)
	if !ok {
		return FieldErrorf("peft_variant", "{peft_variant}: unknown variant %q (want %s)", j.PEFTVariant, strings.Join(peftVariants, ", "))
	}
	if mv, isVariant := parsePEFTVariant(j.Method); isVariant && mv != VariantLoRA {
		if strings.TrimSpace(j.PEFTVariant) != "" && v != mv {
			return FieldErrorf("peft_variant", "{peft_variant=%s} disagrees with {method=%s}; give one", j.PEFTVariant, j.Method)
		}
		v = mv
	}
	s.lora.variant = v
	if promptLearning(v) {
		s.lora.virtual = max(j.NumVirtualTokens, 0)
	}
	return nil
}

// methodByName is the method a folded --method spelling names: a PEFT
// method's name (dora, ia3, prefix-tuning, ...) is LoRA-style training
// of adapters on a frozen base with that variant.
func methodByName(m string) (string, bool) {
	switch m {
	case "", MethodFull, "full_finetune", "pretrain":
		return MethodFull, true
	case MethodLoRA, MethodQLoRA, MethodFrozen:
		return m, true
	}
	// Only a folded spelling here: the caller folds a miss and asks again.
	if _, ok := parsePEFTVariant(m); ok && m == fold(m) {
		return MethodLoRA, true
	}
	return "", false
}

// resolveBatch reads batch, accumulation, sequence and image inputs.
func (s *setup) resolveBatch() error {
	j := s.job
	if err := checkMicroBatch(j); err != nil {
		return err
	}
	if j.GradAccum < 0 {
		return FieldErrorf("grad_accum", "{grad_accum}: want a positive count, got %d", j.GradAccum)
	}
	s.accum = max(j.GradAccum, 1)
	if j.SeqLen < 0 {
		return FieldErrorf("seq_len", "{seq_len}: want a positive length, got %d", j.SeqLen)
	}
	s.seq = j.SeqLen
	if s.seq == 0 {
		s.seq = min(DefaultSeqLen, max(s.m.Text.MaxPositions, 1))
		s.warn(fmt.Sprintf("seq_len not given: assuming %d tokens per sample", s.seq))
	}
	if j.ImagesPerSample < 0 || j.ImageSize < 0 {
		return FieldErrorf(cond(j.ImagesPerSample < 0, "images_per_sample", "image_size"), "{images_per_sample}/{image_size}: want non-negative values, got %d/%d", j.ImagesPerSample, j.ImageSize)
	}
	// Prompt tuning and P-tuning prepend their virtual tokens to every
	// sample: each layer and the logits run over them too.
	s.seqTotal = s.seq + s.promptTokens()
	if err := checkImages(s.m, j); err != nil {
		return err
	}
	if j.ImageSize > 0 && j.ImagesPerSample == 0 {
		s.warn("image_size without images_per_sample: no images are counted (text-only samples)")
	}
	if j.ImagesPerSample > 0 {
		tpi, err := imageTokens(s.m.Vision, j.ImageSize)
		if err != nil {
			return err
		}
		s.seqTotal += j.ImagesPerSample * tpi
	}
	if mp := s.m.Text.MaxPositions; mp > 0 && s.seqTotal > mp && !j.AllowLong {
		return FieldErrorf("seq_len", "{seq_len}: %d tokens exceed max_position_embeddings %d of %s (pass {allow_long=true} to estimate anyway)", s.seqTotal, mp, s.m.ID)
	}
	s.setMicroBatch()
	s.packed = j.Packed == nil || *j.Packed
	if !s.packed {
		s.warn(fmt.Sprintf("packed=false: seq_len %d is treated as the longest batch (padded to it); shorter batches use less", s.seq))
	}
	return nil
}

// checkMicroBatch rejects a negative micro-batch (0 means 1).
func checkMicroBatch(j *Job) error {
	if j.MicroBatch < 0 {
		return FieldErrorf("per_device_batch", "{per_device_batch}: want a positive batch size, got %d", j.MicroBatch)
	}
	return nil
}

// setMicroBatch sets what follows from the micro-batch once the
// sequence is resolved: the samples, images and tokens of one
// micro-batch. Nothing else of the set-up depends on it (a [Sweep]
// relies on that).
func (s *setup) setMicroBatch() {
	j := s.job
	s.batch = max(j.MicroBatch, 1)
	s.images = s.batch * j.ImagesPerSample // 0 without images
	s.tokens = float64(s.batch) * float64(s.seqTotal)
}

// DefaultSeqLen is the sequence length assumed when a job gives none,
// the same for training (tokens per sample) and inference (prompt
// tokens), for the CLI, the API and the page. It is LLaMA-Factory's
// cutoff_len default (hiyouga/LLaMA-Factory
// src/llamafactory/hparams/data_args.py @ 072bfe2), and twice TRL's
// SFTConfig max_length (1024, huggingface/trl trl/trainer/sft_config.py
// @ 016013e): of the common defaults the longer one, so that an unstated
// length errs towards more memory, never towards a wrong "fits".
const DefaultSeqLen = 2048

// qloraCheckpointNote says why a QLoRA job without a checkpointing
// setting is estimated with full checkpointing.
const qloraCheckpointNote = "grad_checkpoint not given: QLoRA is estimated with full gradient checkpointing, " +
	"as PEFT's prepare_model_for_kbit_training(use_gradient_checkpointing=True) enables it by default " +
	"(LLaMA-Factory, axolotl and Unsloth too); set grad_checkpoint=none to estimate without"

// resolveActivationKnobs reads attention, checkpointing, loss and runtime switches.
func (s *setup) resolveActivationKnobs() error {
	j := s.job
	// Spellings as given first, folded only when they miss (see
	// resolveMethod).
	var ok bool
	if s.attn, ok = attnByName(j.Attention); !ok {
		if s.attn, ok = attnByName(fold(j.Attention)); !ok {
			return FieldErrorf("attn", "{attn}: unknown attention %q (want eager, sdpa or flash)", j.Attention)
		}
	}
	g := j.GradCheckpoint
	switch g {
	case "", "none", "full", "selective", "op":
		// Folded already: the cases below read them as given.
	default:
		g = fold(g)
	}
	switch {
	case g == "" && s.method == MethodQLoRA && s.framework == FrameworkHF:
		// QLoRA stacks checkpoint unless told not to: PEFT's
		// prepare_model_for_kbit_training(use_gradient_checkpointing=True)
		// (huggingface/peft src/peft/utils/other.py @ 012c0d5), which
		// LLaMA-Factory, axolotl and Unsloth call with checkpointing on.
		s.ckpt = ckptFull
		s.warn(qloraCheckpointNote)
	case g == "" || g == "none" || g == "false" || g == "off":
		s.ckpt = ckptNone
	case g == "full" || g == "true" || g == "on":
		s.ckpt = ckptFull
	case g == "selective" && s.framework == FrameworkTorchtitan:
		// torchtitan's selective AC defaults to checkpointing every
		// second layer (selective_ac_option "2").
		s.ckpt, s.ckptEvery = ckptEveryN, 2
	case g == "op" && s.framework == FrameworkTorchtitan:
		// torchtitan's selective_ac_option "op": a per-op policy in every
		// layer, not Megatron's attention-core recompute.
		if err := s.titanOpSupported(); err != nil {
			return err
		}
		s.ckpt = ckptOp
	case g == "selective" || g == "op" || g == "sac":
		s.ckpt = ckptSelective
	case strings.HasPrefix(g, "every-"):
		n, err := strconv.Atoi(strings.TrimPrefix(g, "every-"))
		if err != nil || n < 1 {
			return FieldErrorf("grad_checkpoint", "{grad_checkpoint}: %q: want every-N with N >= 1", j.GradCheckpoint)
		}
		s.ckpt, s.ckptEvery = ckptEveryN, n
		if n == 1 {
			s.ckpt = ckptFull
		}
	default:
		return FieldErrorf("grad_checkpoint", "{grad_checkpoint}: unknown mode %q (want none, full, selective, every-N, or op with torchtitan)", j.GradCheckpoint)
	}
	switch fl := fold(j.FusedLoss); fl {
	case "":
		// Framework defaults: litgpt chunks lm_head and CE; torchtune
		// recipes use CEWithChunkedOutputLoss (compiled with the model
		// when compile is on); HF computes full logits.
		switch {
		case s.framework == FrameworkLitGPT:
			s.loss = lossLitGPTChunked
		case s.framework == FrameworkTorchtune && j.Compile:
			s.loss = lossChunkedCompiled
		case s.framework == FrameworkTorchtune:
			s.loss = lossChunked
		default:
			s.loss = lossHF
		}
	case "none", "false":
		s.loss = lossHF
	case "liger", "flce", "true", "fused":
		s.loss = lossLiger
	case "chunked":
		s.loss = lossChunked
	case "chunked-compiled", "chunked_compiled", "compiled":
		s.loss = lossChunkedCompiled
	default:
		return FieldErrorf("fused_loss", "{fused_loss}: unknown loss %q (want none, liger, chunked or chunked-compiled)", j.FusedLoss)
	}
	if !s.hasVocabHead() {
		s.loss = lossNone
	}
	s.compile, s.offload, s.optInBwd = j.Compile, j.ActivationOffload, j.OptimizerInBwd
	if s.optInBwd && s.accum > 1 {
		return FieldErrorf("optimizer_in_backward", "{optimizer_in_backward}: cannot be combined with {grad_accum=%d} (gradients are freed as soon as they are applied)", s.accum)
	}
	return nil
}

// attnByName is the attention implementation a folded --attn spelling
// names.
func attnByName(a string) (trAttn, bool) {
	switch a {
	case "", "sdpa", "mem_efficient", "efficient":
		return trAttnSDPA, true
	case "flash", "flash_attention_2", "flash_attention_3", "fa2", "fa3", "flash2":
		return trAttnFlash, true
	case "eager", "math":
		return trAttnEager, true
	}
	return 0, false
}

// titanOpSupported reports why torchtitan's op-level policy cannot be
// counted for the job: the matmul count it keys on is derived for dense
// self-attention layers without adapters (torchtitan's Llama block).
func (s *setup) titanOpSupported() error {
	st := &s.m.Text
	switch {
	case s.method == MethodLoRA || s.method == MethodQLoRA:
		return FieldErrorf("grad_checkpoint", "{grad_checkpoint=op}: torchtitan's op-level policy is modelled for full or frozen-layer training; adapters add matmuls to the count it keys on (use full or selective)")
	case st.MoE != nil || st.MLA != nil:
		return FieldErrorf("grad_checkpoint", "{grad_checkpoint=op}: torchtitan's op-level policy is modelled for dense layers with standard attention; %s has mixture-of-experts or latent attention layers (use full or every-N)", s.m.ID)
	case s.m.Encoder != nil || !st.Causal:
		return FieldErrorf("grad_checkpoint", "{grad_checkpoint=op}: torchtitan's op-level policy is modelled for decoder-only models; %s is not one (use full or every-N)", s.m.ID)
	}
	for _, lt := range st.LayerTypes {
		if lt.CrossAttention || lt.MoE {
			return FieldErrorf("grad_checkpoint", "{grad_checkpoint=op}: torchtitan's op-level policy is modelled for dense self-attention layers; %s has cross-attention or mixture-of-experts layers (use full or every-N)", s.m.ID)
		}
	}
	return nil
}

// hasVocabHead reports whether the loss runs over vocabulary logits: not
// for a checkpoint without an LM head (model.Model.NoLMHead: an embedding
// model saved as its base class), nor for a task head other than the LM.
func (s *setup) hasVocabHead() bool {
	if s.m.NoLMHead {
		return false
	}
	if h := s.job.TaskHead; h != "" {
		switch strings.ToLower(h) {
		case "sequence_classification", "seq_cls", "classification", "token_classification", "none", "regression":
			return false
		}
	}
	return s.m.Text.Vocab > 0
}

// warn records a warning for Result.Warnings.
func (s *setup) warn(msg string) { s.warnings = append(s.warnings, msg) }

// imageTokens is the number of LLM tokens one image of side size (0:
// the processor's default) becomes, as the model's processor prepares it
// (model.Vision.Image; MODEL.md §9).
func imageTokens(v *model.Vision, size int) (int, error) {
	if size > 0 && v.PatchSize <= 0 {
		return 0, FieldErrorf("image_size", "{image_size}: the vision config gives no patch size to count image tokens")
	}
	return max(v.Image(size).Tokens, 1), nil
}

// imagePatches is the number of vision-tower tokens per image, over all
// of its tiles, and the length of each tower sequence.
func imagePatches(v *model.Vision, size int) (total, perSeq int) {
	sh := v.Image(size)
	if sh.Patches <= 0 {
		return v.TokensPerImage, v.TokensPerImage
	}
	return sh.Tiles * sh.Patches, sh.Patches
}
