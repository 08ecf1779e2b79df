package accuracy

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/plan"
)

// Mapper turns a record into the memory.Job that reproduces it. It
// returns an error when the record lacks something the estimate needs.
type Mapper func(r Record) (memory.Job, error)

var (
	mappersMu sync.RWMutex
	mappers   = map[string]Mapper{"train": TrainingJob}
)

// RegisterMapper sets the mapper for records whose job.mode is mode
// ("train", "inference", "serving"). Registering a mode again replaces
// its mapper.
func RegisterMapper(mode string, fn Mapper) {
	mappersMu.Lock()
	defer mappersMu.Unlock()
	mappers[mode] = fn
}

// mapperFor returns the mapper of a mode, followed by [RecordGPU]: every
// mode's job gets the facts of the GPU its record names.
func mapperFor(mode string) (Mapper, bool) {
	mappersMu.RLock()
	defer mappersMu.RUnlock()
	fn, ok := mappers[mode]
	if !ok {
		return nil, false
	}
	return func(r Record) (memory.Job, error) {
		job, err := fn(r)
		if err != nil {
			return job, err
		}
		return RecordGPU(job), nil
	}, true
}

// RecordGPU resolves the GPU a mapped job names (a record's job.gpu:
// "L40S", "H100-80GB", "A100-SXM4-40GB") through the GPU catalog and
// copies the board's facts into the job (plan.OnGPU): compute capability
// and the CUDA-reported total, unless the record stated its GPU memory
// (gpu_memory_gib), which wins. A name the catalog does not resolve,
// unknown or ambiguous (a bare "A100" is a 40 or an 80 GB board), is not
// guessed: the job keeps the name without facts, and the estimate's
// warnings name it.
func RecordGPU(job memory.Job) memory.Job {
	if job.GPU == "" || job.GPUComputeCapability != 0 {
		return job
	}
	if j, _, err := plan.ResolveGPU(nil, job); err == nil {
		return j
	}
	return job
}

// TrainingJob maps a training record onto a memory.Job, following the
// matching settings of MODEL.md §15.15:
//
//   - HF Trainer runs with fp16/bf16 "mixed precision" and an fp32 master
//     but no engine are AMP: the model is fp32 on the GPU, autocast to
//     the stated dtype;
//   - the framework (litgpt, torchtune, torchtitan, HF) selects the
//     activation inventory and loss;
//   - the versions the record states or implies are its stack ([StackOf]:
//     torch 1.x, bitsandbytes 0.41 or 0.42, a dated torchtitan, ...);
//   - fused_loss means torchtune's chunked CE (compiled when the run is)
//     or, elsewhere, Liger's fused linear cross-entropy.
func TrainingJob(r Record) (memory.Job, error) {
	j := r.Job
	job := memory.Job{
		Mode:          memory.Train,
		Dtype:         j.Dtype,
		MasterWeights: j.MasterWeights,
		Optimizer:     j.Optimizer,
		Attention:     j.Attn,
		Framework:     frameworkOf(r),
		TaskHead:      j.TaskHead,
		GPU:           j.GPU,
		Engine:        j.Engine,
		NumGPUs:       j.NumGPUs,
		DP:            j.DP, TP: j.TP, PP: j.PP, CP: j.CP, EP: j.EP,
		OffloadOptimizer: j.OffloadOpt,
		OffloadParams:    j.OffloadParams,
		Packed:           j.Packed,
		AllowLong:        true,
	}
	if j.ZeRO != nil {
		job.ZeRO = *j.ZeRO
	}
	if j.SeqLen == nil {
		return job, fmt.Errorf("%s: job.seq_len not stated", r.ID)
	}
	job.SeqLen = *j.SeqLen
	job.MicroBatch = intOr(j.PerDeviceBatch, 1)
	job.GradAccum = intOr(j.GradAccum, 1)
	if job.Dtype == "" {
		job.Dtype = "bf16"
	}
	switch {
	case (job.Dtype == "fp16" || job.Dtype == "bf16") && j.MasterWeights == "fp32" && j.Engine == "":
		// HF Trainer fp16=True/bf16=True on an fp32-loaded model is AMP.
		job.ComputeDtype, job.Dtype, job.MasterWeights = job.Dtype, "fp32", ""
	case job.Dtype == "fp32" && j.MasterWeights != "fp32":
		// fp32 weights without a mixed-precision recipe: pure fp32 training.
		job.ComputeDtype = "fp32"
	}
	mapMethod(r, &job)
	mapActivationKnobs(r, &job)
	mapFloat8(r, &job)
	job.Stack = StackOf(r)
	return RecordGPU(job), nil
}

