package memory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpumem/gpumem/model"
)

// PEFT methods beyond LoRA (Job.PEFTVariant). Each one's trainable
// tensors and saved activations come from its layer in
// huggingface/peft src/peft/tuners/<method>/layer.py (and model.py for
// the prompt-learning methods) at tag v0.18.0, the default PEFT of the
// stack (MODEL.md §6.1).
const (
	VariantLoRA         = "lora"          // LoRA (arXiv:2106.09685): A r×in, B out×r
	VariantDoRA         = "dora"          // DoRA (arXiv:2402.09353): LoRA + a magnitude vector
	VariantLoRAFA       = "lora-fa"       // LoRA-FA (arXiv:2308.03303): A frozen, B trains
	VariantAdaLoRA      = "adalora"       // AdaLoRA (arXiv:2303.10512): SVD-shaped LoRA at init_r, pruned by masking
	VariantIA3          = "ia3"           // (IA)³ (arXiv:2205.05638): one scaling vector per module
	VariantLoHa         = "loha"          // LoHa (FedPara arXiv:2108.06098): Hadamard product of two low-rank pairs
	VariantLoKr         = "lokr"          // LoKr (LyCORIS): Kronecker product of two factors
	VariantOFT          = "oft"           // OFT (arXiv:2306.07280): block-diagonal orthogonal rotation of the input
	VariantBOFT         = "boft"          // BOFT (arXiv:2311.06243): butterfly-factorised orthogonal rotation of the weight
	VariantVeRA         = "vera"          // VeRA (arXiv:2310.11454): frozen shared random A/B, trainable scaling vectors
	VariantPrefixTuning = "prefix-tuning" // prefix tuning (arXiv:2101.00190): trainable key/value prefixes in every layer
	VariantPromptTuning = "prompt-tuning" // prompt tuning (arXiv:2104.08691): trainable input embeddings prepended
	VariantPTuning      = "p-tuning"      // P-tuning (arXiv:2103.10385): prepended embeddings from an MLP prompt encoder
)

// peftVariants lists the --peft-variant values in the order the errors
// name them.
var peftVariants = []string{VariantLoRA, VariantDoRA, VariantLoRAFA, VariantAdaLoRA, VariantIA3, VariantLoHa, VariantLoKr,
	VariantOFT, VariantBOFT, VariantVeRA, VariantPrefixTuning, VariantPromptTuning, VariantPTuning}

// PEFTVariants returns the PEFT methods Job.PEFTVariant takes.
func PEFTVariants() []string { return slices.Clone(peftVariants) }

// parsePEFTVariant reads a --peft-variant spelling: the names above,
// PEFT's peft_type values (IA3, LOHA, PREFIX_TUNING, ...) and
// underscores for hyphens, in any case. "" and qlora are LoRA.
func parsePEFTVariant(v string) (string, bool) {
	k := strings.ReplaceAll(fold(v), "_", "-")
	switch k {
	case "", "lora", "qlora":
		return VariantLoRA, true
	case "lorafa":
		return VariantLoRAFA, true
	case "prefixtuning":
		return VariantPrefixTuning, true
	case "prompttuning":
		return VariantPromptTuning, true
	case "ptuning", "prompt-encoder":
		return VariantPTuning, true
	case "(ia)3", "ia³":
		return VariantIA3, true
	}
	if slices.Contains(peftVariants, k) {
		return k, true
	}
	return "", false
}

// promptLearning reports whether the variant trains virtual tokens
// instead of wrapping Linears.
func promptLearning(variant string) bool {
	return variant == VariantPrefixTuning || variant == VariantPromptTuning || variant == VariantPTuning
}

// loraFamily reports whether the variant's adapters are LoRA's A and B
// (loraAct models their activations).
func loraFamily(variant string) bool {
	switch variant {
	case "", VariantLoRA, VariantDoRA, VariantLoRAFA, VariantAdaLoRA:
		return true
	}
	return false
}

// peftDefaultRank is the rank a variant's PEFT config defaults to, used
// when the job gives none: LoHaConfig and LoKrConfig r = 8,
// AdaLoraConfig init_r = 12 (the rank its tensors are built with;
// target_r only masks), VeraConfig r = 256 (peft/tuners/*/config.py
// @v0.18.0). LoRA keeps gpumem's documented 16 (defaultLoRARank); OFT
// and BOFT are sized by block (oft_block_size 32, boft_block_size 4).
func peftDefaultRank(variant string) (int, bool) {
	switch variant {
	case VariantLoHa, VariantLoKr:
		return 8, true
	case VariantAdaLoRA:
		return 12, true
	case VariantVeRA:
		return 256, true
	}
	return 0, false
}

