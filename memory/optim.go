package memory

import (
	"strings"
)

// OptimizerInfo describes one optimizer the training model knows: its
// names and the size of its persistent state.
type OptimizerInfo struct {
	// Name is the canonical name (a Hugging Face `optim` value where one exists).
	Name string `json:"name"`
	// Aliases are other accepted spellings (short names, torch class names).
	Aliases []string `json:"aliases,omitempty"`
	// StateBytesPerParam is the persistent state per trainable parameter
	// with fp32 states, for a large 2-D weight (factored and low-rank
	// optimizers: the dense-equivalent is given in Note instead, and 0 here
	// means "depends on shapes").
	StateBytesPerParam float64 `json:"state_bytes_per_param"`
	// StateDtype is "param" when states follow the parameter dtype (torch
	// optimizers: zeros_like(p)), "fp32" when always fp32, "8bit" for
	// blockwise-quantized states.
	StateDtype string `json:"state_dtype"`
	// Impl is the step implementation: "foreach", "fused", "for-loop".
	Impl string `json:"impl"`
	// Paged is true for bitsandbytes paged optimizers (unified memory).
	Paged bool `json:"paged,omitempty"`
	// Note explains the state and cites the source.
	Note string `json:"note"`
}

// optKind is the state layout family of an optimizer.
type optKind int

const (
	optDense      optKind = iota // `states` full-size tensors per parameter
	optBnb8bit                   // bitsandbytes blockwise 8-bit states
	optFactored                  // Adafactor-style factored second moment
	optCAME                      // CAME: full m + two factored statistics
	optGaLore                    // GaLore: projector + low-rank Adam moments
	optApollo                    // APOLLO: low-rank moments, seeded projection
	optMuon                      // Muon on hidden 2-D matrices, AdamW elsewhere
	optShampoo                   // blocked Kronecker preconditioners + grafting
	optAdamMini                  // Adam-mini: full m, one v per block
	optNoState                   // LOMO/AdaLomo-like fused updates
	optTorchao                   // torchao low-bit states: blockwise 8-bit, 4-bit or fp8 codes + fp32 scales
	optCPUOffload                // torchao CPUOffloadOptimizer: states (and param/grad copies) on the host
)

// optimizerSpec is the internal description used by the estimator.
type optimizerSpec struct {
	info   OptimizerInfo
	kind   optKind
	states float64 // full-size state tensors per parameter (dense kinds; 8-bit: states quantized)
	// fused32 marks bnb 32-bit optimizers: fp32 states regardless of param dtype.
	fp32 bool
	// hfEmbedding32 marks bnb 8-bit optimizers created by the HF Trainer,
	// which forces nn.Embedding weights to 32-bit states.
	hfEmbedding32 bool
	// torchao low-bit states (optTorchao): bytes of one code, elements
	// per fp32 scale, fp32 entries of the quantization map each state
	// tensor carries (torchao/optim/subclass_{8bit,4bit,fp8}.py).
	codeBytes, block, qmap float64
	// offloadGrads is CPUOffloadOptimizer(offload_gradients=True): each
	// GPU gradient is freed once copied to the host.
	offloadGrads bool
}

