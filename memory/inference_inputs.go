package memory

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/model"
)

// defaultPromptLen is the prompt assumed when a job gives no length; a
// warning says so.
const defaultPromptLen = 2048

// inferenceInputs are the validated, defaulted inputs of an inference or
// serving job: everything the estimator reads from Job, resolved once.
type inferenceInputs struct {
	batch       int64
	prompt, gen int64            // text tokens of the prompt, tokens generated
	images      int64            // images per sequence (VLM)
	imageTokens int64            // LLM tokens the images add to the prompt, per sequence
	crossTokens int64            // tokens cross-attention layers attend to, per sequence
	imageShape  model.ImageShape // one image as the vision tower sees it
	kv          DType
	act         DType // compute dtype of activations
	bnbCompute  DType // bitsandbytes compute dtype of 4-bit matmuls
	attn        string
	engine      string
	tp, pp, ep  int
	plan        weightPlan
	legacyCache bool // transformers < 4.36 tuple cache (MODEL.md §15.2)
	fullLogits  bool // logits of every prompt position, upcast to fp32
	encoderOnly bool
	encDec      bool
	noKV        bool
	warnings    []string
	// quiet leaves the formulas and sources of the phase rows empty: the
	// pass that finds the peak stage and phase needs only their bytes,
	// and the peak phase is then built again with them (see explainPeak).
	quiet bool
}

// tokens is the self-attended sequence length at the end of generation.
func (in *inferenceInputs) tokens() int64 {
	if in.encDec {
		return in.gen + 1 // decoder start token + generated tokens
	}
	return in.prompt + in.imageTokens + in.gen
}

// cachedTokens is the cache length at the last generation step: the last
// generated token is sampled but never fed back, so gen new tokens take
// one prefill and gen − 1 decode forwards (huggingface/transformers:
// src/transformers/generation/utils.py, the sampling loop stops after
// appending the last token).
func (in *inferenceInputs) cachedTokens() int64 {
	return in.tokens() - min(in.gen, 1)
}

// prefillTokens is the sequence length of the first forward pass.
func (in *inferenceInputs) prefillTokens() int64 {
	if in.encDec {
		return 1
	}
	return in.prompt + in.imageTokens
}

// resolveInference validates job for model m and fills in defaults.
func resolveInference(m *model.Model, job Job) (*inferenceInputs, error) {
	if err := checkInferenceCounts(job); err != nil {
		return nil, err
	}
	in := &inferenceInputs{
		batch: int64(orInt(job.Batch, 1)),
		tp:    orInt(job.TP, 1), pp: orInt(job.PP, 1), ep: orInt(job.EP, 1),
		noKV:        job.NoKVCache,
		encoderOnly: !m.Text.Causal && m.Encoder == nil,
		encDec:      m.Encoder != nil,
	}
	rs, sw, err := jobRules(&job)
	if err != nil {
		return nil, err
	}
	in.warnings = append(in.warnings, sw...)
	if job.AllocConf != "" {
		if _, err := resolveAllocConf(&job, rs, false); err != nil {
			return nil, err
		}
		in.warnings = append(in.warnings, "alloc_conf: gpumem derives the caching allocator's share for training jobs; "+
			"inference and serving estimates keep the fragmentation_inference fraction")
	}
	in.legacyCache = rs.has(ruleTransformersTupleCache)
	in.fullLogits = in.legacyCache || rs.has(ruleTransformersFullLogits)
	plan, err := planWeights(m, job)
	if err != nil {
		return nil, err
	}
	in.plan, in.act = plan, plan.rest
	in.warnings = append(in.warnings, plan.warnings...)
	if in.kv, err = ParseKVCacheDtype(job.KVCacheDtype, in.act); err != nil {
		return nil, FieldErrorf("kv_cache_dtype", "{kv_cache_dtype}: %w", err)
	}
	if in.bnbCompute, err = bnbComputeDtype(m, job); err != nil {
		return nil, err
	}
	if in.attn, err = parseAttention(job.Attention); err != nil {
		return nil, err
	}
	if in.engine, err = parseEngine(job); err != nil {
		return nil, err
	}
	if in.engine == engineHF && plan.quant.Layout == LayoutGGUF {
		return nil, FieldErrorf("dtype", "{dtype=%s} is a llama.cpp file type, and transformers dequantizes GGUF weights when it loads them (to torch_dtype); estimate transformers with {dtype=bf16}, vLLM with {mode=serving}, or a GGUF file as llama.cpp runs it with gpumem inspect", plan.quant.Name)
	}
	if in.engine == engineHF && plan.quant.Layout == LayoutMXFP4 {
		in.warnings = append(in.warnings, "transformers keeps MXFP4 weights packed only when its triton MXFP4 kernels can run; "+
			"otherwise it dequantizes them to bf16 on load (about 3.8× the expert weights)")
	}
	if err := in.resolveTokens(m, job); err != nil {
		return nil, err
	}
	if err := in.checkParallel(m); err != nil {
		return nil, err
	}
	return in, nil
}

