package memory

import (
	"fmt"
	"strconv"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// Phases of a training step (MODEL.md §11), in the order they run.
const (
	PhaseForward     = "forward"      // end of the layers' forward
	PhaseLoss        = "loss"         // output layer + cross-entropy, and the start of its backward
	PhaseBackward    = "backward"     // backward of the first (top) layer
	PhaseBackwardEnd = "backward_end" // backward of the last recording (bottom) layer
	PhaseStep        = "step"         // optimizer step
)

// phase indexes.
const (
	phForward = iota
	phLoss
	phBackward
	phBackwardEnd
	phStep
	numPhases
)

// assemble writes the five phases out by hand: this fails to compile
// when a phase is added or removed.
var _ = [1]struct{}{}[numPhases-5]

// phaseNames are the names of the phase indexes.
var phaseNames = [numPhases]string{PhaseForward, PhaseLoss, PhaseBackward, PhaseBackwardEnd, PhaseStep}

// comp is one breakdown row with its bytes in every phase.
type comp struct {
	v      [numPhases]float64
	always bool // report even when zero at the peak
}

// trainParts is everything a training estimate is assembled from.
type trainParts struct {
	p    trParams
	st   rankStates
	act  actTotals
	loss lossTerms
	comm [numPhases]float64
	ov   Overheads
	// rows are the breakdown rows of the parts above (ov aside), built
	// once by stageRows for the stream pools and the totals.
	rows     [numRows]comp
	haveRows bool
}

// stageRows returns the rows of t, building them on first use: t's
// parts but ov are set by then and stay as they are.
func (s *setup) stageRows(t *trainParts) *[numRows]comp {
	if !t.haveRows {
		s.rows(t, &t.rows)
		t.haveRows = true
	}
	return &t.rows
}

// estimateTraining is the training memory model: model states, activations,
// the output layer and loss, transients and runtime overheads over the
// phases of one step; the allocated peak is the largest phase (MODEL.md §11).
// With pipeline parallelism every stage is estimated and the most loaded
// one is the answer.
// The result is written to res, which job must not alias.
func estimateTraining(m *model.Model, job *Job, res *Result) error {
	return estimateTrainingBuf(m, job, res, nil, nil)
}

// estimateTrainingBuf is estimateTraining writing into buf, which the
// result then points into; with buf nil the result's memory is
// allocated. tab is m's inventory table, or nil to make one.
func estimateTrainingBuf(m *model.Model, job *Job, res *Result, buf *trainBuf, tab *modTab) error {
	var s setup
	if tab == nil {
		tab = newModTab(m)
	}
	s.tab, s.buf = tab, buf
	if buf != nil {
		s.warnings = buf.warnings[:0]
	}
	if err := s.initJob(m, job); err != nil {
		return err
	}
	if s.dist.pp > 1 {
		attachBand(res, s.estimateStages(res))
		return nil
	}
	if buf != nil {
		s.out = &buf.out
	}
	var t trainParts
	s.stageParts(&t)
	attachBand(res, s.assemble(&t, res))
	if buf != nil && res.Warnings != nil {
		// Keep the warnings' memory for the next call; report none as
		// Estimate does.
		buf.warnings = res.Warnings[:0]
		if len(res.Warnings) == 0 {
			res.Warnings = nil
		}
	}
	return nil
}

// trainBox holds the parts of a training result allocated together:
// the phase totals and the band with room for its terms.
type trainBox struct {
	phases [numPhases]Phase
	bandBox
}

// stageParts computes the parts of the current pipeline stage.
func (s *setup) stageParts(t *trainParts) {
	t.p = s.countParams()
	t.st = s.modelStates(&t.p)
	s.batchParts(t)
}

// batchParts computes the parts of the current stage that depend on the
// micro-batch, given the parameter counts and model states (t.p, t.st),
// which do not.
func (s *setup) batchParts(t *trainParts) {
	d := &s.dist
	t.act = s.activations()
	if d.pp == 1 || d.last {
		t.loss = s.lossMemory() // the output layer runs on the last stage
	}
	// Vocab-parallel logits and cross-entropy (Megatron, torchtitan
	// loss_parallel); context parallelism splits the tokens.
	if k := float64(d.tp * d.cp); k > 1 {
		t.loss.peak /= k
		t.loss.held /= k
		t.loss.persist /= k
	}
	t.comm = s.commBuffers(&t.st, &t.p)
	t.ov = s.trainOverheads(t) // its Warning is the job's, given by initJob
}

// estimateStages estimates every pipeline stage and writes the most
// loaded one (the largest device peak) to res, listing all of them in
// Stages. It returns the band box of the chosen stage.
func (s *setup) estimateStages(res *Result) *bandBox {
	d := &s.dist
	var stages []StageResult
	if b := s.buf; b != nil {
		if len(b.stages) < d.pp {
			b.stages = make([]outBuf, d.pp)
			b.results = make([]StageResult, d.pp)
		}
		stages = b.results[:d.pp]
	} else {
		stages = make([]StageResult, d.pp)
	}
	var best Result
	var bestBox *bandBox
	warnings := s.warnings
	for i := range d.pp {
		s.setStage(i)
		s.warnings = warnings[:len(warnings):len(warnings)]
		if s.buf != nil {
			s.out = &s.buf.stages[i]
		}
		var t trainParts
		s.stageParts(&t)
		var r Result
		box := s.assemble(&t, &r)
		stages[i] = StageResult{Stage: i, FirstLayer: d.stageLo, Layers: d.stageLayers, InFlight: d.inFlight,
			Embedding: d.first, OutputLayer: d.last, PerGPU: r.PerGPU}
		if i == 0 || r.PerGPU.DevicePeakBytes > best.PerGPU.DevicePeakBytes {
			best, bestBox = r, box
		}
	}
	best.Stages = stages
	best.Warnings = append(best.Warnings, "--pp "+strconv.Itoa(d.pp)+": pipeline stage "+strconv.Itoa(best.Parallel.PeakStage)+
		" is the most loaded; every stage's figures are in the stage table (stages in the JSON output)")
	*res = best
	return bestBox
}

// peakTraining is estimateTrainingBuf without the breakdown: the job's
// per-GPU peaks (see [Estimator.Peak]).
//
// With a sweep (a job whose micro-batch alone changes from call to call,
// see [Sweep]) each stage's module shares, parameter counts and model
// states, which do not depend on the micro-batch, are computed once.
//
// A sweep also keeps the job's set-up: for the next micro-batch only
// what follows from the micro-batch is set again (setMicroBatch).
func peakTraining(m *model.Model, job *Job, buf *trainBuf, tab *modTab, limit units.Bytes, sw *Sweep) (Peaks, error) {
	var s setup
	if sw != nil && sw.setUp {
		if err := checkMicroBatch(job); err != nil {
			return Peaks{}, err
		}
		s = sw.base
		s.setMicroBatch()
	} else {
		s.tab, s.buf = tab, buf
		s.warnings = buf.warnings[:0]
		if err := s.initJob(m, job); err != nil {
			return Peaks{}, err
		}
		if sw != nil {
			sw.base, sw.setUp = s, true
		}
	}
	var p Peaks
	if s.dist.pp > 1 {
		p = s.stagePeaks(limit, sw)
	} else {
		var t trainParts
		s.cachedParts(&t, sw.stage(0), false)
		p = s.peaksOf(&t)
	}
	if sw != nil {
		sw.base.acts = s.acts // for the next micro-batch too
	}
	buf.warnings = s.warnings[:0] // keep their memory for the next call
	return p, nil
}

// cachedParts is stageParts for the current stage, whose parts that do
// not depend on the micro-batch c holds once it is filled (c.ok); a nil c
// keeps nothing. With fracs, the stage's module shares come from c too
// (or are computed by fillFracs and kept).
func (s *setup) cachedParts(t *trainParts, c *sweepStage, fracs bool) {
	switch {
	case c == nil:
		if fracs {
			s.fillFracs()
		}
		s.stageParts(t)
		return
	case c.ok:
		if fracs {
			s.fracs, s.unitFracs = c.fracs, c.unit
		}
		t.p, t.st = c.p, c.st
		s.batchParts(t)
		return
	}
	if fracs {
		s.fillFracs()
	}
	s.stageParts(t)
	c.ok, c.fracs, c.unit, c.p, c.st = true, append(c.fracs[:0], s.fracs...), s.unitFracs, t.p, t.st
}

// peaksOf is assemble without the breakdown: the current stage's peaks,
// summed from the same rounded rows.
func (s *setup) peaksOf(t *trainParts) Peaks {
	rows := s.stageRows(t)
	var totals [numPhases]units.Bytes
	for i := range rows {
		v := &rows[i].v
		switch {
		case v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 0 && v[4] == 0:
			// Nothing to add (about half the rows of most jobs).
		case v[0] == v[1] && v[0] == v[2] && v[0] == v[3] && v[0] == v[4]:
			// The same all step long (weights, states): round once.
			b := units.FromFloat(v[0])
			totals[0], totals[1], totals[2] = units.Add(totals[0], b), units.Add(totals[1], b), units.Add(totals[2], b)
			totals[3], totals[4] = units.Add(totals[3], b), units.Add(totals[4], b)
		default:
			totals[0], totals[1], totals[2] = units.Add(totals[0], units.FromFloat(v[0])), units.Add(totals[1], units.FromFloat(v[1])), units.Add(totals[2], units.FromFloat(v[2]))
			totals[3], totals[4] = units.Add(totals[3], units.FromFloat(v[3])), units.Add(totals[4], units.FromFloat(v[4]))
		}
	}
	peak := 0
	for ph := 1; ph < numPhases; ph++ {
		if totals[ph] > totals[peak] {
			peak = ph
		}
	}
	u := s.upperPeaks(t, totals[peak], s.ncclBytes())
	return Peaks{AllocatedBytes: totals[peak], ReservedBytes: u.reserved, DeviceBytes: u.device, Phase: phaseNames[peak], Stage: s.dist.stage}
}

// stagePeaks is estimateStages without the breakdown: the peaks of the
// most loaded pipeline stage. It skips a middle stage that repeats the
// last middle stage estimated with no more micro-batches in flight
// (sameStage): all its parts but the activations are the same, and
// those scale with the micro-batches in flight, so its peaks are no
// larger. Estimate lists every stage, so its answer is the same.
//
// With a limit above zero it returns the first stage whose device peak
// is above limit: the job's is at least as large.
func (s *setup) stagePeaks(limit units.Bytes, sw *Sweep) Peaks {
	d := &s.dist
	var best Peaks
	var rep stageShape
	warnings := len(s.warnings)
	whole := s.layerModulesWhole()
	var t trainParts
	for k := range d.pp {
		// The last stage first: with the output layer and the loss it is
		// the most loaded as often as the first, so a limit stops sooner.
		i := k - 1
		if k == 0 {
			i = d.pp - 1
		}
		s.placeStage(i)
		if whole && rep.sameLayout(s) {
			continue // its module shares equal rep's: no need to compute them
		}
		c := sw.stage(i)
		if c != nil && c.ok {
			s.fracs, s.unitFracs = c.fracs, c.unit
		} else {
			s.fillFracs()
		}
		if rep.same(s) {
			continue
		}
		s.warnings = s.warnings[:warnings]
		// t is reused: every part is set again but the loss, which only
		// the last stage has.
		t.loss, t.haveRows = lossTerms{}, false
		s.cachedParts(&t, c, false)
		p := s.peaksOf(&t)
		if limit > 0 && p.DeviceBytes > limit {
			return p
		}
		if k == 0 || p.DeviceBytes > best.DeviceBytes || p.DeviceBytes == best.DeviceBytes && i < best.Stage {
			best = p // the lowest of equally loaded stages, as Estimate picks
		}
		rep.set(s)
	}
	return best
}

// stageShape is what makes two middle pipeline stages the same apart
// from the micro-batches in flight: their layer count, the share of each
// module they hold, and where the recording layers start.
type stageShape struct {
	ok       bool // a middle stage of a stack with one layer type
	lo       int
	layers   int
	inFlight float64
	trained  int8 // trainedLayers of the stage
	fracs    []float64
}

// trainedLayers tells how the trained layer range of a job (--trainable
// layers:A-B or top:N, PEFT modules_to_save) meets the current stage:
// 0 misses it, 1 covers all of it, -1 covers part of it.
func (s *setup) trainedLayers() int8 {
	t, d := &s.trainable, &s.dist
	switch {
	case t.lo > t.hi || t.hi < d.stageLo || t.lo >= d.stageHi:
		return 0
	case t.lo <= d.stageLo && t.hi >= d.stageHi-1:
		return 1
	}
	return -1
}

// set records the current stage as the one to compare the next with.
func (r *stageShape) set(s *setup) {
	d := &s.dist
	r.ok = !d.first && !d.last && s.tab.oneLayerType
	if !r.ok {
		return
	}
	r.lo, r.layers, r.inFlight, r.trained = d.stageLo, d.stageLayers, d.inFlight, s.trainedLayers()
	if s.buf != nil {
		r.fracs = append(s.buf.shape[:0], s.fracs...)
		s.buf.shape = r.fracs
	} else {
		r.fracs = append(r.fracs[:0], s.fracs...)
	}
}

// same reports whether the current stage is a middle stage that repeats
// r with no more micro-batches in flight: the layer stack has one layer
// type, so equal layer counts and module shares give equal parameters,
// states, buffers and per-micro-batch activations, provided every
// layer of both stages records (the lowest trainable layer is below r,
// so neither holds it — it saves less, and only where it is) and a
// trained layer range covers all of both stages or none of either.
func (r *stageShape) same(s *setup) bool {
	if !r.sameLayout(s) || len(s.fracs) != len(r.fracs) {
		return false
	}
	for i, f := range s.fracs {
		if f != r.fracs[i] {
			return false
		}
	}
	return true
}

// sameLayout is same without the module shares: the current stage is a
// middle stage with r's layer count, no more micro-batches in flight and
// the same trained layers, and r is one too.
func (r *stageShape) sameLayout(s *setup) bool {
	d := &s.dist
	return r.ok && !d.first && !d.last && d.stageLayers == r.layers && d.inFlight <= r.inFlight &&
		s.trainable.lowest < r.lo && r.trained >= 0 && s.trainedLayers() == r.trained
}

// layerModulesWhole reports whether every module of the text layers
// spans the whole stack (none is a run of some of its layers, as MoE and
// dense runs are). Then two middle pipeline stages with as many layers
// hold equal shares of every module: the layer modules' shares are the
// layer count over the stack's (times the tensor and expert splits), and
// the modules outside the layers sit on the first or the last stage
// (fracOf).
func (s *setup) layerModulesWhole() bool {
	L := s.m.Text.Layers
	for i := range s.m.Modules {
		if mod := &s.m.Modules[i]; mod.Stack == stackText && mod.Layer >= 0 && (mod.Layer != 0 || max(mod.Layers, 1) != L) {
			return false
		}
	}
	return true
}

// rows builds the allocated-level rows with their per-phase bytes.
func (s *setup) rows(t *trainParts, out *[numRows]comp) {
	st, a, l := &t.st, &t.act, &t.loss
	all := func(v float64) (r [numPhases]float64) {
		r = [numPhases]float64{v, v, v, v, v}
		return
	}
	out[rowWeights] = comp{v: all(st.weights), always: true}
	out[rowAdapters] = comp{v: all(st.adapters)}
	out[rowMaster] = comp{v: all(st.master)}
	out[rowGrads] = comp{v: s.gradPhases(t), always: true}
	if !st.optim.paged {
		out[rowOptim] = comp{v: all(st.optim.states), always: true}
	}
	out[rowCast] = comp{v: s.castPhases(t)}
	out[rowActs] = comp{v: [numPhases]float64{a.fwd, a.fwd, a.top, a.bottom, 0}, always: true}
	out[rowVision] = comp{v: [numPhases]float64{a.vision, a.vision, a.vision, a.vision, 0}}
	out[rowEncoder] = comp{v: [numPhases]float64{a.encoder, a.encoder, a.encoder, a.encoder, 0}}
	out[rowOut] = comp{v: [numPhases]float64{a.out, a.out, 0, 0, 0}}
	out[rowMask] = comp{v: [numPhases]float64{a.mask, a.mask, a.mask, a.mask, 0}}
	heldStep := l.persist
	if s.loss == lossLitGPTChunked {
		heldStep = l.held
	}
	out[rowLoss] = comp{v: [numPhases]float64{l.persist, l.peak, l.held, l.held, heldStep}, always: s.loss != lossNone}
	out[rowBwd] = comp{v: [numPhases]float64{0, 0, a.trans, a.trans, 0}}
	if s.optInBwd {
		out[rowStep] = comp{v: [numPhases]float64{0, 0, st.optim.transient, st.optim.transient, 0}}
	} else {
		out[rowStep] = comp{v: [numPhases]float64{0, 0, 0, 0, st.optim.transient}}
	}
	out[rowComm] = comp{v: t.comm}
	out[rowDequant] = comp{v: [numPhases]float64{st.dequant, st.dequant, st.dequant, st.dequant, 0}}
}

// Row indexes of the allocated-level breakdown.
const (
	rowWeights = iota
	rowAdapters
	rowMaster
	rowGrads
	rowOptim
	rowCast
	rowActs
	rowVision
	rowEncoder
	rowOut
	rowMask
	rowLoss
	rowBwd
	rowStep
	rowDequant
	rowComm
	numRows
)

// gradPhases is when gradients are alive (MODEL.md §11, §15.4): all the
// time with gradient accumulation or torch 1.x zero_grad (set_to_none
// False); otherwise they appear during backward (lm_head's first, the
// embedding's last); with the optimizer in backward, one tensor at a time.
func (s *setup) gradPhases(t *trainParts) [numPhases]float64 {
	g := t.st.grads
	switch {
	case s.optInBwd:
		one := t.p.maxTensor * s.gradElemBytes(s.method == MethodLoRA || s.method == MethodQLoRA)
		return [numPhases]float64{0, 0, one, one, 0}
	case s.accum > 1 || s.torch1 || s.gradsPersist():
		return [numPhases]float64{g, g, g, g, g}
	}
	return [numPhases]float64{0, 0, t.st.gradsHead, g - t.st.gradsEmb, g}
}

// gradsPersist reports whether the engine allocates the gradients once
// and keeps them: Megatron's contiguous main_grad buffer, DDP buckets
// that are the gradients (gradient_as_bucket_view), DeepSpeed ZeRO-3's
// gradient partitions — one flat buffer of every trainable parameter's
// partition, zero-filled when the optimizer is built (stage3.py
// _setup_for_real_optimizer: grad_partitions_flat_buffer, cut into
// __param_id_to_grad_partition) and never freed; zero_grad drops only
// the parameters' .grad references (MODEL.md §3.3).
func (s *setup) gradsPersist() bool {
	switch s.dist.engine {
	case engineMegatron:
		return true
	case engineDDP:
		return s.job.GradientAsBucketView
	case engineDeepSpeed:
		return s.dist.zero == 3
	}
	return false
}

// castPhases is the life of the AMP weight copies (MODEL.md §2.2, §15.9):
// saved by the matmuls until each layer's backward; with (reentrant)
// checkpointing only through the forward, plus lm_head and the
// recomputed layer in backward.
func (s *setup) castPhases(t *trainParts) [numPhases]float64 {
	cc, head := t.st.castCache, t.st.castHead
	if cc == 0 {
		return [numPhases]float64{}
	}
	perLayer := (cc - head) / float64(max(t.act.nrec, 1))
	if s.ckpt == ckptFull {
		return [numPhases]float64{cc, head, head + perLayer, perLayer, 0}
	}
	return [numPhases]float64{cc, cc, cc, perLayer, 0}
}

// assemble turns the parts into a Result: per-phase totals, the peak
// phase, the rows at the peak and the reserved/device peaks, written to
// res. It returns the band box allocated with the phases.
func (s *setup) assemble(t *trainParts, res *Result) *bandBox {
	rows := s.stageRows(t)
	// Each row's bytes in each phase, rounded once: the totals are sums
	// of the rounded rows, so the breakdown adds up to the peak.
	// A row's largest size and its phase come out of the same pass.
	var totals [numPhases]units.Bytes
	var rounded [numRows][numPhases]units.Bytes
	var most [numRows]units.Bytes
	var mostPh [numRows]int
	for i := range rows {
		v := &rows[i].v
		if v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 0 && v[4] == 0 {
			continue
		}
		r := &rounded[i]
		// The five phases written out: this loop runs for every row of
		// every estimate.
		r[0], r[1], r[2], r[3], r[4] = units.FromFloat(v[0]), units.FromFloat(v[1]), units.FromFloat(v[2]), units.FromFloat(v[3]), units.FromFloat(v[4])
		totals[0], totals[1], totals[2] = units.Add(totals[0], r[0]), units.Add(totals[1], r[1]), units.Add(totals[2], r[2])
		totals[3], totals[4] = units.Add(totals[3], r[3]), units.Add(totals[4], r[4])
		mx, ph := r[0], 0
		if r[1] > mx {
			mx, ph = r[1], 1
		}
		if r[2] > mx {
			mx, ph = r[2], 2
		}
		if r[3] > mx {
			mx, ph = r[3], 3
		}
		if r[4] > mx {
			mx, ph = r[4], 4
		}
		most[i], mostPh[i] = mx, ph
	}
	peak := 0
	for ph := 1; ph < numPhases; ph++ {
		if totals[ph] > totals[peak] {
			peak = ph
		}
	}
	// The breakdown is allocated at its exact size.
	// A row is listed when it is ever alive in the step (or always
	// shown), with its size at the peak and, if larger elsewhere, its
	// largest size and phase.
	nccl := s.ncclBytes()
	var comps []Component
	var box *trainBox
	if s.out != nil {
		comps, box = s.out.comps[:0], &s.out.box
	} else {
		n := 0
		for i := range rows {
			if rows[i].always || most[i] > 0 {
				n++
			}
		}
		comps, box = make([]Component, 0, n+s.extraRows(t, nccl)), new(trainBox)
	}
	for i := range rows {
		if most[i] == 0 && !rows[i].always {
			continue
		}
		b := rounded[i][peak]
		info := &rowInfo[i]
		comps = append(comps, Component{Name: info.name, Bytes: b, Level: "allocated", Phase: info.phase,
			Formula: info.formula, Source: info.source})
		if most[i] > b {
			c := &comps[len(comps)-1]
			c.MaxBytes, c.MaxPhase = most[i], phaseNames[mostPh[i]]
		}
	}
	alloc := totals[peak]
	u := s.upperPeaks(t, alloc, nccl)
	reserved, device := u.reserved, u.device
	comps = t.ov.appendRows(comps, alloc, s.job.Explain)
	if t.st.optim.paged {
		comps = append(comps, Component{Name: "optimizer_states", Bytes: u.paged, Level: "device", Phase: "persistent",
			Formula: rowInfo[rowOptim].formula + " (paged: CUDA unified memory outside torch's allocator, resident up to the GPU's free memory)",
			Source:  "bitsandbytes optim/optimizer.py get_state_buffer, functional.py get_paged (MODEL.md §2.4, §10)"})
	}
	if nccl > 0 {
		comps = append(comps, Component{Name: "nccl", Bytes: u.nccl, Level: "device", Phase: "persistent",
			Formula: "communicators × nccl_mib", Source: "NVIDIA/nccl src/init.cc buffer defaults (MODEL.md §10)"})
	}
	if u.cut > 0 {
		releaseCached(comps, u.cut)
		s.warn(fmt.Sprintf("reserved peak held to the GPU's %s (cached blocks %s instead of %s): the caching allocator frees cached blocks and retries before it runs out; expect allocator retries, and out-of-memory errors if the free memory is too fragmented",
			units.FormatIEC(u.limit), units.FormatIEC(reserved-alloc), units.FormatIEC(u.uncapped-alloc)))
	}
	for ph := range numPhases {
		box.phases[ph] = Phase{Name: phaseNames[ph], Bytes: totals[ph]}
	}
	// Field by field rather than a composite literal: the Result is
	// large and this writes it once, in place.
	*res = Result{}
	res.Model, res.Architecture = s.m.ID, s.m.Architecture
	res.TotalParams = t.p.total
	if !s.haveTrained {
		// The whole model's count, the same for every pipeline stage.
		s.trained, s.haveTrained = s.modelTrainable(&t.p), true
	}
	res.TrainableParams = int64(s.trained + 0.5)
	res.ActiveParams = s.tab.active
	res.Job = *s.job
	pg := &res.PerGPU
	pg.AllocatedPeakBytes, pg.ReservedPeakBytes, pg.DevicePeakBytes = alloc, reserved, device
	pg.PeakPhase = phaseNames[peak]
	pg.Components, pg.Phases = comps, box.phases[:]
	res.Warnings = s.warnings
	if t.st.hostCPU > 0 || t.st.hostNVMe > 0 {
		// Host memory is per node: every rank of the node offloads its share.
		perNode := float64(max(s.dist.world/max(s.dist.nodes, 1), 1))
		h := Host{CPUBytes: units.FromFloat(t.st.hostCPU * perNode), NVMeBytes: units.FromFloat(t.st.hostNVMe * perNode),
			GPUsPerNode: int(perNode)}
		if s.out != nil {
			s.out.host = h
			res.Host = &s.out.host
		} else {
			res.Host = new(Host)
			*res.Host = h
		}
	}
	if p, ok := s.parallelInfo(t); ok {
		if s.out != nil {
			s.out.parallel = p
			res.Parallel = &s.out.parallel
		} else {
			res.Parallel = new(Parallel)
			*res.Parallel = p
		}
	}
	if s.job.Explain {
		s.explain(t, res.PerGPU.Components)
	}
	if limit := s.gpuMemory(t); limit > 0 && device > limit {
		res.Warnings = append(res.Warnings, fmt.Sprintf("device peak %s exceeds the GPU's %s", units.FormatIEC(device), units.FormatIEC(limit)))
	}
	return &box.bandBox
}

// extraRows is the number of breakdown rows assemble writes after the
// allocated ones: the overhead rows, paged optimizer states and NCCL.
func (s *setup) extraRows(t *trainParts, nccl float64) int {
	n := t.ov.rowCount()
	if t.st.optim.paged {
		n++
	}
	if nccl > 0 {
		n++
	}
	return n
}

// upper is what lies above an allocated peak: the reserved and device
// peaks, and the device-level rows assemble lists.
type upper struct {
	reserved, device units.Bytes
	paged            units.Bytes // paged optimizer states resident on the GPU
	nccl             units.Bytes // NCCL communicator buffers
	// cut is the cached memory released to stay within the GPU (0 when
	// the reserved peak fits); uncapped is the reserved peak before
	// that and limit the GPU's memory.
	cut, uncapped, limit units.Bytes
}

// upperPeaks is the reserved and device peaks over the allocated peak
// alloc, with nccl bytes of NCCL buffers per GPU.
//
// Paged optimizer states live in CUDA unified memory: resident on the
// GPU while there is room, evicted to host memory beyond it.
//
// The reserved peak is bounded by the GPU: when the caching allocator
// cannot grow its cache it frees the unused cached blocks and retries
// the allocation (num_alloc_retries; pytorch/pytorch
// c10/cuda/CUDACachingAllocator.cpp release_cached_blocks) before it
// reports out of memory, so reserved never exceeds the GPU memory left
// after the context, workspaces and NCCL. assemble shrinks the reserved
// rows by cut: idle communication-stream pools first, then
// fragmentation (releaseCached).
func (s *setup) upperPeaks(t *trainParts, alloc units.Bytes, nccl float64) upper {
	reserved := t.ov.Reserved(alloc)
	u := upper{reserved: reserved, device: t.ov.Device(reserved), uncapped: reserved, limit: s.gpuMemory(t)}
	if t.st.optim.paged {
		u.paged = units.FromFloat(t.st.optim.states)
		if u.limit > 0 {
			u.paged = max(0, min(u.paged, u.limit-u.device))
		}
		u.device = units.Add(u.device, u.paged)
	}
	if nccl > 0 {
		u.nccl = units.FromFloat(nccl)
		u.device = units.Add(u.device, u.nccl)
	}
	if u.limit <= 0 {
		return u
	}
	avail := u.limit - (u.device - u.reserved)
	if u.reserved <= avail || alloc > avail {
		return u
	}
	u.cut = u.reserved - avail
	u.reserved, u.device = avail, u.device-u.cut
	return u
}

// activeParams is the parameter count one token uses: routed experts
// count ExpertsPerToken of Experts (MODEL.md §1.2).
func activeParams(m *model.Model) int64 {
	var n int64
	for i := range m.Modules {
		mod := &m.Modules[i]
		if mod.Expert && m.Text.MoE != nil && m.Text.MoE.Experts > 0 {
			n += mod.Params / int64(m.Text.MoE.Experts) * int64(m.Text.MoE.ExpertsPerToken)
			continue
		}
		n += mod.Params
	}
	return n
}

// gpuMemory is the memory of the job's GPU: Job.GPUMemory, else the
// known GPU kind's; 0 when neither is known.
func (s *setup) gpuMemory(t *trainParts) units.Bytes {
	if s.job.GPUMemory > 0 {
		return s.job.GPUMemory
	}
	return t.ov.GPU.Memory
}
