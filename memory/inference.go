package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// Inference phases.
const (
	phaseVision  = "vision_encoder"
	phasePrefill = "prefill"
	phaseDecode  = "decode"
)

// Source citations shared by several rows.
const (
	srcKV       = "MODEL.md §7.2 (KV cache per layer and token); arXiv:2305.13245 (GQA)"
	srcAct      = "MODEL.md §7.4 (prefill / decode activation peak, no autograd)"
	srcWeights  = "MODEL.md §7.1 (weights), §6.2 (quantised storage)"
	srcLegacyKV = "MODEL.md §15.2 (transformers < 4.36 tuple cache: torch.cat keeps the previous tuple alive)"
)

// phaseParts is the allocated memory of one phase as rows of the breakdown.
type phaseParts struct {
	name  string
	parts []Component
}

// total sums the rows.
func (p phaseParts) total() units.Bytes {
	var t units.Bytes
	for _, c := range p.parts {
		t = units.Add(t, c.Bytes)
	}
	return t
}

// stageEstimate is the estimate of one GPU (one pipeline stage).
type stageEstimate struct {
	weights stageWeights
	phases  []phaseParts
	peak    int          // index into phases
	ctx     phaseContext // what the phases were built from
}

// estimateInference is the memory of generation with HF transformers
// (or vLLM kernels) on the most loaded GPU: weights, KV cache and the
// largest transient of the vision, prefill and decode phases, then
// fragmentation, CUDA context and workspaces. Serving jobs go to the vLLM
// capacity model.
func estimateInference(m *model.Model, job Job) (Result, error) {
	if job.Mode == Serving {
		return estimateServing(m, job)
	}
	in, err := resolveInference(m, job)
	if err != nil {
		return Result{}, fmt.Errorf("inference estimate: %w", err)
	}
	in.quiet = true
	best, err := mostLoadedStage(m, in)
	if err != nil {
		return Result{}, fmt.Errorf("inference estimate: %w", err)
	}
	in.quiet = false
	best.explainPeak()
	return in.result(m, job, best)
}

// explainPeak builds the peak phase again with the formulas and sources
// of its rows; its bytes are those of the quiet pass.
func (est *stageEstimate) explainPeak() {
	p := &est.phases[est.peak]
	switch p.name {
	case phaseVision:
		*p = est.ctx.vision()
	case phasePrefill:
		*p = est.ctx.prefill()
	case phaseDecode:
		*p = est.ctx.decode()
	}
}

// mostLoadedStage estimates every pipeline stage and returns the one with
// the highest allocated peak.
func mostLoadedStage(m *model.Model, in *inferenceInputs) (stageEstimate, error) {
	stages := stageRanges(m.Text.Layers, in.pp)
	var best stageEstimate
	var bestPeak units.Bytes = -1
	for s := range stages {
		est, err := in.stage(m, stages, s)
		if err != nil {
			return stageEstimate{}, err
		}
		if p := est.phases[est.peak].total(); p > bestPeak {
			best, bestPeak = est, p
		}
	}
	return best, nil
}

// stage builds the phases of pipeline stage s.
func (in *inferenceInputs) stage(m *model.Model, stages []stageRange, s int) (stageEstimate, error) {
	r := stages[s]
	w := weightsForStage(m, in.plan, stages, s, in.tp, in.ep)
	spec, err := buildKVSpec(&m.Text, r.lo, r.hi, in.kv, in.tp, in.engine)
	if err != nil {
		return stageEstimate{}, err
	}
	state, err := buildStateSpec(&m.Text, r.lo, r.hi, in.act, in.tp, in.engine)
	if err != nil {
		return stageEstimate{}, err
	}
	ctx := phaseContext{in: in, m: m, w: w, kv: spec, state: state, r: r, first: s == 0, last: s == len(stages)-1}
	var phases []phaseParts
	if ctx.first && m.Vision != nil && in.images > 0 {
		phases = append(phases, ctx.vision())
	}
	phases = append(phases, ctx.prefill())
	if in.gen > 1 {
		phases = append(phases, ctx.decode())
	}
	est := stageEstimate{weights: w, phases: phases, ctx: ctx}
	for i, p := range phases {
		if p.total() > phases[est.peak].total() {
			est.peak = i
		}
	}
	return est, nil
}