// mapMethod sets the fine-tuning method and adapter options.
func mapMethod(r Record, job *memory.Job) {
	j := r.Job
	switch {
	case j.QLoRA && (job.Dtype == "nf4" || job.Dtype == "fp4"):
		job.Method = memory.MethodQLoRA
	case j.LoRA || j.QLoRA:
		job.Method = memory.MethodLoRA
	case mapPEFTMethod(r, job):
		// A PEFT method beyond LoRA, recorded by its trainable count.
	case j.TrainableParam != nil:
		job.Method = memory.MethodFrozen
		job.TrainableParams = *j.TrainableParam
	default:
		job.Method = memory.MethodFull
	}
	if job.Method == memory.MethodLoRA || job.Method == memory.MethodQLoRA {
		job.LoRARank = intOr(j.LoRARank, 0)
		job.LoRAAlpha = intOr(j.LoRAAlpha, 0)
		if len(j.LoRATargets) > 0 {
			job.LoRATargets = j.LoRATargets
		}
		if j.LoRADropout != nil {
			job.LoRADropout = *j.LoRADropout
		}
		if strings.Contains(j.PEFTVariant, "trainable_embeddings") {
			// PEFT modules_to_save for the input and output embeddings.
			job.Trainable = []string{"embedding", "lm_head"}
		}
		switch {
		case strings.Contains(j.PEFTVariant, "dora"):
			job.PEFTVariant = "dora"
		case strings.Contains(j.PEFTVariant, "lora-fa"):
			job.PEFTVariant = "lora-fa"
		}
		if strings.Contains(j.QuantFormat, "fp4") {
			job.QuantType = "fp4"
		}
		if strings.Contains(j.QuantFormat, "bf16 quant_storage") {
			job.QuantStorage = "bf16"
		}
		if strings.Contains(j.QuantFormat, "double quant") || strings.Contains(j.QuantFormat, "no double") {
			dq := !strings.Contains(j.QuantFormat, "no double")
			job.DoubleQuant = &dq
		} else if strings.Contains(j.QuantFormat, "bitsandbytes nf4") {
			dq := false
			job.DoubleQuant = &dq
		}
	}
}

// mapFloat8 reads torchao float8 training from a record's software
// note: the recipe ("float8 tensorwise", "float8 rowwise") and whether
// FSDP all-gathers the weights in float8 ("float8 FSDP all-gather").
func mapFloat8(r Record, job *memory.Job) {
	note := strings.ToLower(r.Job.SoftwareNote)
	switch {
	case strings.Contains(note, "no float8"):
	case strings.Contains(note, "float8 tensorwise"):
		job.Float8 = "tensorwise"
	case strings.Contains(note, "float8 rowwise"):
		job.Float8 = "rowwise"
	}
	job.Float8AllGather = job.Float8 != "" && strings.Contains(note, "float8 fsdp all-gather")
}

// virtualTokensRE reads "200 virtual tokens" from a record's PEFT method.
var virtualTokensRE = regexp.MustCompile(`(\d+) virtual tokens`)