// PEFT config defaults of the block-shaped methods (peft/tuners/oft/
// config.py, boft/config.py @v0.18.0).
const (
	defaultOFTBlockSize   = 32
	defaultBOFTBlockSize  = 4
	defaultBOFTButterfly  = 1
	defaultDecomposeLoKr  = -1
	adaloraAllocatorState = 3 // RankAllocator ipt, exp_avg_ipt, exp_avg_unc: zeros_like each adapter parameter
)

// ia3TargetModules and ia3FeedforwardModules are PEFT's IA3 defaults by
// model_type (peft/utils/constants.py @v0.18.0,
// TRANSFORMERS_MODELS_TO_IA3_TARGET_MODULES_MAPPING and
// TRANSFORMERS_MODELS_TO_IA3_FEEDFORWARD_MODULES_MAPPING): the
// feedforward modules scale their input, the others their output.
var ia3TargetModules = map[string][]string{
	"t5": {"k", "v", "wo"}, "mt5": {"k", "v", "wi_1"}, "gpt2": {"c_attn", "mlp.c_proj"},
	"bloom": {"query_key_value", "mlp.dense_4h_to_h"}, "roberta": {"key", "value", "output.dense"},
	"opt": {"q_proj", "k_proj", "fc2"}, "gptj": {"q_proj", "v_proj", "fc_out"},
	"gpt_neox": {"query_key_value", "dense_4h_to_h"}, "gpt_neo": {"q_proj", "v_proj", "c_proj"},
	"bart": {"q_proj", "v_proj", "fc2"}, "gpt_bigcode": {"c_attn", "mlp.c_proj"},
	"llama": {"k_proj", "v_proj", "down_proj"}, "llama4": {"q_proj", "v_proj", "down_proj"},
	"mistral": {"k_proj", "v_proj", "down_proj"}, "mixtral": {"k_proj", "v_proj", "w2"},
	"bert": {"key", "value", "output.dense"}, "deberta-v2": {"key_proj", "value_proj", "output.dense"},
	"deberta": {"in_proj", "output.dense"}, "RefinedWebModel": {"query_key_value", "dense_4h_to_h"},
	"RefinedWeb": {"query_key_value", "dense_4h_to_h"}, "falcon": {"query_key_value", "dense_4h_to_h"},
	"phi": {"q_proj", "v_proj", "fc2"}, "gemma": {"q_proj", "v_proj", "down_proj"},
	"gemma2": {"q_proj", "v_proj", "down_proj"}, "gemma3_text": {"q_proj", "v_proj", "down_proj"},
	"qwen2": {"q_proj", "v_proj", "down_proj"}, "qwen3": {"q_proj", "v_proj", "down_proj"},
}

var ia3FeedforwardModules = map[string][]string{
	"t5": {"wo"}, "mt5": {}, "gpt2": {"mlp.c_proj"}, "bloom": {"mlp.dense_4h_to_h"}, "roberta": {"output.dense"},
	"opt": {"fc2"}, "gptj": {"fc_out"}, "gpt_neox": {"dense_4h_to_h"}, "gpt_neo": {"c_proj"}, "bart": {"fc2"},
	"gpt_bigcode": {"mlp.c_proj"}, "llama": {"down_proj"}, "llama4": {"down_proj"}, "mistral": {"down_proj"},
	"mixtral": {"w2"}, "bert": {"output.dense"}, "deberta-v2": {"output.dense"}, "deberta": {"output.dense"},
	"RefinedWeb": {"dense_4h_to_h"}, "RefinedWebModel": {"dense_4h_to_h"}, "falcon": {"dense_4h_to_h"},
	"phi": {"fc2"}, "gemma": {"down_proj"}, "gemma2": {"down_proj"}, "gemma3_text": {"down_proj"},
	"qwen2": {"down_proj"}, "qwen3": {"down_proj"},
}