// optimizerTable lists every optimizer. Sources: torch.optim docstrings
// (state per algorithm, foreach/fused defaults), MODEL.md §2.3/§2.4/§15.6,
// the papers named in each note.
var optimizerTable = []optimizerSpec{
	optDenseSpec("adamw_torch", 2, "foreach", "torch.optim.AdamW (foreach on CUDA by default): exp_avg, exp_avg_sq in the param dtype; foreach step +1× states-dtype params (MODEL.md §2.3, §15.6)", "adamw", "torch_adamw", "adamw_torch_foreach", "adamw_foreach", "adamw_torch_xla", "adamw_anyprecision", "stable_adamw"),
	optDenseSpec("adamw_torch_fused", 2, "fused", "torch.optim.AdamW(fused=True): same state, no step intermediate (MODEL.md §2.3); torchtune configs set fused: True", "adamw_fused", "fused_adamw", "adamw_apex_fused", "adamw_torch_npu_fused"),
	optDenseSpec("adamw_hf", 2, "for-loop", "transformers.AdamW (Trainer default in 4.18): for-loop, per-tensor sqrt intermediate only (MODEL.md §15.6)", "adamw_torch_forloop", "adamw_forloop"),
	optDenseSpec("adam", 2, "foreach", "torch.optim.Adam: exp_avg, exp_avg_sq (arXiv:1412.6980)", "adam_torch"),
	optDenseSpec("amsgrad", 3, "foreach", "torch.optim.AdamW(amsgrad=True): + max_exp_avg_sq (MODEL.md §2.4)", "adamw_amsgrad", "adam_amsgrad"),
	optDenseSpec("nadam", 2, "foreach", "torch.optim.NAdam: exp_avg, exp_avg_sq (+ scalar mu_product)", "nadamw"),
	optDenseSpec("radam", 2, "foreach", "torch.optim.RAdam: exp_avg, exp_avg_sq"),
	optDenseSpec("adabelief", 2, "for-loop", "AdaBelief (arXiv:2010.07468): exp_avg, exp_avg_var", "adabelief_pytorch"),
	optDenseSpec("ademamix", 3, "for-loop", "AdEMAMix (arXiv:2409.03137): two EMAs of the gradient + second moment", "ademamix_torch"),
	optDenseSpec("schedule_free_adamw", 2, "for-loop", "Schedule-Free AdamW (arXiv:2405.15682): z sequence + exp_avg_sq", "schedulefree_adamw"),
	optDenseSpec("lamb", 2, "for-loop", "LAMB (arXiv:1904.00962): m, v + per-tensor trust-ratio temporaries", "fused_lamb"),
	optDenseSpec("lion", 1, "for-loop", "Lion (arXiv:2302.06675): momentum only", "lion_pytorch"),
	optDenseSpec("grokadamw", 3, "for-loop", "GrokAdamW: exp_avg, exp_avg_sq + an EMA of gradients (grokking amplification)", "grok_adamw"),
	optDenseSpec("schedule_free_sgd", 1, "for-loop", "Schedule-Free SGD (arXiv:2405.15682): z sequence", "schedulefree_sgd"),
	optDenseSpec("sophia", 2, "for-loop", "Sophia (arXiv:2305.14342): m + diagonal Hessian EMA", "sophiag"),
	optDenseSpec("sgd", 0, "foreach", "torch.optim.SGD without momentum: no state (HF optim sgd uses momentum 0)", "sgd_no_momentum"),
	optDenseSpec("sgd_momentum", 1, "foreach", "torch.optim.SGD(momentum>0): momentum_buffer", "momentum", "sgdm"),
	optDenseSpec("nesterov", 1, "foreach", "torch.optim.SGD(nesterov=True): momentum_buffer", "sgd_nesterov"),
	optDenseSpec("adagrad", 1, "foreach", "torch.optim.Adagrad: sum of squared gradients", "adagrad_torch"),
	optDenseSpec("rmsprop", 1, "foreach", "torch.optim.RMSprop: square_avg (+ momentum_buffer, grad_avg when set)", "rmsprop_torch"),
	optDense32Spec("paged_adamw_32bit", 2, true, "bitsandbytes PagedAdamW32bit: fp32 m, v in CUDA unified memory (MODEL.md §2.4; QLoRA arXiv:2305.14314 §3)", "paged_adamw", "paged_adam_32bit"),
	optDense32Spec("adamw_bnb_32bit", 2, false, "bitsandbytes AdamW32bit: fp32 states regardless of param dtype", "adamw_32bit", "bnb_adamw_32bit"),
	optDense32Spec("paged_lion_32bit", 1, true, "bitsandbytes PagedLion32bit: fp32 momentum in unified memory", "paged_lion"),
	optDense32Spec("lion_32bit", 1, false, "bitsandbytes Lion32bit: fp32 momentum", "bnb_lion_32bit"),
	optDense32Spec("rmsprop_bnb_32bit", 1, false, "bitsandbytes RMSprop32bit: fp32 square average", "rmsprop_bnb"),
	optDense32Spec("paged_ademamix_32bit", 3, true, "bitsandbytes PagedAdEMAMix32bit: two EMAs + second moment, fp32, unified memory", "ademamix_32bit"),
	optBnb8Spec("adamw_bnb_8bit", 2, false, "bitsandbytes AdamW8bit: two uint8 states + fp32 absmax per 256-block = 2.03125 B/param; tensors < 4096 elements and (HF Trainer) embeddings keep fp32 states (MODEL.md §2.4)", "adamw_8bit", "adam8bit", "bnb_adamw_8bit", "adamw8bit"),
	optBnb8Spec("paged_adamw_8bit", 2, true, "bitsandbytes PagedAdamW8bit: 8-bit states in CUDA unified memory", "paged_adam_8bit"),
	optBnb8Spec("lion_8bit", 1, false, "bitsandbytes Lion8bit: one uint8 state + absmax", "lion8bit"),
	optBnb8Spec("paged_lion_8bit", 1, true, "bitsandbytes PagedLion8bit"),
	optBnb8Spec("rmsprop_bnb_8bit", 1, false, "bitsandbytes RMSprop8bit: one uint8 state + absmax"),
	optBnb8Spec("ademamix_8bit", 3, false, "bitsandbytes AdEMAMix8bit: three uint8 states + absmax", "paged_ademamix_8bit"),
	{info: OptimizerInfo{Name: "adafactor", Aliases: []string{"adafactor_hf", "adafactor_torch"}, StateDtype: "fp32", Impl: "for-loop",
		Note: "Adafactor (arXiv:1804.04235), beta1=None: row + column accumulators (n+m) per matrix, full v for 1-D params; HF/torch default for-loop"}, kind: optFactored},
	{info: OptimizerInfo{Name: "came", Aliases: []string{"came_pytorch"}, StateDtype: "param", Impl: "for-loop",
		Note: "CAME (arXiv:2307.02047): full first moment + factored second moment and factored confidence (2·(n+m)) per matrix"}, kind: optCAME},
	{info: OptimizerInfo{Name: "galore_adamw", Aliases: []string{"galore", "galore_adamw_layerwise", "galore_adamw_8bit", "galore_adamw_8bit_layerwise", "galore_adafactor", "galore_adafactor_layerwise"}, StateDtype: "fp32", Impl: "for-loop",
		Note: "GaLore (arXiv:2403.03507), rank 128: projector m·r + Adam moments 2·n·r per matrix (m ≤ n); non-matrix params AdamW"}, kind: optGaLore},
	{info: OptimizerInfo{Name: "apollo_adamw", Aliases: []string{"apollo", "apollo_adamw_layerwise"}, StateDtype: "fp32", Impl: "for-loop",
		Note: "APOLLO (arXiv:2412.05270), rank 256: moments 2·r·n per matrix, projection regenerated from a seed; non-matrix params AdamW"}, kind: optApollo},
	{info: OptimizerInfo{Name: "muon", Aliases: []string{"muon_adamw"}, StateDtype: "param", Impl: "for-loop",
		Note: "Muon (KellerJordan/Muon:muon.py): momentum for hidden 2-D matrices; embeddings, lm_head, norms, biases use AdamW (2 states); Newton-Schulz transient per matrix"}, kind: optMuon},
	{info: OptimizerInfo{Name: "shampoo", Aliases: []string{"distributed_shampoo"}, StateDtype: "fp32", Impl: "for-loop",
		Note: "Shampoo (arXiv:1802.09568; Distributed Shampoo arXiv:2309.06497, max_preconditioner_dim 1024): per block L, R and their inverse roots + AdaGrad grafting + momentum"}, kind: optShampoo},
	{info: OptimizerInfo{Name: "adam_mini", Aliases: []string{"adammini"}, StateDtype: "fp32", Impl: "for-loop",
		Note: "Adam-mini (arXiv:2406.16793): full first moment, one second-moment scalar per head/neuron block"}, kind: optAdamMini},
	{info: OptimizerInfo{Name: "lomo", Aliases: []string{"adalomo"}, StateDtype: "fp32", Impl: "fused",
		Note: "LOMO/AdaLomo (arXiv:2306.09782): update fused into backward, no optimizer state (AdaLomo: factored second moment, ≈ 0)"}, kind: optNoState},
	optTorchaoSpec("adamw_torch_8bit", 1, torchao8Block, 256, "8bit",
		"torchao.optim.AdamW8bit (HF optim adamw_torch_8bit): exp_avg, exp_avg_sq as uint8 codes + one fp32 scale per 256-block + a 256-entry fp32 map per state tensor = 2.03 B/param; tensors under 4096 elements or not a multiple of the block keep states in the param dtype (torchao/optim/adam.py _new_buffer, subclass_8bit.py @v0.13.0)",
		"torchao_adamw8bit", "torchao_adamw_8bit", "ao_adamw8bit", "torchao.optim.adamw8bit", "torchao_adam8bit", "torchao.optim.adam8bit"),
	optTorchaoSpec("adamw_torch_4bit", 0.5, torchao4Block, 16, "4bit",
		"torchao.optim.AdamW4bit (HF optim adamw_torch_4bit): two packed 4-bit states + one fp32 scale per 128-block + a 16-entry map = 1.06 B/param; small tensors keep param-dtype states (torchao/optim/subclass_4bit.py @v0.13.0)",
		"torchao_adamw4bit", "torchao_adamw_4bit", "ao_adamw4bit", "adamw4bit", "torchao.optim.adamw4bit", "torchao_adam4bit", "torchao.optim.adam4bit"),
	optTorchaoSpec("torchao_adamw_fp8", 1, torchao8Block, 0, "fp8",
		"torchao.optim.AdamWFp8: two float8_e4m3fn states + one fp32 scale per 256-block = 2.03 B/param; small tensors keep param-dtype states (torchao/optim/subclass_fp8.py @v0.13.0)",
		"adamw_fp8", "adamwfp8", "ao_adamw_fp8", "torchao.optim.adamwfp8", "torchao_adam_fp8", "torchao.optim.adamfp8"),
	{info: OptimizerInfo{Name: "cpu_offload_adamw", Aliases: []string{"torchao_cpu_offload", "cpuoffloadoptimizer", "torchao.optim.cpuoffloadoptimizer", "cpu_offload_optimizer"},
		StateBytesPerParam: 0, StateDtype: "param", Impl: "fused",
		Note: "torchao.optim.CPUOffloadOptimizer(optimizer_class=torch.optim.AdamW): fused CPU AdamW on pinned host copies of each parameter and its gradient, states in the param dtype on the host; tensors under 4096 elements keep a GPU AdamW; single GPU only (torchao/optim/cpu_offload.py @v0.13.0)"},
		kind: optCPUOffload, states: 2},
	{info: OptimizerInfo{Name: "cpu_offload_adamw_offload_gradients", Aliases: []string{"torchao_cpu_offload_gradients", "cpu_offload_optimizer_offload_gradients"},
		StateBytesPerParam: 0, StateDtype: "param", Impl: "fused",
		Note: "torchao.optim.CPUOffloadOptimizer(..., offload_gradients=True): as cpu_offload_adamw, and each GPU gradient is freed once its copy to the host is queued (post-accumulate-grad hook); not compatible with gradient accumulation"},
		kind: optCPUOffload, states: 2, offloadGrads: true},
}

