package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// servingStage is vLLM's budget on one GPU of one pipeline stage.
type servingStage struct {
	weights stageWeights
	act     transient
	kv      kvSpec
	state   stateSpec
	// hybrid is the pool's layout when the layers keep recurrent state
	// (nil otherwise: pages of block_size tokens of every layer).
	hybrid *hybridPool
	pool   units.Bytes
	blocks int64
	// fits is whether weights, activations and non-torch memory fit the budget.
	fits bool
}

// estimateServing sizes the KV pool the way vLLM's worker does
// (vllm-project/vllm:vllm/v1/worker/gpu_worker.py determine_available_memory,
// MODEL.md §7.3): requested = total × gpu_memory_utilization; pool =
// requested − weights − profiled activation peak − non-torch memory;
// blocks = pool / page bytes; the engine's capacity is that of its
// tightest GPU.
func estimateServing(m *model.Model, job Job) (Result, error) {
	in, err := resolveInference(m, job)
	if err != nil {
		return Result{}, fmt.Errorf("serving estimate: %w", err)
	}
	if in.engine == engineSGLang {
		return estimateSGLang(m, job, in)
	}
	setup, err := resolveServing(m, job, in)
	if err != nil {
		return Result{}, fmt.Errorf("serving estimate: %w", err)
	}
	requested := units.FromFloat(float64(setup.total) * setup.util)
	stages := stageRanges(m.Text.Layers, in.pp)
	var tight servingStage
	for s := range stages {
		st, err := in.servingStage(m, setup, stages, s, requested)
		if err != nil {
			return Result{}, fmt.Errorf("serving estimate: %w", err)
		}
		if s == 0 || st.blocks < tight.blocks {
			tight = st
		}
	}
	return in.servingResult(m, job, setup, requested, tight)
}

// servingStage computes the budget of stage s.
func (in *inferenceInputs) servingStage(m *model.Model, setup servingSetup, stages []stageRange, s int, requested units.Bytes) (servingStage, error) {
	r := stages[s]
	w := weightsForStage(m, in.plan, stages, s, in.tp, in.ep)
	spec, err := buildKVSpec(&m.Text, r.lo, r.hi, in.kv, in.tp, engineVLLM)
	if err != nil {
		return servingStage{}, err
	}
	state, err := buildStateSpec(&m.Text, r.lo, r.hi, in.act, in.tp, engineVLLM)
	if err != nil {
		return servingStage{}, err
	}
	if in.encoderOnly {
		spec, state = kvSpec{formula: "encoder-only model: no KV cache"}, stateSpec{}
	}
	st := servingStage{weights: w, kv: spec, state: state, act: in.profileRun(m, setup, r, s == len(stages)-1)}
	used := units.Add(units.Add(w.total, st.act.bytes), vllmNonTorch)
	st.fits = used <= requested
	if used < requested && !in.encoderOnly {
		st.pool = requested - used
	}
	if state.layers > 0 {
		h := newHybridPool(spec, state, st.pool, setup)
		st.hybrid, st.blocks = &h, h.blocks
		return st, nil
	}
	if page := units.MulInt(spec.perToken(), int64(setup.blockSize)); page > 0 {
		st.blocks = int64(st.pool) / page
	}
	return st, nil
}

// profileRun is the torch peak of vLLM's profile run: a dummy forward of
// max_num_batched_tokens tokens (fused kernels, no s² scores) and, on the
// last stage, the sampler warm-up over max_num_seqs rows of logits
// (vllm-project/vllm:vllm/v1/worker/gpu_model_runner.py profile_run,
// _dummy_sampler_run). The two run one after the other; the hidden states
// of the dummy run stay alive during sampling.
func (in *inferenceInputs) profileRun(m *model.Model, setup servingSetup, r stageRange, last bool) transient {
	shape := actShape{st: &m.Text, tp: in.tp, ep: in.ep, attn: inferFlash, act: in.act.BytesPerElement(), lo: r.lo, hi: r.hi}
	n := int64(setup.maxBatched)
	layer := shape.layerTransient(1, n, n)
	best := layer
	if v := m.Vision; v != nil && r.lo == 0 && v.TokensPerImage > 0 {
		// The multimodal profile encodes as many dummy images as fill one
		// step's token budget (vllm v1 gpu_model_runner.py profile_run,
		// encoder cache sized by max_num_batched_tokens).
		images := max(n/int64(v.TokensPerImage), 1)
		vt := visionTransient(v, v.Image(0), images, inferFlash, in.act.BytesPerElement(), m.Text.Hidden, images*int64(v.TokensPerImage))
		if vt.bytes > best.bytes {
			best = transient{bytes: vt.bytes, formula: "multimodal encoder profile: " + vt.formula}
		}
	}
	if last && m.Text.Vocab > 0 && !m.NoLMHead { // an embedding model samples nothing
		hidden := 2 * float64(n) * float64(m.Text.Hidden) * in.act.BytesPerElement()
		sampler := float64(setup.maxSeqs) * float64(m.Text.Vocab) * setup.samplerBytes
		if b := units.FromFloat(hidden + sampler); b > best.bytes {
			best = transient{bytes: b, formula: fmt.Sprintf(
				"sampler warm-up max_num_seqs %d × vocab %d × %g B per logit + hidden states 2·N·h (N = %d)",
				setup.maxSeqs, m.Text.Vocab, setup.samplerBytes, n)}
		}
	}
	return best
}