// resolvePEFT reads the knobs of the PEFT method into l once the method
// is known: defaults (stated in warnings where they differ from LoRA's),
// the stack's PEFT version, quantized bases, and the method's own
// options. It runs before the targets are matched.
func (s *setup) resolvePEFT(l *loraSpec) error {
	j := s.job
	v := l.variant
	if err := s.checkPEFTVersion(v); err != nil {
		return err
	}
	if s.method == MethodQLoRA {
		switch v {
		case VariantLoHa, VariantLoKr, VariantBOFT:
			// No bnb.py in peft/tuners/{loha,lokr,boft}: they would wrap a
			// Linear4bit as nn.Linear over its packed data.
			return FieldErrorf("peft_variant", "{peft_variant=%s} on a 4-bit base: PEFT has no bitsandbytes layer for %s (peft/tuners/%s has no bnb.py); use {method=lora} on a bf16 base", v, v, v)
		}
	}
	if j.LoRARank == 0 {
		if r, ok := peftDefaultRank(v); ok {
			l.rank = r
			s.warn(fmt.Sprintf("lora_rank not given: %s is built with r %d, its PEFT config's default", v, r))
		}
	}
	if j.NumVirtualTokens < 0 || j.OFTBlockSize < 0 || j.BOFTBlockSize < 0 || j.BOFTBlockNum < 0 ||
		j.BOFTButterflyFactor < 0 || j.EncoderHiddenSize < 0 {
		return s.negativePEFTKnob()
	}
	switch v {
	case VariantIA3:
		return s.resolveIA3(l)
	case VariantLoKr:
		l.lokrFactor, l.lokrBoth = j.DecomposeFactor, j.DecomposeBoth
		if l.lokrFactor == 0 {
			l.lokrFactor = defaultDecomposeLoKr
		}
		if l.lokrFactor < -1 {
			return FieldErrorf("decompose_factor", "{decompose_factor}: want a positive factor or -1 (near the square root), got %d", j.DecomposeFactor)
		}
	case VariantOFT:
		switch {
		case j.LoRARank != 0 && j.OFTBlockSize != 0:
			return FieldErrorf("oft_block_size", "{oft_block_size=%d} with {lora_rank=%d}: OFT takes either r (blocks per module) or oft_block_size, not both (peft/tuners/oft/config.py)", j.OFTBlockSize, j.LoRARank)
		case j.LoRARank == 0:
			l.rank, l.oftBlock = 0, cmpOr(j.OFTBlockSize, defaultOFTBlockSize)
		}
	case VariantBOFT:
		if j.BOFTBlockSize != 0 && j.BOFTBlockNum != 0 {
			return FieldErrorf("boft_block_size", "{boft_block_size=%d} with {boft_block_num=%d}: BOFT takes one of them (peft/tuners/boft/config.py)", j.BOFTBlockSize, j.BOFTBlockNum)
		}
		l.boftBlock, l.boftNum = j.BOFTBlockSize, j.BOFTBlockNum
		if l.boftBlock == 0 && l.boftNum == 0 {
			l.boftBlock = defaultBOFTBlockSize
		}
		l.boftFactor = cmpOr(j.BOFTButterflyFactor, defaultBOFTButterfly)
		if l.boftFactor > 1 {
			s.warn(fmt.Sprintf("boft_n_butterfly_factor=%d: counted as given; PEFT falls back to 1 when its fbd_cuda extension cannot be built (peft/tuners/boft/layer.py update_layer)", l.boftFactor))
		}
	case VariantPrefixTuning, VariantPromptTuning, VariantPTuning:
		return s.resolvePrompt(l)
	}
	if !promptLearning(v) && (j.NumVirtualTokens != 0 || j.PrefixProjection || j.EncoderHiddenSize != 0) {
		s.warn(fmt.Sprintf("num_virtual_tokens/prefix_projection/encoder_hidden_size apply to prompt-learning methods; %s ignores them", v))
	}
	return nil
}

// negativePEFTKnob is the error naming the first negative PEFT option.
func (s *setup) negativePEFTKnob() error {
	j := s.job
	for _, k := range []struct {
		key string
		n   int
	}{{"num_virtual_tokens", j.NumVirtualTokens}, {"oft_block_size", j.OFTBlockSize}, {"boft_block_size", j.BOFTBlockSize},
		{"boft_block_num", j.BOFTBlockNum}, {"boft_n_butterfly_factor", j.BOFTButterflyFactor}, {"encoder_hidden_size", j.EncoderHiddenSize}} {
		if k.n < 0 {
			return FieldErrorf(k.key, "{%s}: want a positive number, got %d", k.key, k.n)
		}
	}
	return nil
}

// checkPEFTVersion refuses a method the stack's PEFT does not have, or
// has in a form gpumem does not model.
func (s *setup) checkPEFTVersion(v string) error {
	var rule ruleID
	switch v {
	case VariantIA3:
		rule = rulePEFTNoIA3
	case VariantLoHa, VariantLoKr:
		rule = rulePEFTNoLyCORIS
	case VariantOFT:
		rule = rulePEFTOFTv1
	case VariantBOFT, VariantVeRA:
		rule = rulePEFTNoBOFTVeRA
	default:
		return nil
	}
	if s.rules.has(rule) {
		r := &rules[rule]
		return FieldErrorf("stack", "{peft_variant=%s}: %s (rule %s); state PEFT %s or later in the {stack}", v, r.Effect, r.Name, r.Before)
	}
	return nil
}

// resolveIA3 sets the IA3 feedforward modules: the job's, or PEFT's
// default for the model type; without targets, PEFT's default targets.
func (s *setup) resolveIA3(l *loraSpec) error {
	mt := s.m.ModelType
	if len(s.job.LoRATargets) == 0 {
		t, ok := ia3TargetModules[mt]
		if !ok {
			return FieldErrorf("lora_target_modules", "{peft_variant=ia3}: PEFT has no default IA3 target modules for model_type %q (peft/utils/constants.py); give {lora_target_modules} and {feedforward_modules}", mt)
		}
		l.targets = t
	}
	l.ff = foldAll(s.job.FeedforwardModules)
	if len(l.ff) == 0 {
		ff, ok := ia3FeedforwardModules[mt]
		if !ok && len(s.job.LoRATargets) > 0 {
			s.warn(fmt.Sprintf("feedforward_modules not given and PEFT has no default for model_type %q: every IA3 module scales its output", mt))
		}
		l.ff = ff
	}
	return nil
}