// checkInferenceCounts rejects negative counts and out-of-range fractions.
func checkInferenceCounts(job Job) error {
	for _, f := range []struct {
		key string
		v   int
	}{
		{"batch", job.Batch}, {"prompt_len", job.PromptLen}, {"gen_len", job.GenLen},
		{"seq_len", job.SeqLen}, {"tp", job.TP}, {"pp", job.PP}, {"ep", job.EP},
		{"max_model_len", job.MaxModelLen}, {"max_num_seqs", job.MaxNumSeqs},
		{"max_num_batched_tokens", job.MaxNumBatchedTokens}, {"block_size", job.BlockSize},
		{"images_per_sample", job.ImagesPerSample}, {"image_size", job.ImageSize},
		{"cuda_graph_max_bs", job.CUDAGraphMaxBS},
	} {
		if f.v < 0 {
			return FieldErrorf(f.key, "{"+f.key+"=%d}: must not be negative", f.v)
		}
	}
	if u := job.GPUMemoryUtilization; u < 0 || u > 1 || u != u {
		return FieldErrorf("gpu_memory_utilization", "{gpu_memory_utilization=%v}: want a fraction in (0, 1]", u)
	}
	if job.GPUMemory < 0 {
		return FieldErrorf("gpu_memory_bytes", "{gpu_memory_bytes=%d}: must not be negative", int64(job.GPUMemory))
	}
	return nil
}

// parseAttention maps --attn onto eager, sdpa (default) or flash.
func parseAttention(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "sdpa", "default":
		return inferSDPA, nil
	case "flash", "flash_attention_2", "flash_attention_3", "fa2", "fa3", "flash2":
		return inferFlash, nil
	case "eager":
		return inferEager, nil
	}
	return "", FieldErrorf("attn", "{attn=%q}: want eager, sdpa or flash", s)
}

// parseEngine maps --inference-engine onto hf, vllm or sglang; serving
// defaults to vllm. A serving job may name its engine with --engine too
// (--engine sglang), the flag training jobs name theirs with.
func parseEngine(job Job) (string, error) {
	name := job.InferenceEngine
	if name == "" && job.Mode == Serving && isServingEngine(job.Engine) {
		name = job.Engine
	}
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "":
		if job.Mode == Serving {
			return engineVLLM, nil
		}
		return engineHF, nil
	case "hf", "transformers", "huggingface":
		return engineHF, nil
	case "vllm":
		return engineVLLM, nil
	case "sglang":
		if job.Mode != Serving {
			return "", FieldErrorf("inference_engine", "{inference_engine=sglang}: SGLang is estimated as a server; pass {mode=serving}")
		}
		return engineSGLang, nil
	}
	return "", FieldErrorf("inference_engine", "{inference_engine=%q}: want hf, vllm or sglang", name)
}

// isServingEngine reports whether engine names a serving engine.
func isServingEngine(e string) bool {
	switch strings.ToLower(strings.TrimSpace(e)) {
	case "vllm", "sglang":
		return true
	}
	return false
}

// bnbComputeDtype is the dtype bitsandbytes 4-bit layers dequantize into:
// bnb_4bit_compute_dtype of the checkpoint, else --compute-dtype, else
// fp32, transformers' BitsAndBytesConfig default (MODEL.md §6.2, §15.3).
func bnbComputeDtype(m *model.Model, job Job) (DType, error) {
	if m.Quant != nil {
		if s := rawString(m.Quant.Raw, "bnb_4bit_compute_dtype", ""); s != "" {
			if d, err := ParseDType(s); err == nil && d.Float {
				return d, nil
			}
		}
	}
	return floatDtypeOr(job.ComputeDtype, FP32, "compute_dtype")
}

// resolveTokens fills prompt, generation, image and cross-attention
// lengths and checks them against max_position_embeddings.
func (in *inferenceInputs) resolveTokens(m *model.Model, job Job) error {
	switch {
	case job.PromptLen > 0 || job.GenLen > 0:
		in.prompt, in.gen = int64(max(job.PromptLen, 1)), int64(job.GenLen)
	case job.SeqLen > 0:
		in.prompt = int64(job.SeqLen)
	case job.Mode == Serving:
		// serving lengths come from --max-model-len
	default:
		in.prompt = defaultPromptLen
		if mp := m.Text.MaxPositions; mp > 0 && mp < defaultPromptLen {
			in.prompt = int64(mp)
		}
		in.warnings = append(in.warnings, fmt.Sprintf("no prompt_len, gen_len or seq_len given: assuming one %d-token prompt", in.prompt))
	}
	if in.encoderOnly && in.gen > 0 {
		return FieldErrorf("gen_len", "{gen_len=%d}: %s is an encoder-only model and does not generate", in.gen, m.ID)
	}
	if m.NoLMHead && in.gen > 0 {
		return fmt.Errorf("--gen-len %d: %s (%s) has no language-model head, so it encodes prompts but generates no tokens", in.gen, m.ID, m.Architecture)
	}
	if err := checkImages(m, &job); err != nil {
		return err
	}
	in.resolveImages(m, job)
	return in.checkLength(m, job)
}

