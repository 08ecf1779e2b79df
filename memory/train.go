package memory

import (
	"fmt"
	"math/bits"
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

// trainParts is everything a training estimate is assembled from.
type trainParts struct {
	p    trParams
	st   rankStates
	act  actTotals
	loss lossTerms
	comm [numPhases]float64
	// engine is the engine's part of comm and pools the communication
	// stream pools (poolsOK: the stage has some): set with p and st,
	// as they do not depend on the micro-batch either.
	engine  [numPhases]float64
	pools   fsdpPools
	poolsOK bool
	// alloc is the caching allocator's share of the model states
	// (alloc_model.go), set with them.
	alloc allocFoot
	// rows is the row table of the parts above, built once they are set
	// (ov, which the stream pools read it for, aside).
	rows rowTable
	ov   Overheads
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
		if buf != nil {
			buf.warnings = res.Warnings[:0] // never empty: the pipeline note
		}
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
	// loading is Result.Loading; the switches are what the resolved
	// job's pointers point to (resolvedTrainingJob).
	loading                                       Loading
	packed, double, lowCPU, zeroInit, rank0, sync bool
}

// stageParts computes the parts of the current pipeline stage, writing
// every field of t.
func (s *setup) stageParts(t *trainParts) {
	s.staticParts(t)
	s.batchParts(t, nil)
}

// staticParts computes the parts of the current stage that do not
// depend on the micro-batch: parameters, model states, engine buffers
// and communication-stream pools.
func (s *setup) staticParts(t *trainParts) {
	t.p = s.countParams()
	t.st = s.modelStates(&t.p)
	t.alloc = s.allocFootprint(&t.st)
	t.engine = s.engineBuffers(&t.st, &t.p)
	t.pools, t.poolsOK = s.commPools(t)
}

// batchParts computes the parts of the current stage that depend on the
// micro-batch, given those that do not (t.p, t.st, t.engine, t.pools).
// pre, if not nil, keeps the lean row table's rows that do not depend
// on the micro-batch either (staticRows): filled by the first call,
// read by the next ones.
func (s *setup) batchParts(t *trainParts, pre *rowPrefix) {
	d := &s.dist
	t.act = s.activations()
	if d.pp == 1 || d.last {
		t.loss = s.lossMemory() // the output layer runs on the last stage
	} else {
		t.loss = lossTerms{} // t may hold another stage's parts
	}
	// Vocab-parallel logits and cross-entropy (Megatron, torchtitan
	// loss_parallel); context parallelism splits the tokens.
	if k := float64(d.tp * d.cp); k > 1 {
		t.loss.peak /= k
		t.loss.held /= k
		t.loss.persist /= k
	}
	t.comm = t.engine
	if !s.dist.single {
		par := s.parallelBuffers()
		for ph := range numPhases {
			t.comm[ph] += par[ph]
		}
	}
	tab := &t.rows
	switch {
	case pre == nil || !s.leanRows || tab.f != nil:
		tab.reset(s.leanRows)
		s.staticRows(t, tab)
	case pre.ok:
		pre.restore(tab)
	default:
		tab.reset(true)
		s.staticRows(t, tab)
		pre.save(tab)
	}
	s.batchRows(t, tab)
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
	// Each stage is assembled into one of two Results, res and spare,
	// while the other holds the most loaded stage so far: assemble
	// writes every field, so neither is zeroed or copied per stage.
	var spare Result
	cur, best := res, &spare
	var bestBox *bandBox
	warnings := s.warnings
	var t trainParts // stageParts writes all of it
	for i := range d.pp {
		s.setStage(i)
		s.warnings = warnings[:len(warnings):len(warnings)]
		if s.buf != nil {
			s.out = &s.buf.stages[i]
		}
		s.stageParts(&t)
		box := s.assemble(&t, cur)
		stages[i] = StageResult{Stage: i, FirstLayer: d.stageLo, Layers: d.stageLayers, InFlight: d.inFlight,
			Embedding: d.first, OutputLayer: d.last, PerGPU: cur.PerGPU}
		if i == 0 || cur.PerGPU.DevicePeakBytes > best.PerGPU.DevicePeakBytes {
			cur, best, bestBox = best, cur, box
		}
	}
	if best != res {
		*res = *best
	}
	res.Stages = stages
	// The stages' warnings start with the job's (capped above so that no
	// stage writes over another's); put them back in the job's buffer,
	// which has room for the note.
	res.Warnings = append(append(warnings, res.Warnings[len(warnings):]...), s.pipelineNote(d.pp, res.Parallel.PeakStage))
	return bestBox
}

// pipelineNote is the note naming the most loaded of pp stages, kept in
// the buffer for the next estimate of the same shape.
func (s *setup) pipelineNote(pp, peak int) string {
	if b := s.buf; b != nil && b.ppNote != "" && b.ppNoteFor == [2]int{pp, peak} {
		return b.ppNote
	}
	w := "pp=" + strconv.Itoa(pp) + ": pipeline stage " + strconv.Itoa(peak) +
		" is the most loaded; every stage's figures are in the stage table (stages in the JSON output)"
	if b := s.buf; b != nil {
		b.ppNote, b.ppNoteFor = w, [2]int{pp, peak}
	}
	return w
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
	if sw != nil && sw.setUp {
		if err := checkMicroBatch(job); err != nil {
			return Peaks{}, err
		}
		s := &sw.work // a copy of the set-up, not zeroed first
		*s = sw.base
		s.setMicroBatch()
		return s.peaks(limit, sw, buf), nil
	}
	var s setup
	s.tab, s.buf = tab, buf
	s.warnings = buf.warnings[:0]
	if err := s.initJob(m, job); err != nil {
		return Peaks{}, err
	}
	if sw != nil {
		sw.base, sw.setUp = s, true
	}
	return s.peaks(limit, sw, buf), nil
}

// peaks is peakTraining once the job is set up.
func (s *setup) peaks(limit units.Bytes, sw *Sweep, buf *trainBuf) Peaks {
	s.leanRows = true // the peaks read the row totals only
	var p Peaks
	if s.dist.pp > 1 {
		p = s.stagePeaks(limit, sw)
	} else {
		t := &buf.parts // every part is set again (cachedParts)
		s.cachedParts(t, sw.stage(0), false)
		p = s.peaksOf(t)
	}
	if sw != nil {
		sw.base.acts = s.acts // for the next micro-batch too
	}
	buf.warnings = s.warnings[:0] // keep their memory for the next call
	return p
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
		t.p, t.st, t.engine, t.pools, t.poolsOK, t.alloc = c.p, c.st, c.engine, c.pools, c.poolsOK, c.alloc
		s.batchParts(t, &c.rows)
		return
	}
	if fracs {
		s.fillFracs()
	}
	s.staticParts(t)
	c.rows.ok = false
	s.batchParts(t, &c.rows)
	c.ok, c.fracs, c.unit, c.p, c.st = true, append(c.fracs[:0], s.fracs...), s.unitFracs, t.p, t.st
	c.engine, c.pools, c.poolsOK, c.alloc = t.engine, t.pools, t.poolsOK, t.alloc
}