// isFeedforward reports whether an IA3 module scales its input: its
// short name or a dotted suffix of its name is among the feedforward
// modules (PEFT's check_target_module_exists on feedforward_modules).
func (l *loraSpec) isFeedforward(short, lname string) bool {
	for _, f := range l.ff {
		if f == short || dottedSuffix(lname, f) || f == lname {
			return true
		}
	}
	return false
}

// resolvePrompt checks the prompt-learning options: the number of
// virtual tokens is required (PromptLearningConfig num_virtual_tokens
// has no default), the methods are modelled for decoder-only models
// (num_transformer_submodules 1), and they wrap no Linear.
func (s *setup) resolvePrompt(l *loraSpec) error {
	j := s.job
	if j.NumVirtualTokens == 0 {
		return FieldErrorf("num_virtual_tokens", "{peft_variant=%s}: give {num_virtual_tokens} (PEFT's PromptLearningConfig has no default)", l.variant)
	}
	if s.m.Encoder != nil || !s.m.Text.Causal {
		return FieldErrorf("peft_variant", "{peft_variant=%s}: prompt learning is modelled for decoder-only models (num_transformer_submodules 1); %s is not one", l.variant, s.m.ID)
	}
	if len(j.LoRATargets) > 0 {
		s.warn(fmt.Sprintf("lora_target_modules: %s wraps no module; ignored", l.variant))
	}
	if j.PrefixProjection && l.variant != VariantPrefixTuning {
		s.warn(fmt.Sprintf("prefix_projection applies to prefix-tuning; %s ignores it", l.variant))
	}
	l.virtual, l.prefixProj, l.encHidden = j.NumVirtualTokens, j.PrefixProjection, j.EncoderHiddenSize
	return nil
}

// promptTokens is the number of virtual tokens prompt tuning and
// P-tuning prepend to every sample (PeftModelForCausalLM.forward
// concatenates them with inputs_embeds and pads labels with -100 over
// them, so every layer and the logits see s + n positions); 0 otherwise.
func (s *setup) promptTokens() int {
	if (s.method == MethodLoRA || s.method == MethodQLoRA) && (s.lora.variant == VariantPromptTuning || s.lora.variant == VariantPTuning) {
		return s.lora.virtual
	}
	return 0
}

// prefixTokens is the number of key/value positions prefix tuning adds in
// front of every layer's keys and values (past_key_values); 0 otherwise.
func (s *setup) prefixTokens() int {
	if (s.method == MethodLoRA || s.method == MethodQLoRA) && s.lora.variant == VariantPrefixTuning {
		return s.lora.virtual
	}
	return 0
}

// prefixTokenDim is prefix tuning's token_dim: the model's key/value
// width, as PEFT's _prepare_prompt_learning_config sets it for
// grouped-query attention (head_dim × num_key_value_heads; peft/utils/
// other.py @v0.18.0, PR #1901), which is the hidden size for full
// multi-head attention.
func (s *setup) prefixTokenDim() float64 {
	st := &s.m.Text
	return float64(st.KVHeads) * float64(st.HeadDim)
}

// forEachPromptTensor calls fn with the trainable tensors of the
// prompt-learning methods (peft/tuners/{prefix_tuning,prompt_tuning,
// p_tuning}/model.py @v0.18.0), token_dim d, n virtual tokens, L layers:
//
//   - prefix tuning: an Embedding(n, L·2·d); with prefix_projection an
//     Embedding(n, d) and Linear(d, H) + Tanh + Linear(H, L·2·d), H =
//     encoder_hidden_size (default d);
//   - prompt tuning: an Embedding(n, h);
//   - P-tuning (MLP encoder): an Embedding(n, h) and Linear(h, H), ReLU,
//     Linear(H, H), ReLU, Linear(H, h), all with biases.
func (s *setup) forEachPromptTensor(fn func(tensorGroup)) {
	l := &s.lora
	n := float64(l.virtual)
	h := float64(s.m.Text.Hidden)
	L := float64(s.m.Text.Layers)
	lin := func(in, out float64) {
		fn(tensorGroup{count: 1, rows: out, cols: in, adapter: true, matrix: true})
		fn(tensorGroup{count: 1, rows: out, adapter: true})
	}
	switch l.variant {
	case VariantPrefixTuning:
		d := s.prefixTokenDim()
		if !l.prefixProj {
			fn(tensorGroup{count: 1, rows: n, cols: L * 2 * d, adapter: true, embedding: true})
			return
		}
		H := float64(cmpOr(l.encHidden, int(d)))
		fn(tensorGroup{count: 1, rows: n, cols: d, adapter: true, embedding: true})
		lin(d, H)
		lin(H, L*2*d)
	case VariantPromptTuning:
		fn(tensorGroup{count: 1, rows: n, cols: h, adapter: true, embedding: true})
	case VariantPTuning:
		H := float64(cmpOr(l.encHidden, int(h)))
		fn(tensorGroup{count: 1, rows: n, cols: h, adapter: true, embedding: true})
		lin(h, H)
		lin(H, H)
		lin(H, h)
	}
}