// checkImages rejects image options for a model without a vision tower:
// they would otherwise be ignored.
func checkImages(m *model.Model, job *Job) error {
	if m.Vision != nil {
		return nil
	}
	switch {
	case job.ImagesPerSample > 0:
		return FieldErrorf("images_per_sample", "{images_per_sample}: model %s has no vision tower", m.ID)
	case job.ImageSize > 0:
		return FieldErrorf("image_size", "{image_size}: model %s has no vision tower", m.ID)
	}
	return nil
}

// resolveImages sets the image tokens of a VLM: in the prompt for
// LLaVA/Qwen-VL style models, as cross-attended tokens for mllama-style
// models whose text stack has cross-attention layers. Encoder-decoder
// models cross-attend to the encoded prompt.
func (in *inferenceInputs) resolveImages(m *model.Model, job Job) {
	if in.encDec {
		in.crossTokens = in.prompt
	}
	v := m.Vision
	if v == nil {
		return
	}
	in.images = int64(orInt(job.ImagesPerSample, 1))
	if job.ImagesPerSample == 0 {
		in.warnings = append(in.warnings, fmt.Sprintf("%s is a vision-language model and no images_per_sample was given: assuming one image per sequence", m.ID))
	}
	// As the model's processor prepares an image of that side: resized
	// (CLIP, SigLIP), at its own size (Qwen-VL, Pixtral) or tiled
	// (model.Vision.Image).
	in.imageShape = v.Image(job.ImageSize)
	per := int64(max(in.imageShape.Tokens, 1))
	if hasCrossAttention(&m.Text) && !in.encDec {
		in.crossTokens = in.images * per
		return
	}
	in.imageTokens = in.images * per
}

// hasCrossAttention reports whether any layer of st cross-attends.
func hasCrossAttention(st *model.Stack) bool {
	for _, lt := range st.LayerTypes {
		if lt.CrossAttention {
			return true
		}
	}
	return false
}

// checkLength rejects sequences beyond max_position_embeddings unless
// --allow-long is set.
func (in *inferenceInputs) checkLength(m *model.Model, job Job) error {
	limit := int64(m.Text.MaxPositions)
	total := in.cachedTokens() // positions fed to the model; the last generated token is not
	if in.encDec && m.Encoder != nil {
		limit, total = int64(m.Encoder.MaxPositions), in.prompt
	}
	if limit <= 0 || total <= limit || job.AllowLong {
		return nil
	}
	parts := fmt.Sprintf("prompt %d", in.prompt)
	if in.imageTokens > 0 {
		parts += fmt.Sprintf(" + %d image tokens", in.imageTokens)
	}
	if in.gen > 1 {
		parts += fmt.Sprintf(" + %d generated tokens fed back", in.gen-1)
	}
	key := "seq_len"
	if job.PromptLen > 0 || job.GenLen > 0 {
		key = "prompt_len"
	}
	return FieldErrorf(key, "sequence of %d positions (%s) exceeds max_position_embeddings %d of %s; pass {allow_long=true} to estimate anyway",
		total, parts, limit, m.ID)
}

// errNoLayers is returned for a model without decoder layers to run.
var errNoLayers = errors.New("model has no layers (num_hidden_layers is 0)")

// checkParallel validates tensor, pipeline and expert parallel sizes
// against the model's heads, layers and experts.
func (in *inferenceInputs) checkParallel(m *model.Model) error {
	st := &m.Text
	if st.Layers <= 0 {
		return fmt.Errorf("%s: %w", m.ID, errNoLayers)
	}
	if in.tp > 1 && st.Heads%in.tp != 0 {
		return FieldErrorf("tp", "{tp=%d} does not divide num_attention_heads %d of %s", in.tp, st.Heads, m.ID)
	}
	if st.MLA == nil && st.Heads > 0 {
		kv := st.KVHeads
		if kv <= 0 {
			kv = st.Heads
		}
		if _, err := kvHeadsPerGPU(kv, in.tp); err != nil {
			return fmt.Errorf("%s: %w", m.ID, err)
		}
	}
	if in.pp > st.Layers {
		return FieldErrorf("pp", "{pp=%d} exceeds the %d layers of %s", in.pp, st.Layers, m.ID)
	}
	if in.ep > 1 {
		if st.MoE == nil || st.MoE.Experts == 0 {
			in.warnings = append(in.warnings, fmt.Sprintf("ep=%d ignored: %s has no experts", in.ep, m.ID))
			in.ep = 1
		} else if st.MoE.Experts%in.ep != 0 {
			return FieldErrorf("ep", "{ep=%d} does not divide the %d experts of %s", in.ep, st.MoE.Experts, m.ID)
		}
	}
	return nil
}