// torchaoOldBlocks are the torchao entries of optimizerTable as torchao
// before 0.6.0 built them (rule torchao-8bit-block-2048), by name.
var torchaoOldBlocks = func() map[string]*optimizerSpec {
	out := map[string]*optimizerSpec{}
	for i := range optimizerTable {
		if o := optimizerTable[i]; o.kind == optTorchao && o.block == torchao8Block {
			o.block = torchao8OldBlock
			o.info.StateBytesPerParam = 2 * (o.codeBytes + 4/o.block)
			out[o.info.Name] = &o
		}
	}
	return out
}()

// torchaoOldBlock returns o as torchao before 0.6.0 built it.
func torchaoOldBlock(o *optimizerSpec) *optimizerSpec {
	if old, ok := torchaoOldBlocks[o.info.Name]; ok {
		return old
	}
	return o
}

// torchaoSpec builds a torchao low-bit AdamW: two quantized states of
// codeBytes per element, one fp32 scale per block and a map of qmap fp32
// entries per state tensor.
func optTorchaoSpec(name string, codeBytes, block, qmap float64, dtype, note string, aliases ...string) optimizerSpec {
	return optimizerSpec{kind: optTorchao, states: 2, codeBytes: codeBytes, block: block, qmap: qmap, info: OptimizerInfo{
		Name: name, Aliases: aliases, StateBytesPerParam: 2 * (codeBytes + 4/block), StateDtype: dtype, Impl: "fused", Note: note}}
}