// lokrShapes are LoKr's factor shapes for a Linear in → out with rank r
// (peft/tuners/lokr/layer.py update_layer, create_adapter_parameters
// @v0.18.0): out = a·b and in = c·d split by factorization; w1 (a×c) is
// kept whole unless decompose_both and r < max(a, c)/2 split it into
// a×r and r×c; w2 (b×d) is kept whole unless r < max(b, d)/2 splits it
// into b×r and r×d.
func lokrShapes(in, out, r, factor int, both bool) (a, b, c, d int, splitW1, splitW2 bool) {
	a, b = lokrFactorization(out, factor)
	c, d = lokrFactorization(in, factor)
	splitW1 = both && float64(r) < float64(max(a, c))/2
	splitW2 = float64(r) < float64(max(b, d))/2
	return a, b, c, d, splitW1, splitW2
}

// lokrFactorization splits dimension into m ≤ n with m·n = dimension as
// PEFT's factorization does (peft/tuners/lokr/layer.py @v0.18.0): factor
// itself when it divides, else the divisor pair nearest the square root
// whose smaller part stays at most factor (-1: no bound), smaller first.
func lokrFactorization(dimension, factor int) (int, int) {
	if factor > 0 && dimension%factor == 0 {
		return factor, dimension / factor
	}
	if factor == -1 {
		factor = dimension
	}
	m, n := 1, dimension
	length := m + n
	for m < n {
		nm := m + 1
		for dimension%nm != 0 {
			nm++
		}
		nn := dimension / nm
		if nm+nn > length || nm > factor {
			break
		}
		m, n = nm, nn
	}
	if m > n {
		m, n = n, m
	}
	return m, n
}

// oftBlocks is OFT's block count and size for a module of in features
// (peft/tuners/oft/layer.py update_layer @v0.18.0): r blocks of in/r, or
// blocks of oft_block_size, either adjusted to the nearest divisor of in
// as adjust_oft_parameters does.
func oftBlocks(in, r, block int) (blocks, size int) {
	if r == 0 {
		if in%block != 0 || block > in {
			block = adjustOFT(in, block)
		}
		return in / block, block
	}
	if in%r != 0 || r > in {
		r = adjustOFT(in, r)
	}
	return r, in / r
}

// adjustOFT is PEFT's adjust_oft_parameters: the divisor of in nearest
// to params (the lower one on a tie).
func adjustOFT(in, params int) int {
	if params >= in {
		return in
	}
	higher := params
	for higher <= in && in%higher != 0 {
		higher++
	}
	lower := params
	for lower > 1 && in%lower != 0 {
		lower--
	}
	if params-lower <= higher-params {
		return lower
	}
	return higher
}

// boftBlocks is BOFT's block count and size for a module of in features
// and its checks (peft/tuners/boft/layer.py update_layer @v0.18.0).
func boftBlocks(in, size, num, factor int) (blocks, bsize int, err error) {
	f := factor - 1
	if f < 0 || f > 30 || (f > 0 && in < 1<<f) {
		return 0, 0, fmt.Errorf("boft_n_butterfly_factor %d does not fit in_features %d", factor, in)
	}
	switch {
	case size == 0:
		if num <= 0 || in%num != 0 {
			return 0, 0, fmt.Errorf("in_features (%d) must be divisible by boft_block_num (%d)", in, num)
		}
		if f > 0 && num < 1<<f {
			return 0, 0, fmt.Errorf("boft_n_butterfly_factor %d needs boft_block_num of at least 2^%d (got %d)", factor, f, num)
		}
		if f > 0 && num%(1<<f) != 0 {
			return 0, 0, fmt.Errorf("boft_block_num (%d) must be a multiple of 2 to the power of boft_n_butterfly_factor - 1 (%d)", num, f)
		}
		size = in / num
	default:
		if size <= 0 || in%size != 0 {
			return 0, 0, fmt.Errorf("in_features (%d) must be divisible by boft_block_size (%d)", in, size)
		}
		if f > 0 && (size<<f > in || in%(size<<f) != 0) {
			return 0, 0, fmt.Errorf("in_features (%d) must be divisible by boft_block_size × 2^(boft_n_butterfly_factor - 1) (%d)", in, size<<f)
		}
		num = in / size
	}
	if f > 0 && (num%2 != 0 || size%2 != 0) {
		return 0, 0, fmt.Errorf("boft_block_num (%d) and boft_block_size (%d) must be even with a butterfly factor above 1", num, size)
	}
	return num, size, nil
}