// peaksOf is assemble without the breakdown: the current stage's peaks,
// summed from the same rounded rows.
func (s *setup) peaksOf(t *trainParts) Peaks {
	tab := &t.rows
	peak := tab.peak()
	alloc := tab.totals[peak]
	u := s.upperPeaks(t, alloc, s.ncclBytes())
	return Peaks{AllocatedBytes: alloc, ReservedBytes: u.reserved, DeviceBytes: u.device, Phase: phaseNames[peak], Stage: s.dist.stage,
		HighBytes: s.peakHigh(t, peak, alloc, &u), LoadingBytes: s.loadingDevice(t)}
}

// peakHigh is the upper edge of the band of the current stage's device
// peak: the rows the band reads, as assemble would list them at the peak
// phase (the same roundings, the fragmentation row after the cached
// blocks released to stay within the GPU), fed to the band's terms.
func (s *setup) peakHigh(t *trainParts, peak int, alloc units.Bytes, u *upper) units.Bytes {
	var r bandRows
	r.frag = t.ov.fragmentation(alloc)
	if u.cut > 0 {
		// releaseCached: the stream pools' cache goes first.
		r.frag -= min(r.frag, max(0, u.cut-t.ov.StreamCache))
	}
	r.ctx, r.nccl = t.ov.CUDAContext, u.nccl
	a, l := &t.act, &t.loss
	acts := [numPhases]float64{a.fwd, a.fwd, a.top, a.bottom, 0}
	r.act = units.FromFloat(acts[peak])
	if peak <= phLoss {
		r.out = units.FromFloat(a.out)
	}
	heldStep := l.persist
	if s.loss == lossLitGPTChunked {
		heldStep = l.held
	}
	loss := [numPhases]float64{l.persist, l.peak, l.held, l.held, heldStep}
	r.loss = units.FromFloat(loss[peak])
	r.comm = units.FromFloat(t.comm[peak])
	p := PerGPU{AllocatedPeakBytes: alloc, DevicePeakBytes: u.device, PeakPhase: phaseNames[peak]}
	return bandHigh(s.job, bandEnvRules(s.job, s.rules), unstatedOf(s.job, &KeySet{}), &r, &p)
}