// seqBytes is the pool one sequence of n tokens needs, in whole pages:
// full-attention layers hold ⌈n/block⌉ pages, sliding-window layers
// ⌈min(W − 1 + max_num_batched_tokens, n)/block⌉ + 1, chunked layers
// ⌈min(chunk + max_num_batched_tokens, n)/block⌉ (vllm v1
// kv_cache_interface.py max_memory_usage_bytes, MODEL.md §7.2).
func (st servingStage) seqBytes(n int64, setup servingSetup, cross int64) units.Bytes {
	if st.hybrid != nil {
		return st.hybrid.seqBytes(n)
	}
	bs := int64(setup.blockSize)
	pages := func(tokens int64) int64 { return units.MulInt(ceilDiv(max(tokens, 0), bs), bs) }
	k := st.kv
	b := units.MulInt(k.full, pages(n))
	total := units.Bytes(b)
	if k.sliding > 0 {
		total = units.Add(total, units.Bytes(units.MulInt(k.sliding, pages(min(int64(k.window)-1+int64(setup.maxBatched), n))+bs)))
	}
	if k.chunked > 0 {
		total = units.Add(total, units.Bytes(units.MulInt(k.chunked, pages(min(int64(k.chunk)+int64(setup.maxBatched), n)))))
	}
	return units.Add(total, units.Bytes(units.MulInt(k.cross, pages(cross))))
}

// servingResult builds the Result and its ServingResult.
func (in *inferenceInputs) servingResult(m *model.Model, job Job, setup servingSetup, requested units.Bytes, st servingStage) (Result, error) {
	o, err := RuntimeOverheads(job)
	if err != nil {
		return Result{}, fmt.Errorf("serving estimate: %w", err)
	}
	sr := in.servingFigures(setup, requested, st)
	if job.CUDAGraphs {
		sr.CUDAGraphBytes = in.cudaGraphs(m, int64(min(setup.maxSeqs, vllmMaxCaptureSize))).Bytes
	}
	comps := in.servingComponents(m, setup, st, sr, o)
	alloc := units.Add(units.Add(st.weights.total, st.pool), st.act.bytes)
	reserved := units.Add(alloc, sr.CUDAGraphBytes)
	device := units.Add(units.Add(reserved, vllmNonTorch), o.CUDAContext)
	total, active := inferenceParamTotals(m)
	warnings := append(append([]string(nil), in.warnings...), in.servingWarnings(m, setup, st, sr)...)
	return Result{
		Model: m.ID, Architecture: m.Architecture, TotalParams: total, ActiveParams: active, Job: job,
		PerGPU: PerGPU{AllocatedPeakBytes: alloc, ReservedPeakBytes: reserved, DevicePeakBytes: device, PeakPhase: "serving",
			Components: comps, Phases: []Phase{
				{Name: "profile", Bytes: units.Add(st.weights.total, st.act.bytes)},
				{Name: "serving", Bytes: alloc},
			}},
		Serving: sr, Warnings: warnings,
	}, nil
}

// servingFigures fills the capacity figures of the tightest stage.
func (in *inferenceInputs) servingFigures(setup servingSetup, requested units.Bytes, st servingStage) *ServingResult {
	sr := &ServingResult{
		GPUMemoryBytes: setup.total, GPUMemoryUtilization: setup.util, RequestedBytes: requested,
		WeightsBytes: st.weights.total, ActivationPeakBytes: st.act.bytes, NonTorchBytes: vllmNonTorch,
		KVPoolBytes: st.pool, KVBytesPerToken: st.kv.perToken(), BlockSize: setup.blockSize,
		KVBlocks: st.blocks, KVTokens: units.MulInt(st.blocks, int64(setup.blockSize)),
		RecurrentStateBytesPerSeq: st.state.perSeq(),
		MaxModelLen:               setup.maxModelLen, MaxNumSeqs: setup.maxSeqs, MaxNumBatchedTokens: setup.maxBatched, SeqLen: setup.seqLen,
	}
	if in.encoderOnly {
		// No cache: the engine starts when weights and activations fit.
		sr.MaxModelLenFits = st.fits
		return sr
	}
	if h := st.hybrid; h != nil {
		sr.BlockSize, sr.KVTokens = h.blockSize, h.tokens()
		if per := h.seqBlocks(int64(setup.seqLen)); per > 0 {
			sr.MaxConcurrentSeqs = st.blocks / per
		}
		sr.MaxModelLenFits = st.pool > 0 && h.seqBytes(int64(setup.maxModelLen)) <= st.pool
		return sr
	}
	if per := st.seqBytes(int64(setup.seqLen), setup, in.crossTokens); per > 0 {
		sr.MaxConcurrentSeqs = int64(st.pool) / int64(per)
	}
	sr.MaxModelLenFits = st.pool > 0 && st.seqBytes(int64(setup.maxModelLen), setup, in.crossTokens) <= st.pool
	return sr
}

