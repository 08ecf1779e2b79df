package memory

import (
	"fmt"
	"math"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// SGLang serving.
//
// SGLang sizes its KV pool once, at startup, from two readings of free
// GPU memory (python/sglang/srt/model_executor/model_runner.py):
// total_gpu_memory, the free memory once the CUDA context and the
// distributed groups exist (init_torch_distributed), and the free memory
// after the weights are loaded. profile_max_num_token keeps
//
//	rest = free_after_load − total_gpu_memory × (1 − mem_fraction_static)
//
// for the cache, so mem_fraction_static is the share of the startup free
// memory that weights and KV pool may take together, and the rest is left
// for activations, CUDA graphs and the request pools. The pool holds
// max_total_num_tokens = rest / cell_size tokens, rounded down to whole
// pages, where cell_size is one token's K and V over the rank's layers
// (MHA: kv heads × head_dim × layers × 2 × bytes; MLA: (kv_lora_rank +
// qk_rope_head_dim) × layers × bytes). The radix (prefix) cache lives in
// that pool: shared prefixes are stored once, and no memory is added.

// sglangSetup are the settings of an SGLang deployment.
type sglangSetup struct {
	version        string
	versionAssumed bool
	total          units.Bytes // GPU memory (CUDA's total)
	gpuMiB         float64     // the capacity SGLang's heuristics read, MiB
	frac           float64     // mem_fraction_static
	fracDerived    bool        // from SGLang's heuristic, not given
	chunked        int         // chunked_prefill_size
	graphBS        int         // cuda_graph_max_bs
	graphs         bool        // CUDA graphs captured
	contextLen     int         // context_len
	pageSize       int
	maxRunning     int // --max-running-requests, 0 = SGLang's default
	seqLen         int
}

// sglangGPUDefaults are chunked_prefill_size and cuda_graph_max_bs by GPU
// memory (MiB) and TP size (python/sglang/srt/server_args.py
// _handle_gpu_memory_settings, sgl-project/sglang PR #10975): T4 / 4080
// class, A10 / 4090 / 5090, A100-40GB / L40, H100 / A100-80GB, H20 /
// H200, and larger (B200, MI300).
func sglangGPUDefaults(gpuMiB float64, tp int) (chunked, graphBS int) {
	switch {
	case gpuMiB < 20*1024:
		return 2048, 8
	case gpuMiB < 35*1024:
		return 2048, pick(tp < 4, 24, 80)
	case gpuMiB < 60*1024:
		return 4096, pick(tp < 4, 32, 160)
	case gpuMiB < 160*1024:
		return 8192, pick(tp < 4, 256, 512)
	}
	return 16384, 512
}

func pick(cond bool, a, b int) int {
	if cond {
		return a
	}
	return b
}

// sglangMemFraction is SGLang's default mem_fraction_static: the GPU's
// capacity less a reserve for what lies outside weights and KV pool, in
// MiB — 512 of constant metadata, 1.5 per token of the larger of
// chunked_prefill_size and 2048 for prefill activations, 2 per captured
// batch size for CUDA graphs, tp × pp / 8 GiB for large parallel groups,
// and at least 10 GiB on GPUs over 60 GiB — rounded to three decimals
// (server_args.py _handle_gpu_memory_settings, PR #10975; as of commit
// 037c3982, ported unchanged by gpustack/gpustack PR #3901). Multimodal
// models then give up a share for the vision tower, scaled by its size
// relative to a ViT-L/14 (adjust_mem_fraction_for_vlm).
func sglangMemFraction(s sglangSetup, tp, pp int, vision *model.Vision) float64 {
	reserved := 512.0
	if s.chunked > 0 {
		reserved += float64(max(s.chunked, 2048)) * 1.5
	}
	reserved += float64(s.graphBS) * 2
	reserved += float64(tp*pp) / 8 * 1024
	if s.gpuMiB > 60*1024 {
		reserved = math.Max(reserved, 10*1024)
	}
	f := round3((s.gpuMiB - reserved) / s.gpuMiB)
	if vision != nil {
		// The vision tower's complexity relative to ViT-L/14 (24 layers of
		// width 1024); every doubling takes 10 % more, within [0.8, 1.05],
		// on top of a flat 0.95.
		layers, hidden := float64(cmpOr(vision.Layers, 24)), float64(cmpOr(vision.Hidden, 1024))
		ratio := layers * hidden * hidden / (24 * 1024 * 1024)
		adj := math.Max(0.8, math.Min(1.05, 1-0.1*(ratio-1)))
		f = round3(f * 0.95 * adj)
	}
	return f
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// resolveSGLang fills SGLang's settings from job and model.
func resolveSGLang(m *model.Model, job Job, in *inferenceInputs) (sglangSetup, []string, error) {
	var warns []string
	total, err := servingGPUMemory(job)
	if err != nil {
		return sglangSetup{}, nil, err
	}
	s := sglangSetup{total: total, gpuMiB: float64(total) / float64(units.MiB), graphs: !job.DisableCUDAGraph,
		chunked: job.MaxNumBatchedTokens, graphBS: job.CUDAGraphMaxBS, maxRunning: job.MaxNumSeqs,
		pageSize: orInt(job.BlockSize, 1), contextLen: job.MaxModelLen}
	s.version, s.versionAssumed = sglangVersion(&job)
	if s.version != "" && sglangNewer(s.version) {
		warns = append(warns, fmt.Sprintf("SGLang %s is newer than %s, the release gpumem's SGLang rules were read at; later releases changed how the default mem_fraction_static is reserved (piecewise CUDA graphs are on by default from 0.5.10), which is not modelled",
			s.version, sglangPackage().Default))
	}
	defChunk, defBS := sglangGPUDefaults(s.gpuMiB, in.tp)
	if s.chunked == 0 {
		s.chunked = defChunk
	}
	if s.graphBS == 0 {
		s.graphBS = defBS
	}
	if f := job.MemFractionStatic; f != 0 {
		if f < 0 || f > 1 || f != f {
			return s, nil, FieldErrorf("mem_fraction_static", "{mem_fraction_static=%v}: want a fraction in (0, 1]", f)
		}
		s.frac = f
	} else {
		s.frac, s.fracDerived = sglangMemFraction(s, in.tp, in.pp, m.Vision), true
	}
	if job.GPUMemoryUtilization != 0 {
		return s, nil, FieldErrorf("gpu_memory_utilization", "{gpu_memory_utilization} is vLLM's budget; SGLang's is {mem_fraction_static} (the share of the free memory at startup that weights and KV cache take)")
	}
	if s.contextLen == 0 {
		s.contextLen = m.Text.MaxPositions
	}
	if s.contextLen <= 0 {
		return s, nil, FieldErrorf("max_model_len", "%s states no max_position_embeddings: pass {max_model_len} (SGLang's context length)", m.ID)
	}
	if mp := m.Text.MaxPositions; mp > 0 && s.contextLen > mp && !job.AllowLong {
		return s, nil, FieldErrorf("max_model_len", "{max_model_len=%d} (SGLang's context length) exceeds max_position_embeddings %d of %s; pass {allow_long=true} to estimate anyway", s.contextLen, mp, m.ID)
	}
	s.seqLen = s.contextLen
	if t := in.tokens(); (job.PromptLen > 0 || job.GenLen > 0 || job.SeqLen > 0) && t > 0 {
		s.seqLen = int(min(t, int64(s.contextLen)))
	}
	return s, warns, nil
}

// sglangOnlyKey names the first SGLang-only setting a job gives, or "".
func sglangOnlyKey(job Job) string {
	switch {
	case job.MemFractionStatic != 0:
		return "mem_fraction_static"
	case job.CUDAGraphMaxBS != 0:
		return "cuda_graph_max_bs"
	case job.DisableCUDAGraph:
		return "disable_cuda_graph"
	}
	return ""
}

// sglangPackage is the stack's SGLang entry.
func sglangPackage() *StackPackage {
	p, _ := stackPackage("sglang")
	return p
}

// sglangVersion is the SGLang version of the job's stack, and whether it
// was assumed (the stack was checked when the job's rules were resolved).
func sglangVersion(job *Job) (string, bool) {
	if v, ok := job.Stack["sglang"]; ok {
		return v, false
	}
	return sglangPackage().Default, true
}

// sglangNewer reports whether v is a newer release than the default the
// SGLang rules were read at.
func sglangNewer(v string) bool {
	p := sglangPackage()
	a, err := ParseVersion(v, false)
	if err != nil {
		return false
	}
	d := mustVersion(p.Default, false)
	return a.Compare(d) > 0
}

// SGLangServing is what SGLang decides at startup on one GPU, in the
// words of its startup log ("KV Cache is allocated. #tokens: N, K size:
// … GB, V size: … GB"; the scheduler's "max_total_num_tokens=…,
// chunked_prefill_size=…, max_running_requests=…, context_len=…").
type SGLangServing struct {
	// Version is the SGLang release estimated; VersionAssumed when the
	// job's stack did not name one.
	Version        string `json:"version"`
	VersionAssumed bool   `json:"version_assumed,omitempty"`
	// MemFractionStatic is mem_fraction_static; MemFractionDerived when it
	// is SGLang's default heuristic rather than given.
	MemFractionStatic  float64 `json:"mem_fraction_static"`
	MemFractionDerived bool    `json:"mem_fraction_derived,omitempty"`
	// FreeAtStartBytes is total_gpu_memory: the free memory once the CUDA
	// context exists, which mem_fraction_static is a share of.
	FreeAtStartBytes units.Bytes `json:"free_at_start_bytes"`
	// ReserveBytes is (1 − mem_fraction_static) × FreeAtStartBytes: what is
	// left for activations, CUDA graphs and the request pools.
	ReserveBytes units.Bytes `json:"reserve_bytes"`
	// ReserveNeededBytes is what gpumem estimates the reserve must hold
	// (request pool, prefill activations, CUDA graphs).
	ReserveNeededBytes units.Bytes `json:"reserve_needed_bytes"`
	// MaxTotalNumTokens is the KV pool in tokens ("#tokens"); KCacheBytes
	// and VCacheBytes its K and V halves (MLA: the latent is K, V is 0).
	MaxTotalNumTokens int64       `json:"max_total_num_tokens"`
	KCacheBytes       units.Bytes `json:"k_cache_bytes"`
	VCacheBytes       units.Bytes `json:"v_cache_bytes"`
	// PageSize is the tokens per KV page.
	PageSize int `json:"page_size"`
	// ContextLen is the longest request (--context-length) and MaxReqLen
	// the longest SGLang accepts: min(context_len, max_total_num_tokens) − 1.
	ContextLen int   `json:"context_len"`
	MaxReqLen  int64 `json:"max_req_len"`
	// ChunkedPrefillSize and CUDAGraphMaxBS are the prefill chunk and the
	// largest decode batch with a CUDA graph.
	ChunkedPrefillSize int `json:"chunked_prefill_size"`
	CUDAGraphMaxBS     int `json:"cuda_graph_max_bs"`
	// MaxRunningRequests is the scheduler's cap on running requests, and
	// ReqToTokenBytes the request-to-token table sized for it.
	MaxRunningRequests int64       `json:"max_running_requests"`
	ReqToTokenBytes    units.Bytes `json:"req_to_token_bytes"`
}

// estimateSGLang sizes an SGLang deployment on one GPU of each pipeline
// stage and reports the tightest.
func estimateSGLang(m *model.Model, job Job, in *inferenceInputs) (Result, error) {
	for _, lt := range m.Text.LayerTypes {
		if lt.State != "" {
			return Result{}, FieldErrorf("inference_engine", "serving estimate: {inference_engine=sglang}: %s has linear-attention or SSM layers, whose state SGLang keeps in a pool of its own (its mamba cache, sized by max_mamba_cache_size) that gpumem does not model; estimate it with vLLM, the default engine", m.ID)
		}
	}
	s, warns, err := resolveSGLang(m, job, in)
	if err != nil {
		return Result{}, fmt.Errorf("serving estimate: %w", err)
	}
	in.warnings = append(in.warnings, warns...)
	o, err := RuntimeOverheads(job)
	if err != nil {
		return Result{}, fmt.Errorf("serving estimate: %w", err)
	}
	stages := stageRanges(m.Text.Layers, in.pp)
	var best *sglangStage
	for i := range stages {
		st, err := in.sglangStage(m, s, o, stages, i)
		if err != nil {
			return Result{}, fmt.Errorf("serving estimate: %w", err)
		}
		if best == nil || st.tokens < best.tokens {
			best = &st
		}
	}
	return in.sglangResult(m, job, s, o, *best)
}

// sglangStage is the budget of one GPU of one pipeline stage.
type sglangStage struct {
	weights    stageWeights
	kv         kvSpec
	free0      units.Bytes
	reserve    units.Bytes
	pool       units.Bytes // max_total_num_tokens × cell
	tokens     int64
	cell       int64
	maxReqs    int64 // req_to_token pool rows
	maxRunning int64
	reqBytes   units.Bytes
	act        transient
	graphs     units.Bytes
}

// sglangStage runs profile_max_num_token and init_memory_pool for stage i.
func (in *inferenceInputs) sglangStage(m *model.Model, s sglangSetup, o Overheads, stages []stageRange, i int) (sglangStage, error) {
	r := stages[i]
	st := sglangStage{weights: weightsForStage(m, in.plan, stages, i, in.tp, in.ep)}
	kv, err := buildKVSpec(&m.Text, r.lo, r.hi, in.kv, in.tp, engineVLLM)
	if err != nil {
		return st, err
	}
	st.kv = kv
	// SGLang's cell counts every attention layer of the rank
	// (num_hidden_layers); windowed layers as full ones unless its hybrid
	// SWA pool is used, which is not modelled here.
	st.cell = kv.perToken()
	st.free0 = subFloor(s.total, o.CUDAContext)
	budget := units.FromFloat(float64(st.free0) * s.frac)
	st.reserve = subFloor(st.free0, budget)
	if budget > st.weights.total && st.cell > 0 && !in.encoderOnly {
		tokens := int64(budget-st.weights.total) / st.cell
		st.tokens = tokens / int64(s.pageSize) * int64(s.pageSize)
		st.pool = units.Bytes(units.MulInt(st.tokens, st.cell))
	}
	// The request-to-token table: one row of context_len + 4 int32 slots
	// per request; without --max-running-requests its rows are
	// min(max(max_total_num_tokens / context_len × 512, 2048), 4096)
	// (model_runner.py init_memory_pool; ReqToTokenPool in
	// mem_cache/memory_pool.py). The scheduler runs at most
	// min(max_total_num_tokens / 2 or the flag, the table's rows).
	st.maxReqs = int64(s.maxRunning)
	if st.maxReqs == 0 {
		st.maxReqs = min(max(int64(float64(st.tokens)/float64(s.contextLen)*512), 2048), 4096)
	}
	st.maxRunning = st.maxReqs
	if s.maxRunning == 0 {
		st.maxRunning = min(st.tokens/2, st.maxReqs)
	}
	st.reqBytes = units.Bytes(units.MulInt(units.MulInt(st.maxReqs+1, int64(s.contextLen)+4), 4))
	// The reserve holds the prefill of one chunk (the forward of
	// chunked_prefill_size tokens, with the sampler's f32 logits of the
	// largest decode batch on the last stage) and the CUDA graphs of
	// decode batches up to cuda_graph_max_bs.
	st.act = in.profileRun(m, servingSetup{maxBatched: s.chunked, maxSeqs: s.graphBS, samplerBytes: 4}, r, i == len(stages)-1)
	if s.graphs {
		st.graphs = in.cudaGraphs(m, int64(s.graphBS)).Bytes
	}
	return st, nil
}

// subFloor is a − b, or 0 when b is larger.
func subFloor(a, b units.Bytes) units.Bytes {
	if b >= a {
		return 0
	}
	return a - b
}

// reserveNeeded is what the reserve must hold.
func (st sglangStage) reserveNeeded() units.Bytes {
	return units.Add(units.Add(st.reqBytes, st.act.bytes), st.graphs)
}

// sglangResult builds the Result.
func (in *inferenceInputs) sglangResult(m *model.Model, job Job, s sglangSetup, o Overheads, st sglangStage) (Result, error) {
	sg := &SGLangServing{
		Version: s.version, VersionAssumed: s.versionAssumed,
		MemFractionStatic: s.frac, MemFractionDerived: s.fracDerived,
		FreeAtStartBytes: st.free0, ReserveBytes: st.reserve, ReserveNeededBytes: st.reserveNeeded(),
		MaxTotalNumTokens: st.tokens, PageSize: s.pageSize, ContextLen: s.contextLen,
		MaxReqLen:          max(min(int64(s.contextLen), st.tokens)-1, 0),
		ChunkedPrefillSize: s.chunked, CUDAGraphMaxBS: s.graphBS,
		MaxRunningRequests: st.maxRunning, ReqToTokenBytes: st.reqBytes,
	}
	if m.Text.MLA != nil {
		sg.KCacheBytes = st.pool
	} else {
		sg.KCacheBytes = st.pool / 2
		sg.VCacheBytes = st.pool - sg.KCacheBytes
	}
	sr := &ServingResult{
		Engine: engineSGLang, SGLang: sg,
		GPUMemoryBytes: s.total, WeightsBytes: st.weights.total, ActivationPeakBytes: st.act.bytes,
		KVPoolBytes: st.pool, KVBytesPerToken: st.cell, BlockSize: s.pageSize,
		KVBlocks: st.tokens / int64(s.pageSize), KVTokens: st.tokens,
		MaxModelLen: s.contextLen, MaxNumSeqs: int(st.maxRunning), MaxNumBatchedTokens: s.chunked, SeqLen: s.seqLen,
		CUDAGraphBytes: st.graphs,
	}
	if per := st.kv.seqBytes(int64(s.seqLen), in.crossTokens); per > 0 {
		sr.MaxConcurrentSeqs = min(int64(st.pool)/int64(per), st.maxRunning)
	}
	sr.MaxModelLenFits = st.tokens >= int64(s.contextLen)
	comps := in.sglangComponents(m, s, st, o)
	alloc := units.Add(units.Add(units.Add(st.weights.total, st.pool), st.reqBytes), st.act.bytes)
	reserved := units.Add(alloc, st.graphs)
	device := units.Add(reserved, o.CUDAContext)
	total, active := inferenceParamTotals(m)
	warnings := append(append([]string(nil), in.warnings...), in.sglangWarnings(m, s, st, sg)...)
	return Result{
		Model: m.ID, Architecture: m.Architecture, TotalParams: total, ActiveParams: active, Job: job,
		PerGPU: PerGPU{AllocatedPeakBytes: alloc, ReservedPeakBytes: reserved, DevicePeakBytes: device, PeakPhase: "serving",
			Components: comps, Phases: []Phase{
				{Name: "load", Bytes: st.weights.total},
				{Name: "serving", Bytes: alloc},
			}},
		Serving: sr, Warnings: warnings,
	}, nil
}

// sglangComponents are the rows of an SGLang breakdown.
func (in *inferenceInputs) sglangComponents(m *model.Model, s sglangSetup, st sglangStage, o Overheads) []Component {
	fracWhy := "given"
	if s.fracDerived {
		fracWhy = "SGLang's default for this GPU"
	}
	comps := []Component{
		{Name: "weights", Bytes: st.weights.total, Level: "allocated", Phase: "persistent",
			Formula: weightsFormula(in.plan, st.weights, in.tp, in.pp, in.ep), Source: srcWeights + "; " + in.plan.quant.Source},
		{Name: "kv_cache", Bytes: st.pool, Level: "allocated", Phase: "persistent",
			Formula: fmt.Sprintf("#tokens = (%.3f (mem_fraction_static, %s) × %s free at startup − weights) / %d B per token = %d, in pages of %d (%s, one layer = %s)",
				s.frac, fracWhy, units.FormatIEC(st.free0), st.cell, st.tokens, s.pageSize, in.kv.Name, st.kv.formula),
			Source: "sgl-project/sglang:python/sglang/srt/model_executor/model_runner.py profile_max_num_token, init_memory_pool; server_args.py _handle_gpu_memory_settings"},
		{Name: "req_to_token_pool", Bytes: st.reqBytes, Level: "allocated", Phase: "persistent",
			Formula: fmt.Sprintf("(%d requests + 1) × (context_len %d + 4) × 4 B", st.maxReqs, s.contextLen),
			Source:  "sgl-project/sglang:python/sglang/srt/mem_cache/memory_pool.py ReqToTokenPool; model_runner.py init_memory_pool"},
		{Name: "activations", Bytes: st.act.bytes, Level: "allocated", Phase: "prefill",
			Formula: fmt.Sprintf("one prefill chunk of chunked_prefill_size %d tokens: %s", s.chunked, st.act.formula), Source: "MODEL.md §7.4"},
	}
	if st.graphs > 0 {
		g := in.cudaGraphs(m, int64(s.graphBS))
		g.Formula = fmt.Sprintf("decode graphs up to cuda_graph_max_bs %d: %s", s.graphBS, g.Formula)
		comps = append(comps, g)
	}
	return append(comps, Component{Name: "cuda_context", Bytes: o.CUDAContext, Level: "device", Phase: "persistent",
		Formula: "cuda_context_mib, taken before SGLang reads the free memory mem_fraction_static is a share of",
		Source:  "MODEL.md §10; sgl-project/sglang:python/sglang/srt/model_executor/model_runner.py init_torch_distributed"})
}

// sglangWarnings says what SGLang does with the numbers.
func (in *inferenceInputs) sglangWarnings(m *model.Model, s sglangSetup, st sglangStage, sg *SGLangServing) []string {
	var w []string
	if s.versionAssumed {
		w = append(w, fmt.Sprintf("SGLang version not stated: assuming %s (state it in stack, sglang=VERSION)", s.version))
	}
	if s.fracDerived {
		w = append(w, fmt.Sprintf("mem_fraction_static not given: SGLang's default for %.0f MiB, TP %d, chunked_prefill_size %d and cuda_graph_max_bs %d is %.3f (SGLang reads the capacity from nvidia-smi; gpumem uses the GPU's CUDA total)",
			s.gpuMiB, in.tp, s.chunked, s.graphBS, s.frac))
	}
	switch {
	case in.encoderOnly:
		w = append(w, fmt.Sprintf("%s is an encoder-only model: it keeps no KV cache", m.ID))
	case st.tokens <= 0:
		w = append(w, fmt.Sprintf("SGLang refuses to start (\"Not enough memory. Please try to increase --mem-fraction-static.\"): %.3f × %s free at startup does not cover the weights (%s)",
			s.frac, units.FormatIEC(st.free0), units.FormatIEC(st.weights.total)))
	case sg.MaxReqLen < int64(s.contextLen)-1:
		w = append(w, fmt.Sprintf("the KV pool holds %d tokens, fewer than context_len %d: SGLang starts, but refuses requests longer than %d tokens (max_total_num_tokens − 1)",
			st.tokens, s.contextLen, sg.MaxReqLen))
	}
	if need := st.reserveNeeded(); need > st.reserve && st.tokens > 0 {
		w = append(w, fmt.Sprintf("the %s left outside the KV pool ((1 − %.3f) × free memory at startup) is less than the %s estimated for the request table (%s), a %d-token prefill chunk (%s) and CUDA graphs up to batch %d (%s): SGLang may run out of memory while capturing graphs or serving; lower mem_fraction_static",
			units.FormatIEC(st.reserve), s.frac, units.FormatIEC(need), units.FormatIEC(st.reqBytes), s.chunked, units.FormatIEC(st.act.bytes), s.graphBS, units.FormatIEC(st.graphs)))
	}
	if st.kv.sliding > 0 || st.kv.chunked > 0 {
		w = append(w, "sliding-window or chunked layers are counted as full-attention layers in SGLang's token pool (its hybrid SWA pool is not modelled): the token count is a lower bound")
	}
	if in.tp > 1 {
		w = append(w, "tensor parallelism: NCCL and custom all-reduce buffers taken before SGLang reads the free memory are not included")
	}
	return w
}
