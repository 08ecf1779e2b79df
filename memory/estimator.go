package memory

import (
	"fmt"
	"slices"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// An Estimator estimates many jobs on one model and reuses its memory
// from one call to the next, so that a search over thousands of
// configurations allocates nothing per training estimate. It gives the
// same answers as [Estimate].
//
// An Estimator is not safe for concurrent use: give each goroutine its
// own.
type Estimator struct {
	m   *model.Model
	tab *modTab // m's inventory table, made on first use
	res Result
	buf trainBuf
	// twin estimates the jobs a result is compared with
	// (noteExceptions), without touching res; scratch holds such a job
	// when this Estimator is a twin.
	twin    *Estimator
	scratch Job
}

// NewEstimator returns an Estimator of model m.
func NewEstimator(m *model.Model) *Estimator {
	return &Estimator{m: m}
}

// Estimate returns the per-GPU memory of job on e's model, like
// [Estimate]. The result and the slices it holds belong to e and are
// overwritten by the next call; use [Result.Clone] to keep one. Job is
// only read.
func (e *Estimator) Estimate(job *Job) (*Result, error) {
	if e == nil || e.m == nil {
		return nil, fmt.Errorf("estimate: no model")
	}
	if err := checkJob(job); err != nil {
		return nil, err
	}
	switch job.Mode {
	case "", Train:
		if e.tab == nil {
			e.tab = newModTab(e.m)
		}
		if err := estimateTrainingBuf(e.m, job, &e.res, &e.buf, e.tab); err != nil {
			return nil, err
		}
		noteExceptions(e.m, job, &e.res, &e.twin)
	case Inference, Serving:
		r, err := estimateInference(e.m, *job)
		if err != nil {
			return nil, err
		}
		e.res = r
		resolvedServingJob(&e.res)
		withBand(&e.res)
	default:
		return nil, FieldErrorf("mode", "estimate: unknown mode %q (want train, inference or serving)", job.Mode)
	}
	noteCapped(&e.res)
	return &e.res, nil
}

// Peaks is the per-GPU peaks of a job without the breakdown: what a
// search needs to tell whether a job fits.
type Peaks struct {
	// AllocatedBytes, ReservedBytes and DeviceBytes are
	// PerGPU.AllocatedPeakBytes, ReservedPeakBytes and DevicePeakBytes.
	AllocatedBytes units.Bytes `json:"allocated_peak_bytes"`
	ReservedBytes  units.Bytes `json:"reserved_peak_bytes"`
	DeviceBytes    units.Bytes `json:"device_peak_bytes"`
	// Phase is PerGPU.PeakPhase.
	Phase string `json:"peak_phase"`
	// Stage is the most loaded pipeline stage (Parallel.PeakStage): 0
	// without pipeline parallelism.
	Stage int `json:"peak_stage"`
	// HighBytes is the upper edge of the band of the device peak
	// (PerGPU.Band.HighBytes); DeviceBytes when there is no band.
	HighBytes units.Bytes `json:"high_bytes"`
	// LoadingBytes is the device peak of the loading phase
	// (Result.Loading.DeviceBytes); 0 for inference and serving.
	LoadingBytes units.Bytes `json:"loading_bytes,omitempty"`
}

// Peak returns the per-GPU peaks of job on e's model: the figures
// [Estimator.Estimate] reports, computed without the breakdown rows, the
// band, the explanations and the stage table, so a training estimate
// costs a fraction as much. Pipeline stages that cannot peak higher than
// one already estimated are skipped (tests re-estimate every skipped
// stage to check it). Searches use it to decide which jobs fit;
// estimate the chosen ones in full.
func (e *Estimator) Peak(job *Job) (Peaks, error) {
	return e.PeakUpTo(job, 0)
}

// PeakUpTo is [Estimator.Peak] for a question of fit: when a pipeline
// stage's device peak is above limit, it returns that stage's peaks
// without estimating the stages after it. The job's device peak is at
// least that stage's, so it does not fit in limit either; below limit
// the answer is Peak's. A limit of zero or less sets no limit.
func (e *Estimator) PeakUpTo(job *Job, limit units.Bytes) (Peaks, error) {
	if job.Mode != "" && job.Mode != Train {
		r, err := e.Estimate(job)
		if err != nil {
			return Peaks{}, err
		}
		return peaksOfResult(r), nil
	}
	return e.trainingPeaks(job, limit, nil)
}

// trainingPeaks is PeakUpTo of a training job, with the Sweep sw keeping
// its parts (nil: none).
func (e *Estimator) trainingPeaks(job *Job, limit units.Bytes, sw *Sweep) (Peaks, error) {
	if e == nil || e.m == nil {
		return Peaks{}, fmt.Errorf("estimate: no model")
	}
	if err := checkJob(job); err != nil {
		return Peaks{}, err
	}
	if e.tab == nil {
		e.tab = newModTab(e.m)
	}
	return peakTraining(e.m, job, &e.buf, e.tab, limit, sw)
}

// Sweep is a training job whose peaks are wanted at several
// micro-batches, as a search for the largest micro-batch that fits asks
// for them: the job's set-up and the parts of each pipeline stage that
// do not depend on the micro-batch (the share of each module the stage
// holds, the parameter counts, the weights, gradients and optimizer
// states) are computed at the first [Sweep.PeakUpTo] and reused by the
// next ones. Its answers are [Estimator.PeakUpTo]'s for the job with
// that micro-batch.
//
// A Sweep uses its Estimator's memory: use one Sweep of an Estimator at
// a time, and no other call of the Estimator between [Sweep.Reset] and
// the last PeakUpTo.
type Sweep struct {
	e      *Estimator
	job    Job
	stages []sweepStage
	// base is the job set up at the first PeakUpTo that succeeded
	// (setUp): only what follows from the micro-batch changes after.
	base  setup
	setUp bool
	work  setup // base's copy that the next micro-batch is estimated with
}

// sweepStage is what a Sweep keeps of one pipeline stage.
type sweepStage struct {
	ok    bool // filled
	fracs []float64
	unit  bool
	p     trParams
	st    rankStates
	// engine and pools are trainParts' (poolsOK too).
	engine  [numPhases]float64
	pools   fsdpPools
	poolsOK bool
	alloc   allocFoot
	// rows is the lean row table of the stage's static rows.
	rows rowPrefix
}

// NewSweep returns a Sweep of e's model; [Sweep.Reset] gives it its job.
func (e *Estimator) NewSweep() *Sweep {
	return &Sweep{e: e}
}

// Reset makes job the Sweep's job and forgets the previous job's parts.
// The Sweep keeps a copy of job, which shares job's slices: leave them
// unchanged until the last PeakUpTo of this job.
func (w *Sweep) Reset(job *Job) {
	w.job = *job
	w.setUp = false
	for i := range w.stages {
		w.stages[i].ok = false
	}
}

// PeakUpTo returns [Estimator.PeakUpTo] of the Sweep's job with its
// micro-batch (Job.MicroBatch, or Job.Batch in the inference modes) set
// to microBatch.
func (w *Sweep) PeakUpTo(microBatch int, limit units.Bytes) (Peaks, error) {
	e := w.e
	job := &w.job
	if job.Mode != "" && job.Mode != Train {
		job.Batch = microBatch
		return e.PeakUpTo(job, limit)
	}
	job.MicroBatch = microBatch
	return e.trainingPeaks(job, limit, w)
}

// stage returns what the Sweep keeps of pipeline stage i; nil for no Sweep.
func (w *Sweep) stage(i int) *sweepStage {
	if w == nil {
		return nil
	}
	for len(w.stages) <= i {
		w.stages = append(w.stages, sweepStage{})
	}
	return &w.stages[i]
}

// peaksOfResult is the Peaks of a full result.
func peaksOfResult(r *Result) Peaks {
	p := Peaks{AllocatedBytes: r.PerGPU.AllocatedPeakBytes, ReservedBytes: r.PerGPU.ReservedPeakBytes,
		DeviceBytes: r.PerGPU.DevicePeakBytes, Phase: r.PerGPU.PeakPhase, HighBytes: r.PerGPU.DevicePeakBytes}
	if b := r.PerGPU.Band; b != nil {
		p.HighBytes = b.HighBytes
	}
	if r.Loading != nil {
		p.LoadingBytes = r.Loading.DeviceBytes
	}
	if r.Parallel != nil {
		p.Stage = r.Parallel.PeakStage
	}
	return p
}

// trainBuf is the memory a training estimate writes its result into:
// the phase totals, the band, the breakdown rows, the layout and host
// figures and the warnings. [Estimate] allocates one per call; an
// [Estimator] keeps one.
type trainBuf struct {
	out      outBuf
	stages   []outBuf      // one per pipeline stage
	results  []StageResult // Result.Stages
	warnings []string
	hits     []loraHit // the LoRA targets of the job
	// hitsFor are the folded target names hits were matched for (the
	// model is the Estimator's): the next job with the same names, as in
	// a search, reuses them. hitsOK is false until a first match.
	hitsFor []string
	hitsOK  bool
	shape   []float64  // stagePeaks' copy of a stage's module shares
	parts   trainParts // Peak's stage parts, reused from stage to stage
	// ppNote is the last pipeline note (estimateStages) and the stage
	// count and peak stage it names: a search repeats it.
	ppNote    string
	ppNoteFor [2]int
}

// outBuf is the memory of one assembled result (of the job, or of one
// pipeline stage).
type outBuf struct {
	box      trainBox
	comps    [maxTrainRows]Component
	parallel Parallel
	host     Host
}

// maxTrainRows bounds the breakdown of a training estimate: the
// allocated-level rows and the rows assemble appends (extraRows: up to
// six overhead rows, paged optimizer states and NCCL).
const maxTrainRows = numRows + 8

// Clone returns a deep copy of r: its slices and pointers are copied, so
// the copy outlives an [Estimator]'s next call.
func (r *Result) Clone() Result {
	c := *r
	c.Job = r.Job.clone()
	c.PerGPU = r.PerGPU.clone()
	if r.Host != nil {
		h := *r.Host
		c.Host = &h
	}
	c.Loading = clonePtr(r.Loading)
	if r.Serving != nil {
		s := *r.Serving
		if s.SGLang != nil {
			g := *s.SGLang
			s.SGLang = &g
		}
		s.Answer = slices.Clone(s.Answer)
		c.Serving = &s
	}
	if r.Parallel != nil {
		p := *r.Parallel
		c.Parallel = &p
	}
	if r.Stages != nil {
		c.Stages = make([]StageResult, len(r.Stages))
		for i := range r.Stages {
			c.Stages[i] = r.Stages[i]
			c.Stages[i].PerGPU = r.Stages[i].PerGPU.clone()
		}
	}
	c.Warnings = cloneSlice(r.Warnings)
	return c
}

// clone returns a deep copy of j: its slices, map and pointers are
// copied.
func (j Job) clone() Job {
	c := j
	c.LoRATargets = cloneSlice(j.LoRATargets)
	c.Trainable = cloneSlice(j.Trainable)
	c.FeedforwardModules = cloneSlice(j.FeedforwardModules)
	c.Software = cloneSlice(j.Software)
	if j.Stack != nil {
		c.Stack = make(Stack, len(j.Stack))
		for k, v := range j.Stack {
			c.Stack[k] = v
		}
	}
	c.Packed = clonePtr(j.Packed)
	c.DoubleQuant = clonePtr(j.DoubleQuant)
	c.OverlapComm = clonePtr(j.OverlapComm)
	c.ContiguousGradients = clonePtr(j.ContiguousGradients)
	c.PrefetchBucketSize = clonePtr(j.PrefetchBucketSize)
	c.MaxLiveParameters = clonePtr(j.MaxLiveParameters)
	c.MaxReuseDistance = clonePtr(j.MaxReuseDistance)
	c.ParamPersistenceThreshold = clonePtr(j.ParamPersistenceThreshold)
	c.LowCPUMemUsage = clonePtr(j.LowCPUMemUsage)
	c.ZeroInit = clonePtr(j.ZeroInit)
	c.CPURAMEfficientLoading = clonePtr(j.CPURAMEfficientLoading)
	c.SyncModuleStates = clonePtr(j.SyncModuleStates)
	if j.Constants != nil {
		c.Constants = make(map[string]float64, len(j.Constants))
		for k, v := range j.Constants {
			c.Constants[k] = v
		}
	}
	return c
}

// clonePtr returns a pointer to a copy of *p; nil stays nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// clone returns a deep copy of p.
func (p PerGPU) clone() PerGPU {
	c := p
	c.Components = cloneSlice(p.Components)
	c.Phases = cloneSlice(p.Phases)
	if p.Band != nil {
		b := *p.Band
		b.Terms = cloneSlice(p.Band.Terms)
		c.Band = &b
	}
	return c
}

// cloneSlice returns a copy of s that shares no memory with it; nil
// stays nil.
func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}