// checkPEFTShapes checks each adapted module against the method's shape
// rules (the rank against LoRA's matrices, BOFT's block divisibility)
// and records VeRA's shared projection sizes.
func (s *setup) checkPEFTShapes(mod *model.Module, in, out int) error {
	l := &s.lora
	switch l.variant {
	case VariantLoRA, VariantDoRA, VariantLoRAFA, VariantAdaLoRA:
		if l.rank > min(in, out) {
			return FieldErrorf("lora_rank", "{lora_rank=%d} is larger than module %s (%d→%d); want a rank <= %d", l.rank, mod.Name, in, out, min(in, out))
		}
	case VariantBOFT:
		if _, _, err := boftBlocks(in, l.boftBlock, l.boftNum, l.boftFactor); err != nil {
			return FieldErrorf("boft_block_size", "{peft_variant=boft} on %s: %v", mod.Name, err)
		}
	case VariantVeRA:
		l.veraIn, l.veraOut = max(l.veraIn, in), max(l.veraOut, out)
	}
	return nil
}

// forEachPEFTTensor calls fn with the trainable tensors of one adapted
// module of n instances, in → out, for the methods beyond LoRA
// (peft/tuners/<method>/layer.py update_layer @v0.18.0):
//
//   - AdaLoRA (SVDLinear): lora_A r×in, lora_E r×1, lora_B out×r;
//   - IA3: ia3_l of in (feedforward modules, which scale the input) or
//     out (the others, which scale the output);
//   - LoHa: hada_w1_a, hada_w2_a out×r and hada_w1_b, hada_w2_b r×in;
//   - LoKr: w1 and w2 whole or split (lokrShapes);
//   - OFT: oft_R.weight, blocks × b(b−1)/2 (the skew-symmetric halves);
//   - BOFT: boft_R, factor × blocks × b × b, and boft_s of out;
//   - VeRA: vera_lambda_b of out and vera_lambda_d of r.
func (s *setup) forEachPEFTTensor(h loraHit, n float64, fn func(tensorGroup)) {
	l := &s.lora
	r := float64(l.rank)
	in, out := float64(h.in), float64(h.out)
	mat := func(rows, cols float64) {
		fn(tensorGroup{count: n, rows: rows, cols: cols, adapter: true, matrix: true})
	}
	vec := func(rows float64) { fn(tensorGroup{count: n, rows: rows, adapter: true}) }
	switch l.variant {
	case VariantAdaLoRA:
		mat(r, in)
		vec(r)
		mat(out, r)
	case VariantIA3:
		rows := s.tab.named(s.m)
		if l.isFeedforward(rows[h.mod].short, rows[h.mod].lname) {
			vec(in)
		} else {
			vec(out)
		}
	case VariantLoHa:
		mat(out, r)
		mat(r, in)
		mat(out, r)
		mat(r, in)
	case VariantLoKr:
		a, b, c, d, s1, s2 := lokrShapes(h.in, h.out, l.rank, l.lokrFactor, l.lokrBoth)
		if s1 {
			mat(float64(a), r)
			mat(r, float64(c))
		} else {
			mat(float64(a), float64(c))
		}
		if s2 {
			mat(float64(b), r)
			mat(r, float64(d))
		} else {
			mat(float64(b), float64(d))
		}
	case VariantOFT:
		blocks, size := oftBlocks(h.in, l.rank, l.oftBlock)
		mat(float64(blocks), float64(size*(size-1)/2))
	case VariantBOFT:
		blocks, size, _ := boftBlocks(h.in, l.boftBlock, l.boftNum, l.boftFactor)
		mat(float64(l.boftFactor*blocks*size), float64(size))
		vec(out)
	case VariantVeRA:
		vec(out)
		vec(r)
	}
}

// frozenAdapterParams counts adapter parameters held on the GPU in the
// adapter dtype without gradients or optimizer states: LoRA-FA's frozen
// A matrices, and VeRA's shared random projections vera_A (r × the
// widest input) and vera_B (the widest output × r), one pair for the
// whole model (peft/tuners/vera/model.py _init_vera_A_vera_B @v0.18.0;
// BufferDicts that cast_adapter_dtype upcasts to fp32 like the
// adapters).
func (s *setup) frozenAdapterParams() float64 {
	l := &s.lora
	r := float64(l.rank)
	switch l.variant {
	case VariantLoRAFA:
		var n float64
		s.forEachTarget(func(mod *model.Module, in, _ int, _ string) {
			n += float64(mod.Instances) * r * float64(in)
		})
		return n
	case VariantVeRA:
		return r * float64(l.veraIn+l.veraOut)
	}
	return 0
}