// mapPEFTMethod maps a record of a PEFT method the estimator models
// beyond LoRA (job.peft_variant ia3, vera, prefix_tuning, prompt_tuning,
// p_tuning) onto the method with the settings the record's PEFT method
// text states: the virtual tokens, and IA3 on all seven Llama linears
// with gate/up/down as feedforward modules. The records of prompt and
// P-tuning count the virtual tokens in seq_len, which the estimator adds
// itself. It reports whether it mapped the record.
func mapPEFTMethod(r Record, job *memory.Job) bool {
	j := r.Job
	v := strings.ReplaceAll(strings.ToLower(j.PEFTVariant), "_", "-")
	switch v {
	case memory.VariantIA3, memory.VariantVeRA, memory.VariantPrefixTuning, memory.VariantPromptTuning, memory.VariantPTuning:
	default:
		return false
	}
	job.Method, job.PEFTVariant = memory.MethodLoRA, v
	text := strings.ToLower(r.PEFTMethod)
	if m := virtualTokensRE.FindStringSubmatch(text); m != nil {
		job.NumVirtualTokens, _ = strconv.Atoi(m[1])
	}
	if v == memory.VariantPromptTuning || v == memory.VariantPTuning {
		job.SeqLen = max(job.SeqLen-job.NumVirtualTokens, 1)
	}
	if v == memory.VariantIA3 && strings.Contains(text, "all 7 linear") {
		job.LoRATargets = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
		job.FeedforwardModules = []string{"gate_proj", "up_proj", "down_proj"}
	}
	return true
}

// mapActivationKnobs sets checkpointing, loss and runtime switches.
func mapActivationKnobs(r Record, job *memory.Job) {
	j := r.Job
	if j.GradCheckpoint != nil && *j.GradCheckpoint {
		job.GradCheckpoint = "full"
		if j.CheckpointMode != "" {
			job.GradCheckpoint = j.CheckpointMode
		}
	}
	if j.GradCheckpoint != nil && !*j.GradCheckpoint {
		job.GradCheckpoint = "none" // stated off (unset, a QLoRA job checkpoints)
	}
	f := strings.ToLower(r.Framework)
	if j.GradCheckpoint == nil && (strings.Contains(f, "llama-factory") || strings.Contains(f, "qwen finetune.py")) {
		// Unstated: LLaMA-Factory enables gradient checkpointing unless
		// disable_gradient_checkpointing is set; Qwen's finetune scripts
		// pass --gradient_checkpointing.
		job.GradCheckpoint = "full"
	}
	if strings.Contains(j.PEFTVariant, "unsloth") {
		// Unsloth: offloaded gradient checkpointing and a chunked fused CE.
		job.GradCheckpoint, job.ActivationOffload, job.FusedLoss = "full", true, "liger"
	}
	job.Compile = boolOr(j.Compile)
	job.ActivationOffload = boolOr(j.ActOffload)
	job.OptimizerInBwd = boolOr(j.OptInBwd)
	if strings.Contains(f, "torchtune (may 2024)") && j.FusedLoss == nil {
		// Before CEWithChunkedOutputLoss (mid-2024) torchtune upcast the
		// full logits and used plain cross-entropy.
		job.FusedLoss = "none"
	}
	if boolOr(j.FusedLoss) {
		switch {
		case job.Framework == memory.FrameworkTorchtune && job.Compile:
			job.FusedLoss = "chunked-compiled"
		case job.Framework == memory.FrameworkTorchtune:
			job.FusedLoss = "chunked"
		default:
			job.FusedLoss = "liger"
		}
	}
}

// frameworkOf reads the framework from the record's framework text.
func frameworkOf(r Record) string {
	f := strings.ToLower(r.Framework)
	switch {
	case strings.Contains(f, "lit-gpt") || strings.Contains(f, "litgpt"):
		return memory.FrameworkLitGPT
	case strings.Contains(f, "torchtune"):
		return memory.FrameworkTorchtune
	case strings.Contains(f, "torchtitan") || strings.Contains(f, "torchtrain"):
		return memory.FrameworkTorchtitan
	case strings.Contains(f, "megatron"):
		return memory.FrameworkMegatron
	}
	return memory.FrameworkHF
}

// intOr dereferences p or returns def.
func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// boolOr dereferences p (false when nil).
func boolOr(p *bool) bool { return p != nil && *p }