// servingWarnings explains a deployment that does not start or holds no cache.
func (in *inferenceInputs) servingWarnings(m *model.Model, setup servingSetup, st servingStage, sr *ServingResult) []string {
	switch {
	case in.encoderOnly:
		return []string{fmt.Sprintf("%s is an encoder-only model: vLLM runs it without a KV cache, so concurrency is bounded by max_num_seqs and the activation budget", m.ID)}
	case st.pool == 0:
		return []string{fmt.Sprintf("no memory left for the KV cache: weights %s + activations %s + non-torch %s exceed %.2f × %s",
			units.FormatIEC(st.weights.total), units.FormatIEC(st.act.bytes), units.FormatIEC(vllmNonTorch), setup.util, units.FormatIEC(setup.total))}
	case !sr.MaxModelLenFits:
		return []string{fmt.Sprintf("one sequence of max_model_len=%d tokens needs %s of KV cache, more than the %s pool: vLLM refuses to start; lower max_model_len or raise gpu_memory_utilization",
			setup.maxModelLen, units.FormatIEC(st.seqBytes(int64(setup.maxModelLen), setup, in.crossTokens)), units.FormatIEC(st.pool))}
	}
	return nil
}

// servingComponents are the rows of a serving breakdown.
func (in *inferenceInputs) servingComponents(m *model.Model, setup servingSetup, st servingStage, sr *ServingResult, o Overheads) []Component {
	kvRow := Component{Name: "kv_cache", Bytes: st.pool, Level: "allocated", Phase: "persistent",
		Formula: fmt.Sprintf("pool = %.2f × %s − weights − activations − non-torch; %d blocks × %d tokens × %d B/token (%s, one layer = %s)",
			setup.util, units.FormatIEC(setup.total), st.blocks, setup.blockSize, st.kv.perToken(), in.kv.Name, st.kv.formula),
		Source: "MODEL.md §7.3 (vLLM budget); vllm-project/vllm:vllm/v1/worker/gpu_worker.py, vllm/v1/kv_cache_interface.py"}
	if h := st.hybrid; h != nil {
		kvRow.Formula = fmt.Sprintf("pool = %.2f × %s − weights − activations − non-torch, shared by attention pages and recurrent state; %s; one attention layer = %s per token (%s); one recurrent layer = %s per sequence",
			setup.util, units.FormatIEC(setup.total), h.formula(st.state), st.kv.formula, in.kv.Name, st.state.formula)
		kvRow.Source += "; vllm/v1/core/kv_cache_utils.py (uniform-page groups), vllm/platforms/interface.py _align_hybrid_block_size; " + srcState
	}
	comps := []Component{
		{Name: "weights", Bytes: st.weights.total, Level: "allocated", Phase: "persistent",
			Formula: weightsFormula(in.plan, st.weights, in.tp, in.pp, in.ep), Source: srcWeights + "; " + in.plan.quant.Source},
		kvRow,
		{Name: "activations", Bytes: st.act.bytes, Level: "allocated", Phase: "profile", Formula: st.act.formula,
			Source: "MODEL.md §7.3 step 3, §7.4"},
	}
	if sr.CUDAGraphBytes > 0 {
		g := in.cudaGraphs(m, int64(min(setup.maxSeqs, vllmMaxCaptureSize)))
		comps = append(comps, g)
	}
	return append(comps,
		Component{Name: "non_torch", Bytes: vllmNonTorch, Level: "device", Phase: "persistent",
			Formula: "non-torch increase measured by vLLM's profiler (0.25 GiB)", Source: "MODEL.md §7.3; dev measurements (vLLM v0.19 startup logs)"},
		Component{Name: "cuda_context", Bytes: o.CUDAContext, Level: "device", Phase: "persistent",
			Formula: "cuda_context_mib, outside vLLM's budget (the budget is measured from a snapshot after initialisation)",
			Source:  "MODEL.md §10; vllm-project/vllm:vllm/v1/worker/gpu_worker.py init_device"})
}