// adapterStateBytes is what a method keeps per trainable adapter
// parameter beyond the optimizer: AdaLoRA's RankAllocator holds ipt,
// exp_avg_ipt and exp_avg_unc, each zeros_like the parameter, from its
// first update_and_allocate (peft/tuners/adalora/layer.py
// RankAllocator.update_ipt @v0.18.0).
func (s *setup) adapterStateBytes(adapters float64) float64 {
	if (s.method == MethodLoRA || s.method == MethodQLoRA) && s.lora.variant == VariantAdaLoRA {
		return adaloraAllocatorState * adapters * s.adapter.BytesPerElement()
	}
	return 0
}

// addPEFTGeometry adds one adapted module of a text layer, reading input
// group grp, to the per-group sums peftAct reads.
func (s *setup) addPEFTGeometry(grp int, short, lname string, in, out int) {
	l := &s.lora
	g := &l.perLayer
	fi, fo := float64(in), float64(out)
	g.in[grp] += fi
	g.out[grp] += fo
	g.w[grp] += fi * fo
	g.mods[grp]++
	g.ranks[grp] += float64(l.rank)
	g.maxW = max(g.maxW, fi*fo)
	switch l.variant {
	case VariantIA3:
		if l.isFeedforward(short, lname) {
			g.ffIn[grp] += fi
		} else {
			g.ffOut[grp] += fo
		}
	case VariantOFT:
		blocks, size := oftBlocks(in, l.rank, l.oftBlock)
		g.rot[grp] += float64(blocks) * float64(size) * float64(size)
	case VariantBOFT:
		g.sq[grp] += float64(l.boftFactor+1) * fi * fi
	}
}

// peftAct is what the adapters of one layer add to the frozen inventory
// for the PEFT methods beyond LoRA, per token (attention and MLP block)
// and per layer whatever the tokens (fixed: weight-sized tensors), as
// each method's forward in peft/tuners/<method>/layer.py @v0.18.0 saves
// them. Autograd saves an operand only for the gradient of another
// operand that requires grad (a frozen Linear keeps no input), and a
// custom Function keeps what it stores in ctx:
//
//   - IA3: a feedforward module casts its input to the vector's dtype
//     and multiplies it, which keeps that input for the vector's gradient
//     (x.to(dtype) * ia3_scaling); the others multiply the base output,
//     which keeps the base output (result * ia3_scaling);
//   - LoHa, LoKr: the adapter builds the whole ΔW (HadaWeight, kron) and
//     runs F.linear(x cast to its dtype, ΔW), which keeps the cast input
//     (for ΔW's gradient) and ΔW (for the input's gradient): a
//     weight-sized tensor per module per layer;
//   - OFT: the input, cast to the adapter dtype, is rotated by the
//     block-diagonal Cayley transform (einsum "...rk,rkc->...rc"), which
//     keeps the cast input and the blocks; the frozen base then reads the
//     rotated input and keeps nothing;
//   - BOFT: the weight is rotated instead: the permutation matrices
//     boft_P (cast to the compute dtype each forward and kept by bmm), the
//     identity the rotation multiplies (kept by the matmul), the rotated
//     weight (kept for boft_s) and the scaled weight (kept by F.linear for
//     the input's gradient), plus the input itself for the rotation's;
//   - VeRA: the frozen shared A and B keep no input; lambda_d keeps the
//     r-wide x·Aᵀ and lambda_b the out-wide result, in the adapter dtype;
//     vera_dropout keeps its mask;
//   - prefix tuning: every layer's keys and values are n positions
//     longer (torch.cat with the past_key_values PEFT passes), and
//     attention keeps them: 2 × n × the saved K/V width per sample.
//
// An input an adapter reads in its own dtype is its own copy per module;
// in the compute dtype it is the tensor the layer computed, counted once
// per input group (as loraAct does). Under autocast, Linear, einsum and
// matmul make their own compute-dtype copies.
func peftAct(st *model.Stack, r *actRegime) (attn, mlp, fixed float64) {
	g := r.lora
	h := float64(st.Hidden)
	q := float64(st.Heads) * float64(st.HeadDim)
	f := float64(st.Intermediate)
	if st.MoE != nil && st.Intermediate == 0 {
		f = float64(st.MoE.ExpertFFN)
	}
	width := [numGroups]float64{h, q, h, f}
	// The dtype of each input group as the layer computes it: the norm
	// outputs are fp32 under autocast (HF RMSNorm multiplies its fp32
	// weight), the matmul outputs the compute dtype.
	xB := [numGroups]float64{r.c, r.c, r.c, r.c}
	if r.amp {
		xB[groupAttnIn], xB[groupMLPIn] = 4, 4
	}
	fl := r.flow(st)
	grad := [numGroups]bool{fl.attnIn, fl.attn, fl.mlp, fl.hid}
	a := r.adapterB
	var per [numGroups]float64
	shared := func(i int) float64 {
		if i == groupO && fl.attn {
			return 0 // the attention kernel keeps its output already
		}
		return xB[i] * width[i]
	}
	for i := range numGroups {
		if g.mods[i] == 0 {
			continue
		}
		// ab is the dtype a matmul of the adapter runs in: the adapter's,
		// or the compute dtype under autocast.
		ab := a
		if r.amp {
			ab = r.c
		}
		switch r.variant {
		case VariantIA3:
			if g.ffIn[i] > 0 {
				if a != xB[i] {
					per[i] += a * g.ffIn[i]
				} else {
					per[i] += shared(i)
				}
			}
			per[i] += r.c * g.ffOut[i]
		case VariantLoHa, VariantLoKr, VariantOFT:
			if r.amp || a != xB[i] {
				per[i] += ab * g.in[i]
			} else {
				per[i] += shared(i)
			}
			switch {
			case r.variant == VariantOFT:
				fixed += ab * g.rot[i]
			case grad[i]:
				fixed += ab * g.w[i]
			}
		case VariantBOFT:
			// x.to(base weight dtype): the compute dtype unless under AMP,
			// where F.linear's autocast makes a copy per module.
			if r.amp {
				per[i] += r.c * g.in[i]
			} else {
				per[i] += shared(i)
			}
			fixed += r.c * (g.sq[i] + g.w[i])
			if grad[i] {
				fixed += r.c * g.w[i]
			}
		case VariantVeRA:
			per[i] += ab * (g.ranks[i] + g.out[i])
			if r.dropout > 0 && grad[i] {
				per[i] += g.in[i] // one mask byte per element
			}
		}
	}
	attn = per[groupAttnIn] + per[groupO]
	mlp = per[groupMLPIn] + per[groupDown]
	if r.prefix > 0 {
		kv := float64(st.KVHeads) * float64(st.HeadDim)
		if r.gqaWide {
			kv = q
		}
		attn += r.c * 2 * kv * r.prefix
	}
	return attn, mlp, fixed
}