// phaseContext carries what every phase of one stage needs.
type phaseContext struct {
	in          *inferenceInputs
	m           *model.Model
	w           stageWeights
	kv          kvSpec
	state       stateSpec // recurrent layers' per-sequence state
	r           stageRange
	first, last bool
}

// weightsRow is the persistent weights component.
func (c phaseContext) weightsRow() Component {
	r := Component{Name: "weights", Bytes: c.w.total, Level: "allocated", Phase: "persistent"}
	if !c.in.quiet {
		r.Formula, r.Source = weightsFormula(c.in.plan, c.w, c.in.tp, c.in.pp, c.in.ep), srcWeights+"; "+c.in.plan.quant.Source
	}
	return r
}

// kvRow is the KV cache of batch sequences of tokens self-attended tokens.
func (c phaseContext) kvRow(phase string, tokens int64) Component {
	in := c.in
	switch {
	case in.noKV:
		return Component{Name: "kv_cache", Level: "allocated", Phase: phase, Formula: "no_kv_cache: nothing cached", Source: srcKV}
	case in.encoderOnly:
		return Component{Name: "kv_cache", Level: "allocated", Phase: phase, Formula: "encoder-only model: one forward, nothing cached", Source: srcKV}
	}
	b := units.Bytes(units.MulInt(int64(c.in.kvBytesPerSeq(c.kv, tokens)), in.batch))
	if in.quiet {
		return Component{Name: "kv_cache", Bytes: b, Level: "allocated", Phase: phase}
	}
	f := fmt.Sprintf("batch %d × [%d tokens × %d full-attention B/token", in.batch, tokens, c.kv.full)
	if c.kv.sliding > 0 {
		f += fmt.Sprintf(" + min(tokens, window %d) × %d sliding B/token", c.kv.window, c.kv.sliding)
	}
	if c.kv.chunked > 0 {
		f += fmt.Sprintf(" + min(tokens, chunk %d) × %d chunked B/token", c.kv.chunk, c.kv.chunked)
	}
	if c.kv.cross > 0 {
		f += fmt.Sprintf(" + %d cross-attended tokens × %d B/token", in.crossTokens, c.kv.cross)
	}
	f += fmt.Sprintf("]; one layer = %s, %s", c.kv.formula, in.kv.Name)
	src := srcKV
	if c.m.Text.MLA != nil {
		src += "; arXiv:2405.04434 §2.1 (MLA)"
	}
	return Component{Name: "kv_cache", Bytes: b, Level: "allocated", Phase: phase, Formula: f, Source: src}
}

// kvBytesPerSeq is one sequence's cache at tokens self-attended tokens.
func (in *inferenceInputs) kvBytesPerSeq(k kvSpec, tokens int64) units.Bytes {
	return k.seqBytes(tokens, in.crossTokens)
}

// vision is the vision-tower pass before the language model runs.
func (c phaseContext) vision() phaseParts {
	in := c.in
	images := units.MulInt(in.batch, in.images)
	llm := units.MulInt(in.batch, max(in.imageTokens, in.crossTokens))
	t := visionTransient(c.m.Vision, in.imageShape, images, in.attn, in.act.BytesPerElement(), c.m.Text.Hidden, llm)
	return phaseParts{name: phaseVision, parts: append(c.persistent(),
		Component{Name: "activations", Bytes: t.bytes, Level: "allocated", Phase: phaseVision, Formula: t.formula,
			Source: "MODEL.md §9 (vision tower as a pre-LN ViT), §7.4"})}
}