// stagePeaks is estimateStages without the breakdown: the peaks of the
// most loaded pipeline stage. It skips a middle stage that repeats the
// last middle stage estimated with no more micro-batches in flight
// (stageShape.same): all its parts but the activations are the same, and
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
	t := &s.buf.parts // reused: stageParts and cachedParts write all of it
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
		if whole && k > 1 && s.firstDominates() {
			// Stage 0, estimated, peaks no lower: the stages this one
			// would stand for are skipped too.
			rep.set(s)
			if s.middleRepeats(&rep) {
				break
			}
			continue
		}
		s.warnings = s.warnings[:warnings]
		s.cachedParts(t, c, false)
		p := s.peaksOf(t)
		if limit > 0 && p.DeviceBytes > limit {
			return p
		}
		if k == 0 || p.DeviceBytes > best.DeviceBytes || p.DeviceBytes == best.DeviceBytes && i < best.Stage {
			best = p // the lowest of equally loaded stages, as Estimate picks
		}
		rep.set(s)
		if whole && s.middleRepeats(&rep) {
			break // the middle stages left would each be skipped
		}
	}
	return best
}

// firstDominates reports whether the first pipeline stage peaks no lower
// than the current one, a middle stage, part by part: every parameter
// trains (full training), the layers have one type and each layer module
// spans the stack (layerModulesWhole), so a stage's parameters, states,
// gradients and buffers grow with its layers; the first stage holds at
// least as many layers (placeStage) and micro-batches in flight (no
// schedule puts more on a later stage), and the embedding and any vision
// tower or encoder on top. Tests re-estimate such stages to check it.
func (s *setup) firstDominates() bool {
	d := &s.dist
	return !d.first && !d.last && s.method == MethodFull && s.trainable.all && s.tab.oneLayerType
}