// dense builds a torch-style optimizer with states full-size tensors in the param dtype.
func optDenseSpec(name string, states float64, impl, note string, aliases ...string) optimizerSpec {
	return optimizerSpec{kind: optDense, states: states, info: OptimizerInfo{
		Name: name, Aliases: aliases, StateBytesPerParam: 4 * states, StateDtype: "param", Impl: impl, Note: note}}
}

// dense32 builds a bitsandbytes 32-bit optimizer (fp32 states always).
func optDense32Spec(name string, states float64, paged bool, note string, aliases ...string) optimizerSpec {
	return optimizerSpec{kind: optDense, states: states, fp32: true, info: OptimizerInfo{
		Name: name, Aliases: aliases, StateBytesPerParam: 4 * states, StateDtype: "fp32", Impl: "fused", Paged: paged, Note: note}}
}

// bnb8 builds a bitsandbytes blockwise 8-bit optimizer.
func optBnb8Spec(name string, states float64, paged bool, note string, aliases ...string) optimizerSpec {
	return optimizerSpec{kind: optBnb8bit, states: states, hfEmbedding32: true, info: OptimizerInfo{
		Name: name, Aliases: aliases, StateBytesPerParam: states * (1 + 4.0/bnb8BlockSize), StateDtype: "8bit", Impl: "fused", Paged: paged, Note: note}}
}