// peftBackwardTransient is what the backward of a layer of the
// weight-building methods adds: the gradient of the largest ΔW (LoHa,
// LoKr) or rotated weight (BOFT), a weight-sized tensor autograd
// materialises before the factors' gradients.
func (s *setup) peftBackwardTransient(r *actRegime) float64 {
	if r.lora == nil {
		return 0
	}
	switch r.variant {
	case VariantLoHa, VariantLoKr:
		b := r.adapterB
		if r.amp {
			b = r.c
		}
		return b * r.lora.maxW / max(r.tp, 1)
	case VariantBOFT:
		return r.c * r.lora.maxW / max(r.tp, 1)
	}
	return 0
}

// promptEncoderActs is what P-tuning's MLP prompt encoder keeps for
// backward over the b × n virtual tokens it encodes each step (the
// prompt is expanded to the batch before the encoder, peft_model.py
// get_prompt): the fp32 embedding output read by the first Linear, and
// each ReLU's output, read by the next Linear (torch keeps a ReLU's
// result for its backward); prefix projection keeps its embedding output
// and the Tanh output, of its widths.
func (s *setup) promptEncoderActs() float64 {
	if s.method != MethodLoRA && s.method != MethodQLoRA {
		return 0
	}
	l := &s.lora
	a := s.adapter.BytesPerElement()
	n := float64(s.batch) * float64(l.virtual)
	switch {
	case l.variant == VariantPTuning:
		h := float64(s.m.Text.Hidden)
		H := float64(cmpOr(l.encHidden, int(h)))
		return n * a * (h + 2*H)
	case l.variant == VariantPrefixTuning && l.prefixProj:
		d := s.prefixTokenDim()
		H := float64(cmpOr(l.encHidden, int(d)))
		return n * a * (d + H)
	}
	return 0
}

// peftNote names the job's PEFT method and its shape for explanations.
func (s *setup) peftNote() string {
	l := &s.lora
	switch {
	case promptLearning(l.variant):
		return fmt.Sprintf("%s, %d virtual tokens", l.variant, l.virtual)
	case l.variant == VariantIA3:
		return fmt.Sprintf("ia3, feedforward modules %s", strings.Join(l.ff, ","))
	case l.variant == VariantOFT && l.rank == 0:
		return fmt.Sprintf("oft, block size %d", l.oftBlock)
	case l.variant == VariantBOFT:
		return fmt.Sprintf("boft, block size %d / blocks %d, butterfly factor %d", l.boftBlock, l.boftNum, l.boftFactor)
	}
	return fmt.Sprintf("rank %d, variant %s", l.rank, l.variant)
}