// middleRepeats reports whether every middle stage after the current
// one, rep, has rep's layout (sameLayout): as many layers (placeStage
// gives the first L mod pp stages one more), no more micro-batches in
// flight (no schedule puts more on a later stage), and the same trained
// layers, which holds when the job trains all layers or no layer range.
func (s *setup) middleRepeats(rep *stageShape) bool {
	d, t := &s.dist, &s.trainable
	if !rep.ok || rep.trained < 0 || !(t.lo > t.hi || t.lo <= 0 && t.hi >= s.m.Text.Layers-1) {
		return false
	}
	rem := s.m.Text.Layers % d.pp
	return d.stage >= rem || d.pp-2 < rem
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
// (rankFrac).
func (s *setup) layerModulesWhole() bool {
	L := s.m.Text.Layers
	for i := range s.m.Modules {
		if mod := &s.m.Modules[i]; mod.Stack == stackText && mod.Layer >= 0 && (mod.Layer != 0 || max(mod.Layers, 1) != L) {
			return false
		}
	}
	return true
}

// rowTable is the allocated-level rows of one stage: each row's bytes in
// each phase, rounded up once, and the phase totals summed from them, so
// the breakdown adds up to the peak. Rows are written by index through
// its methods, each at most once, and live marks the rows with bytes in
// some phase: assemble lists those (and the always ones) without testing
// the others.
type rowTable struct {
	b      [numRows][numPhases]units.Bytes
	most   [numRows]units.Bytes // a row's largest bytes over the phases
	mostPh [numRows]uint8       // the first phase with most
	totals [numPhases]units.Bytes
	live   uint32 // bit i: row i has bytes in some phase
	always uint32 // bit i: row i is listed even when it has none
	// lean tables keep only totals and sum (setup.leanRows): b, most,
	// mostPh and live are not written.
	lean bool
	// sum is the unrounded rows' sum in each phase, added in row order
	// (the stream-cache estimate reads it); f, if set, also receives
	// each row's unrounded bytes.
	sum [numPhases]float64
	f   *[numRows]comp
}

// The row bit sets must hold every row.
var _ = [1]struct{}{}[numRows/33]

// reset empties r for the next build, a lean one (only the totals and
// sums, all that the peaks read) or a whole one. Every build sets
// always, so a table with none was never built on and is empty already
// (as a new trainParts' is): no need to zero it again.
func (r *rowTable) reset(lean bool) {
	switch {
	case lean:
		r.totals, r.sum, r.live, r.always, r.lean = [numPhases]units.Bytes{}, [numPhases]float64{}, 0, 0, true
	case r.always != 0 || r.lean:
		*r = rowTable{}
	}
}

// peak is the peak phase: the first with the largest total.
func (r *rowTable) peak() int {
	peak := 0
	for ph := 1; ph < numPhases; ph++ {
		if r.totals[ph] > r.totals[peak] {
			peak = ph
		}
	}
	return peak
}

// addSize is units.Add for sizes, which are never negative: a sum past
// the largest int64 wraps below zero and saturates at units.MaxBytes.
func addSize(a, b units.Bytes) units.Bytes {
	if s := a + b; s >= 0 {
		return s
	}
	return units.MaxBytes
}

// every records row i with x bytes in every phase. The test for an
// empty row is inlined where it is called: most rows of most jobs are.
func (r *rowTable) every(i int, x float64) {
	if x != 0 {
		r.setEvery(i, x)
	}
}

// setEvery is every for a row that may hold bytes.
func (r *rowTable) setEvery(i int, x float64) {
	u := &r.sum
	u[0], u[1], u[2], u[3], u[4] = u[0]+x, u[1]+x, u[2]+x, u[3]+x, u[4]+x
	if r.f != nil {
		r.f[i].v = [numPhases]float64{x, x, x, x, x}
	}
	v := units.FromFloat(x)
	if v == 0 {
		return
	}
	if !r.lean {
		r.b[i] = [numPhases]units.Bytes{v, v, v, v, v}
		r.most[i] = v // mostPh[i] is 0, the first phase
		r.live |= 1 << i
	}
	t := &r.totals
	t[0], t[1], t[2], t[3], t[4] = addSize(t[0], v), addSize(t[1], v), addSize(t[2], v), addSize(t[3], v), addSize(t[4], v)
}

// span records row i with x bytes in the phases from lo to hi, none in
// the others.
func (r *rowTable) span(i int, x float64, lo, hi int) {
	if x != 0 {
		r.setSpan(i, x, lo, hi)
	}
}

// setSpan is span for a row that may hold bytes.
func (r *rowTable) setSpan(i int, x float64, lo, hi int) {
	for ph := lo; ph <= hi; ph++ {
		r.sum[ph] += x
	}
	if r.f != nil {
		for ph := lo; ph <= hi; ph++ {
			r.f[i].v[ph] = x
		}
	}
	v := units.FromFloat(x)
	if v == 0 {
		return
	}
	t := &r.totals
	if r.lean {
		for ph := lo; ph <= hi; ph++ {
			t[ph] = addSize(t[ph], v)
		}
		return
	}
	r.most[i], r.mostPh[i] = v, uint8(lo)
	r.live |= 1 << i
	b := &r.b[i]
	for ph := lo; ph <= hi; ph++ {
		b[ph] = v
		t[ph] = addSize(t[ph], v)
	}
}

// phases records row i with x[ph] bytes in phase ph.
func (r *rowTable) phases(i int, x *[numPhases]float64) {
	u := &r.sum
	u[0], u[1], u[2], u[3], u[4] = u[0]+x[0], u[1]+x[1], u[2]+x[2], u[3]+x[3], u[4]+x[4]
	if r.f != nil {
		r.f[i].v = *x
	}
	if r.lean {
		t := &r.totals
		t[0], t[1], t[2] = addSize(t[0], units.FromFloat(x[0])), addSize(t[1], units.FromFloat(x[1])), addSize(t[2], units.FromFloat(x[2]))
		t[3], t[4] = addSize(t[3], units.FromFloat(x[3])), addSize(t[4], units.FromFloat(x[4]))
		return
	}
	b := &r.b[i]
	// The five phases written out: this runs for several rows of every
	// estimate.
	b[0], b[1], b[2], b[3], b[4] = units.FromFloat(x[0]), units.FromFloat(x[1]), units.FromFloat(x[2]), units.FromFloat(x[3]), units.FromFloat(x[4])
	mx, ph := b[0], 0
	if b[1] > mx {
		mx, ph = b[1], 1
	}
	if b[2] > mx {
		mx, ph = b[2], 2
	}
	if b[3] > mx {
		mx, ph = b[3], 3
	}
	if b[4] > mx {
		mx, ph = b[4], 4
	}
	if mx == 0 {
		return // rounded bytes are never negative: the row is empty
	}
	r.most[i], r.mostPh[i] = mx, uint8(ph)
	r.live |= 1 << i
	t := &r.totals
	t[0], t[1], t[2] = addSize(t[0], b[0]), addSize(t[1], b[1]), addSize(t[2], b[2])
	t[3], t[4] = addSize(t[3], b[3]), addSize(t[4], b[4])
}

// comp is one breakdown row with its unrounded bytes in every phase.
type comp struct {
	v [numPhases]float64
}

// buildRows builds the allocated-level rows with their per-phase bytes.
func (s *setup) buildRows(t *trainParts, tab *rowTable) {
	s.staticRows(t, tab)
	s.batchRows(t, tab)
}

// rowPrefix is a lean row table after staticRows: what batchRows adds
// to for every micro-batch of a Sweep. Rows are added in row order and
// the static ones come first, so restoring it and adding the rest gives
// the same totals and sums, bit for bit, as building every row.
type rowPrefix struct {
	ok     bool
	totals [numPhases]units.Bytes
	sum    [numPhases]float64
	always uint32
}

// save keeps the state of a lean table that holds the static rows only.
func (p *rowPrefix) save(tab *rowTable) {
	p.ok, p.totals, p.sum, p.always = true, tab.totals, tab.sum, tab.always
}

// restore makes tab the lean table p was saved from.
func (p *rowPrefix) restore(tab *rowTable) {
	tab.totals, tab.sum, tab.always, tab.live, tab.lean = p.totals, p.sum, p.always, 0, true
}

// staticRows adds the rows that do not depend on the micro-batch, the
// first in row order: weights, adapters, master weights, gradients,
// optimizer states, the AMP weight copies and the allocator's rounding
// of them.
func (s *setup) staticRows(t *trainParts, tab *rowTable) {
	st := &t.st
	tab.always = 1<<rowWeights | 1<<rowGrads | 1<<rowActs
	tab.every(rowWeights, st.weights)
	tab.every(rowAdapters, st.adapters)
	tab.every(rowMaster, st.master)
	g := s.gradPhases(t)
	tab.phases(rowGrads, &g)
	if !st.optim.paged {
		// Paged states are a device-level row (assemble).
		tab.every(rowOptim, st.optim.states)
		tab.always |= 1 << rowOptim
	}
	if st.castCache != 0 {
		c := s.castPhases(t)
		tab.phases(rowCast, &c)
	}
	if f := &t.alloc; f.absorbed != 0 || f.states != 0 || f.grads != 0 {
		r := s.allocRows(t)
		tab.phases(rowRounding, &r)
	}
}

// batchRows adds the rows after the static ones: activations, output
// layer and loss, transients, dequantization workspace and
// communication buffers.
func (s *setup) batchRows(t *trainParts, tab *rowTable) {
	st, a, l := &t.st, &t.act, &t.loss
	acts := [numPhases]float64{a.fwd, a.fwd, a.top, a.bottom, 0}
	tab.phases(rowActs, &acts)
	tab.span(rowVision, a.vision, phForward, phBackwardEnd)
	tab.span(rowEncoder, a.encoder, phForward, phBackwardEnd)
	tab.span(rowOut, a.out, phForward, phLoss)
	tab.span(rowMask, a.mask, phForward, phBackwardEnd)
	heldStep := l.persist
	if s.loss == lossLitGPTChunked {
		heldStep = l.held
	}
	loss := [numPhases]float64{l.persist, l.peak, l.held, l.held, heldStep}
	tab.phases(rowLoss, &loss)
	if s.loss != lossNone {
		tab.always |= 1 << rowLoss
	}
	tab.span(rowBwd, a.trans, phBackward, phBackwardEnd)
	if s.optInBwd {
		tab.span(rowStep, st.optim.transient, phBackward, phBackwardEnd)
	} else {
		tab.span(rowStep, st.optim.transient, phStep, phStep)
	}
	// In row order, which sum adds them in.
	tab.span(rowDequant, st.dequant, phForward, phBackwardEnd)
	if c := &t.comm; c[0] != 0 || c[1] != 0 || c[2] != 0 || c[3] != 0 || c[4] != 0 {
		tab.phases(rowComm, c)
	}
}

// rowComps are the allocated-level rows of the breakdown with their
// names, lifetimes, formulas and sources (rowInfo) filled in.
var rowComps = func() (c [numRows]Component) {
	for i := range rowInfo {
		info := &rowInfo[i]
		c[i] = Component{Name: info.name, Level: "allocated", Phase: info.phase, Formula: info.formula, Source: info.source}
	}
	return c
}()

// Row indexes of the allocated-level breakdown.
const (
	rowWeights = iota
	rowAdapters
	rowMaster
	rowGrads
	rowOptim
	rowCast
	rowRounding
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
	case s.optInBwd || s.opt.offloadGrads:
		// torchao's CPUOffloadOptimizer(offload_gradients=True) frees each
		// gradient once its copy to the host is queued.
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
	case EngineMegatron:
		return true
	case EngineDDP:
		return s.job.GradientAsBucketView
	case EngineDeepSpeed:
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
	tab := &t.rows
	peak := tab.peak()
	// A row is listed when it is ever alive in the step (or always
	// shown), with its size at the peak and, if larger elsewhere, its
	// largest size and phase.
	listed := tab.live | tab.always
	nccl := s.ncclBytes()
	var comps []Component
	var box *trainBox
	if s.out != nil {
		comps, box = s.out.comps[:0], &s.out.box
	} else {
		// The breakdown is allocated at its exact size.
		n := bits.OnesCount32(listed) + s.extraRows(t, nccl)
		comps, box = make([]Component, 0, n), new(trainBox)
	}
	for set := listed; set != 0; set &= set - 1 {
		i := bits.TrailingZeros32(set)
		// In place: the capacity holds every row (maxTrainRows, or
		// the exact count above).
		n := len(comps)
		comps = comps[:n+1]
		c := &comps[n]
		*c = rowComps[i]
		c.Bytes = tab.b[i][peak]
		if m := tab.most[i]; m > c.Bytes {
			c.MaxBytes, c.MaxPhase = m, phaseNames[tab.mostPh[i]]
		}
	}
	totals := &tab.totals
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
	box.phases = [numPhases]Phase{{PhaseForward, totals[0]}, {PhaseLoss, totals[1]}, {PhaseBackward, totals[2]},
		{PhaseBackwardEnd, totals[3]}, {PhaseStep, totals[4]}}
	// Field by field rather than a composite literal: the Result is
	// large (its Job most of all), and this writes every field once, in
	// place, without zeroing it first (the unkeyed Result below
	// keeps the list complete). Band is attachBand's.
	res.Model, res.Architecture = s.m.ID, s.m.Architecture
	res.TotalParams = t.p.total
	if !s.haveTrained {
		// The whole model's count, the same for every pipeline stage.
		s.trained, s.haveTrained = s.modelTrainable(&t.p), true
	}
	res.TrainableParams = roundCount(s.trained)
	if s.trainable.all {
		// The float sum is exact below 2⁵³ parameters only; beyond, it
		// may round past the integer total it equals.
		res.TrainableParams = t.p.total
	}
	res.ActiveParams = s.tab.active
	s.resolvedTrainingJob(&res.Job, &res.Assumed, box)
	box.loading = s.loading(t)
	res.Loading = &box.loading
	res.PerGPU = PerGPU{AllocatedPeakBytes: alloc, ReservedPeakBytes: reserved, DevicePeakBytes: device,
		PeakPhase: phaseNames[peak], Components: comps, Phases: box.phases[:]}
	res.Host, res.Serving, res.Parallel, res.Stages = nil, nil, nil, nil
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
	if !s.dist.single {
		// A single process has no layout (parallelInfo); testing it
		// here saves returning an empty Parallel.
		if p, ok := s.parallelInfo(t); ok {
			if s.out != nil {
				s.out.parallel = p
				res.Parallel = &s.out.parallel
			} else {
				res.Parallel = new(Parallel)
				*res.Parallel = p
			}
		}
	}
	if s.job.Explain {
		s.explain(t, res.PerGPU.Components)
	}
	if limit := s.gpuMemory(t); limit > 0 && device > limit {
		// A catalog GPU's figure is the total CUDA reports (plan.OnGPU),
		// a little below nvidia-smi's: say which it is.
		on := "the GPU's memory, " + units.FormatIEC(limit)
		if s.job.GPU != "" {
			on = "the " + units.FormatIEC(limit) + " CUDA can use on " + s.job.GPU
		}
		res.Warnings = append(res.Warnings, "device peak "+units.FormatIEC(device)+" exceeds "+on)
	}
	return &box.bandBox
}

// This lists every field of a Result without keys, so it stops
// compiling when a field is added: assemble writes each field by hand
// and must then write the new one too.
var _ = Result{"", "", 0, 0, 0, Job{}, KeySet{}, PerGPU{}, nil, nil, nil, nil, nil, nil}

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