// bitsandbytes 8-bit optimizer constants (bitsandbytes-foundation/
// bitsandbytes:bitsandbytes/optim/optimizer.py Optimizer2State.init_state:
// block 256 since 0.44.0, tensors below min_8bit_size keep fp32 states).
const (
	bnb8BlockSize  = 256
	bnb8MinSize    = 4096
	galoreRank     = 128  // GaLore paper default rank for 7B runs (arXiv:2403.03507 §5)
	apolloRank     = 256  // APOLLO default rank (arXiv:2412.05270)
	shampooMaxDim  = 1024 // Distributed Shampoo max_preconditioner_dim default
	adamMiniBlocks = 1    // Adam-mini: one v per output row of a matrix (neuron/head granularity)

	// torchao low-bit optimizer blocks (torchao/optim/adam.py @v0.13.0:
	// AdamW8bit and AdamWFp8 block_size 256 since 0.6.0, PR #927 (2048
	// before), AdamW4bit 128); tensors below torchaoMinSize elements keep
	// plain states ("follow bitsandbytes, only quantize tensors >= 4096
	// values"), as do CPUOffloadOptimizer's on the GPU (minimal_size).
	torchao8Block    = 256
	torchao8OldBlock = 2048
	torchao4Block    = 128
	torchaoMinSize   = 4096
)

// Optimizers lists the optimizers the training model accepts.
func Optimizers() []OptimizerInfo {
	out := make([]OptimizerInfo, len(optimizerTable))
	for i := range optimizerTable {
		out[i] = optimizerTable[i].info
	}
	return out
}

// lookupOptimizer finds an optimizer by name or alias ("" = adamw_torch,
// the default of Job.Optimizer). Matching ignores case and treats "-" and
// "_" alike.
func lookupOptimizer(name string) (*optimizerSpec, error) {
	if name == "" {
		return defaultOptimizer, nil
	}
	// Canonical names as given first: no canonical name matches another
	// optimizer's name or alias, and none has surrounding blanks, so this
	// finds what the scan below would.
	for i := range optimizerTable {
		if o := &optimizerTable[i]; o.info.Name == name {
			return o, nil
		}
	}
	n := strings.TrimSpace(name)
	if n == "" {
		return defaultOptimizer, nil
	}
	for i := range optimizerTable {
		o := &optimizerTable[i]
		if optNameEq(n, o.info.Name) {
			return o, nil
		}
		for _, a := range o.info.Aliases {
			if optNameEq(n, a) {
				return o, nil
			}
		}
	}
	return nil, FieldErrorf("optimizer", "optimizer: unknown optimizer %q (see gpumem optimizers for the accepted names)", name)
}

// defaultOptimizer is the optimizer of a job that names none
// (Job.Optimizer ""): torch.optim.AdamW, the HF Trainer's default optim
// adamw_torch, first in optimizerTable (TestDefaultOptimizer checks it).
var defaultOptimizer = &optimizerTable[0]

// optNameEq compares optimizer names ignoring case and -/_ differences.
func optNameEq(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := lower(a[i]), lower(b[i])
		if x == '-' {
			x = '_'
		}
		if y == '-' {
			y = '_'
		}
		if x != y {
			return false
		}
	}
	return true
}

// lower lower-cases an ASCII letter.
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// LookupOptimizer returns the optimizer named by a Hugging Face `optim`
// value, a short name or an alias (case-insensitive, "-" and "_" alike;
// "" is the default adamw_torch).
func LookupOptimizer(name string) (OptimizerInfo, error) {
	o, err := lookupOptimizer(name)
	if err != nil {
		return OptimizerInfo{}, err
	}
	return o.info, nil
}
