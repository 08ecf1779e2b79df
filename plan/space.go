package plan

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// Space is the set of layouts [Search] enumerates: the cross product of
// its lists, minus combinations no engine runs (see [Layout.Valid]).
// Empty lists take the defaults of [DefaultSpace].
type Space struct {
	// GPUCounts are the total GPU counts tried, e.g. 1, 2, 4, 8.
	GPUCounts []int `json:"gpu_counts"`
	// Engines are the training engines tried ("" = single process).
	Engines []string `json:"engines"`
	// ZeRO are the sharding stages: DeepSpeed stages 0–3; FSDP1 maps 3 to
	// full_shard and 2 to shard_grad_op; Megatron uses 0 and 1
	// (distributed optimizer); FSDP2 is always 3.
	ZeRO []int `json:"zero"`
	// TP, PP, CP and EP are the parallel sizes tried (Megatron and FSDP2).
	TP []int `json:"tp"`
	PP []int `json:"pp"`
	CP []int `json:"cp"`
	EP []int `json:"ep"`
	// MicroBatches are the micro-batches tried. For each layout the
	// largest that fits is found by bisection (memory grows with the
	// micro-batch), so most are never estimated.
	MicroBatches []int `json:"micro_batches"`
	// GradCheckpoint values: none, selective, full.
	GradCheckpoint []string `json:"grad_checkpoint"`
	// Offload values: none, optimizer, params.
	Offload []string `json:"offload"`
	// Methods are fine-tuning methods (full, lora, qlora); "" keeps the
	// base job's.
	Methods []string `json:"methods"`
	// Keep is how many ranked candidates to return (0 = 50).
	Keep int `json:"keep,omitempty"`
	// Workers is the number of goroutines estimating layouts
	// (0 = GOMAXPROCS).
	Workers int `json:"-"`
}

// DefaultKeep is the number of candidates Search returns by default.
const DefaultKeep = 50

// DefaultSpace is a search over up to maxGPUs GPUs (powers of two and
// maxGPUs itself), every engine, and the usual sharding, parallel,
// micro-batch, checkpointing and offload choices, keeping the base job's
// fine-tuning method.
func DefaultSpace(maxGPUs int) Space {
	maxGPUs = max(maxGPUs, 1)
	var counts []int
	for n := 1; n <= maxGPUs; n *= 2 {
		counts = append(counts, n)
	}
	if counts[len(counts)-1] != maxGPUs {
		counts = append(counts, maxGPUs)
	}
	return Space{
		GPUCounts:      counts,
		Engines:        []string{memory.EngineSingle, memory.EngineDDP, memory.EngineDeepSpeed, memory.EngineFSDP, memory.EngineFSDP2, memory.EngineMegatron},
		ZeRO:           []int{0, 1, 2, 3},
		TP:             []int{1, 2, 4, 8},
		PP:             []int{1, 2, 4, 8},
		CP:             []int{1},
		EP:             []int{1},
		MicroBatches:   []int{1, 2, 4, 8, 16, 32},
		GradCheckpoint: []string{"none", "selective", "full"},
		Offload:        []string{OffloadNone, OffloadOptimizer, OffloadParams},
		Methods:        []string{""},
	}
}

// withDefaults fills empty lists from DefaultSpace.
func (s Space) withDefaults() Space {
	maxGPUs := 1
	for _, n := range s.GPUCounts {
		maxGPUs = max(maxGPUs, n)
	}
	d := DefaultSpace(maxGPUs)
	fill := func(dst *[]int, def []int) {
		if len(*dst) == 0 {
			*dst = def
		}
	}
	fillS := func(dst *[]string, def []string) {
		if len(*dst) == 0 {
			*dst = def
		}
	}
	fill(&s.GPUCounts, d.GPUCounts)
	fill(&s.ZeRO, d.ZeRO)
	fill(&s.TP, d.TP)
	fill(&s.PP, d.PP)
	fill(&s.CP, d.CP)
	fill(&s.EP, d.EP)
	fill(&s.MicroBatches, d.MicroBatches)
	fillS(&s.Engines, d.Engines)
	fillS(&s.GradCheckpoint, d.GradCheckpoint)
	fillS(&s.Offload, d.Offload)
	fillS(&s.Methods, d.Methods)
	if s.Keep <= 0 {
		s.Keep = DefaultKeep
	}
	if s.Workers <= 0 {
		s.Workers = runtime.GOMAXPROCS(0)
	}
	s.MicroBatches = append([]int(nil), s.MicroBatches...)
	sort.Ints(s.MicroBatches)
	return s
}

// validate rejects values no layout can take, naming the list.
func (s Space) validate() error {
	ints := []struct {
		name string
		vals []int
		lo   int
	}{{"gpu_counts", s.GPUCounts, 1}, {"zero", s.ZeRO, 0}, {"tp", s.TP, 1}, {"pp", s.PP, 1}, {"cp", s.CP, 1}, {"ep", s.EP, 1}, {"micro_batches", s.MicroBatches, 1}}
	for _, l := range ints {
		for _, v := range l.vals {
			if v < l.lo || l.name == "zero" && v > 3 {
				return fmt.Errorf("search space: %s: %d out of range", l.name, v)
			}
		}
	}
	words := []struct {
		name    string
		vals    []string
		allowed []string
	}{
		{"engines", s.Engines, []string{memory.EngineSingle, memory.EngineDDP, memory.EngineDeepSpeed, memory.EngineFSDP, memory.EngineFSDP2, memory.EngineMegatron}},
		{"grad_checkpoint", s.GradCheckpoint, []string{"none", "selective", "full"}},
		{"offload", s.Offload, []string{OffloadNone, OffloadOptimizer, OffloadParams}},
		{"methods", s.Methods, []string{"", "full", "lora", "qlora", "frozen"}},
	}
	for _, l := range words {
		for _, v := range l.vals {
			if !slices.Contains(l.allowed, v) {
				return fmt.Errorf("search space: %s: unknown value %q (want one of %q)", l.name, v, l.allowed)
			}
		}
	}
	return nil
}

// Candidate is a layout that fits, with its predicted peak and score.
type Candidate struct {
	Layout
	// NeedBytes is the predicted per-GPU device peak.
	NeedBytes units.Bytes `json:"need_bytes"`
	// Utilization is NeedBytes over the GPU's memory, in percent.
	Utilization float64 `json:"utilization_pct"`
	// Verdict is fits or tight.
	Verdict Verdict `json:"verdict"`
	// Score is the relative throughput per GPU ([Score]).
	Score float64 `json:"throughput_score"`
}

// Skip counts layouts the estimator rejected for one reason.
type Skip struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	// Example is the first layout (in enumeration order) skipped for Reason.
	Example Layout `json:"example"`
	seq     int
}

// Plan is the answer of [Search].
type Plan struct {
	// GPU is the kind searched for, and MemoryBytes its memory.
	GPU         string      `json:"gpu"`
	MemoryBytes units.Bytes `json:"gpu_memory_bytes"`
	// Candidates are the best layouts that fit, best first: verdict fits
	// before tight, then higher score, fewer GPUs, smaller peak. Each
	// layout appears once, with the largest micro-batch that fits (or the
	// smallest, if even that is tight).
	Candidates []Candidate `json:"candidates"`
	// Feasible is the number of layouts with a micro-batch that fits
	// (Candidates holds the best of them).
	Feasible int `json:"feasible"`
	// Evaluated is the number of estimates made.
	Evaluated int `json:"evaluated"`
	// Invalid is the number of combinations no engine runs (not estimated).
	Invalid int `json:"invalid"`
	// Pruned is the number of layout and micro-batch pairs not estimated
	// because bisection or a failure at the smallest micro-batch settled them.
	Pruned int `json:"pruned"`
	// TooBig is the number of estimates above the budget (tight or not fitting).
	TooBig int `json:"too_big"`
	// Skipped groups the estimator's errors by message (unsupported
	// combinations), most frequent first.
	Skipped []Skip `json:"skipped,omitempty"`
	// Warnings are the model's warnings (a generic reading, defaults a
	// sparse config left to its family): every layout rests on them.
	Warnings []string `json:"warnings,omitempty"`
}

// Search enumerates the layouts of s for training base on GPUs of kind g
// and returns those that fit, ranked by [Score]. An estimator error for a
// layout (an engine or combination it does not model) skips the layout and
// is counted under its message in Plan.Skipped.
//
// Layouts are estimated by s.Workers goroutines (default GOMAXPROCS), so
// est must be safe for concurrent use, as pure functions are. The result
// does not depend on the number of workers.
func Search(est EstimateFunc, base memory.Job, g gpu.GPU, s Space) (Plan, error) {
	return SearchWith(func() EstimateFunc { return est }, base, g, s)
}

// SearchModel is [Search] on model m, the fast way to search a catalog
// or Hub model: each worker decides fit with a [memory.Sweep] of its own
// [memory.Estimator]. That gives the peaks of [memory.Estimator.Estimate]
// without building the breakdown, computes a layout's parts that do not
// depend on the micro-batch once for all the micro-batches tried, and
// stops at the first pipeline stage that does not fit on g (the search
// keeps no figure of a layout that does not fit). A test checks that
// both searches return the same plan.
func SearchModel(m *model.Model, base memory.Job, g gpu.GPU, s Space) (Plan, error) {
	p, err := search(func() fitter {
		return &sweepFitter{sw: memory.NewEstimator(m).NewSweep(), g: g}
	}, base, g, s)
	p.Warnings = slices.Clone(m.Warnings)
	return p, err
}

// fitter checks one layout's job against the searched GPU at several
// micro-batches. A search worker owns one alone.
type fitter interface {
	// reset makes j, a layout applied to the base job, the job checked.
	reset(j *memory.Job)
	// fit checks the job with micro-batch mb.
	fit(mb int) (Fit, error)
}

// estFitter is a fitter of full estimates.
type estFitter struct {
	est EstimateFunc
	g   gpu.GPU
	job memory.Job
}

func (f *estFitter) reset(j *memory.Job) { f.job = *j }

func (f *estFitter) fit(mb int) (Fit, error) {
	f.job.MicroBatch = mb
	r, err := f.est(f.job)
	if err != nil {
		return Fit{}, err
	}
	return Check(r, f.g), nil
}

// sweepFitter is a fitter of peaks from a [memory.Sweep], which computes
// the parts that do not depend on the micro-batch once per layout. It
// asks for the peaks up to the GPU's memory: the search keeps no figure
// of a job that does not fit.
type sweepFitter struct {
	sw *memory.Sweep
	g  gpu.GPU
}

func (f *sweepFitter) reset(j *memory.Job) { f.sw.Reset(j) }

func (f *sweepFitter) fit(mb int) (Fit, error) {
	p, err := f.sw.PeakUpTo(mb, f.g.Memory)
	if err != nil {
		return Fit{}, err
	}
	return CheckBytes(NeedPeaks(p), f.g), nil
}

// SearchWith is [Search] with an estimator per worker: each worker calls
// newEst once and uses what it returns alone, so the estimator may keep
// state between calls (as [ForWorker]'s does); searches read a result
// before their next estimate and keep no result.
func SearchWith(newEst func() EstimateFunc, base memory.Job, g gpu.GPU, s Space) (Plan, error) {
	return search(func() fitter { return &estFitter{est: newEst(), g: g} }, base, g, s)
}

// search runs the search of [SearchWith] with a fit check per worker.
func search(newFit func() fitter, base memory.Job, g gpu.GPU, s Space) (Plan, error) {
	if base.Mode != "" && base.Mode != memory.Train {
		return Plan{}, fmt.Errorf("search layouts: mode %q: layouts are searched for training jobs", base.Mode)
	}
	s = s.withDefaults()
	if err := s.validate(); err != nil {
		return Plan{}, err
	}
	base = OnGPU(base, g)
	p := Plan{GPU: g.Name, MemoryBytes: g.Memory}
	workers := max(s.Workers, 1)
	parts := make([]searchPart, workers)
	var wg sync.WaitGroup
	for w := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[w] = searchChunk(newFit(), base, s, w, workers)
		}()
	}
	wg.Wait()
	top := &best{keep: s.Keep}
	skips := map[string]*Skip{}
	for _, part := range parts {
		p.Evaluated += part.evaluated
		p.Pruned += part.pruned
		p.TooBig += part.tooBig
		p.Feasible += part.feasible
		p.Invalid += part.invalid
		for i, c := range part.top.cs {
			top.offer(c, part.top.seq[i])
		}
		mergeSkips(skips, part.skips)
	}
	p.Candidates = top.sorted()
	p.Skipped = sortSkips(skips)
	return p, nil
}

// searchPart is one worker's share of a search.
type searchPart struct {
	evaluated, pruned, tooBig, feasible, invalid int
	top                                          *best
	skips                                        map[string]*Skip
}

// searchChunk enumerates the space and estimates the valid layouts
// w, w+n, w+2n, ... (in enumeration order). Every worker enumerates (it is
// cheap next to estimating) so none waits for a list to be built;
// interleaving balances the workers, since neighbouring layouts cost about
// the same. Sequence numbers are global (layout index · micro-batches +
// position), which makes ties break the same way for any number of workers.
//
// For each layout only the largest micro-batch that fits is kept: a
// smaller one of the same layout has the same costs and a lower score.
// Memory grows with the micro-batch, so it is found by bisection over
// the sorted list after the smallest fits.
func searchChunk(fit fitter, base memory.Job, s Space, w, n int) searchPart {
	part := searchPart{top: &best{keep: s.Keep}, skips: map[string]*Skip{}}
	nmb := len(s.MicroBatches)
	k := -1
	var job memory.Job // the layout's job, reused: fit.reset reads it through a pointer
	s.each(base, func(l Layout) {
		if l.Valid() != "" {
			if w == 0 {
				part.invalid += nmb
			}
			return
		}
		if k++; k%n != w {
			return
		}
		evals := 0
		job = l.Apply(base)
		fit.reset(&job)
		eval := func(i int) (Fit, bool) {
			l.MicroBatch = s.MicroBatches[i]
			evals++
			f, err := fit.fit(l.MicroBatch)
			if err != nil {
				addSkip(part.skips, err.Error(), l, k*nmb+i)
				return Fit{}, false
			}
			if f.Verdict != Fits {
				part.tooBig++
			}
			return f, true
		}
		lo, hi := 0, nmb
		f, ok := eval(0)
		if ok && f.Verdict == Fits {
			for hi-lo > 1 {
				mid := lo + (hi-lo)/2
				if fm, ok := eval(mid); ok && fm.Verdict == Fits {
					lo, f = mid, fm
				} else {
					hi = mid
				}
			}
		}
		if ok && f.Verdict != DoesNotFit {
			l.MicroBatch = s.MicroBatches[lo]
			part.feasible++
			part.top.offer(Candidate{Layout: l, NeedBytes: f.NeedBytes, Utilization: f.Utilization, Verdict: f.Verdict, Score: Score(l)}, k*nmb+lo)
		}
		part.evaluated += evals
		part.pruned += nmb - evals
	})
	return part
}

func addSkip(skips map[string]*Skip, reason string, l Layout, seq int) {
	if s, ok := skips[reason]; ok {
		s.Count++
		if seq < s.seq {
			s.Example, s.seq = l, seq
		}
		return
	}
	skips[reason] = &Skip{Reason: reason, Count: 1, Example: l, seq: seq}
}

func mergeSkips(dst, src map[string]*Skip) {
	for reason, s := range src {
		d, ok := dst[reason]
		if !ok {
			c := *s
			dst[reason] = &c
			continue
		}
		d.Count += s.Count
		if s.seq < d.seq {
			d.Example, d.seq = s.Example, s.seq
		}
	}
}

func sortSkips(m map[string]*Skip) []Skip {
	out := make([]Skip, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

// better reports whether a ranks before b: verdict fits before tight,
// then higher score, fewer GPUs, smaller peak, and enumeration order.
func better(a, b Candidate, aSeq, bSeq int) bool {
	if a.Verdict.Rank() != b.Verdict.Rank() {
		return a.Verdict.Rank() < b.Verdict.Rank()
	}
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.NumGPUs != b.NumGPUs {
		return a.NumGPUs < b.NumGPUs
	}
	if a.NeedBytes != b.NeedBytes {
		return a.NeedBytes < b.NeedBytes
	}
	return aSeq < bSeq
}

// best keeps the keep best candidates offered, in a heap whose root is
// the worst of them: O(log keep) per offer instead of sorting every
// feasible layout.
type best struct {
	keep int
	cs   []Candidate
	seq  []int
}

// offer adds c, whose enumeration position is seq, if it is among the best.
func (h *best) offer(c Candidate, seq int) {
	if len(h.cs) < h.keep {
		h.cs = append(h.cs, c)
		h.seq = append(h.seq, seq)
		h.up(len(h.cs) - 1)
		return
	}
	if !better(c, h.cs[0], seq, h.seq[0]) {
		return
	}
	h.cs[0], h.seq[0] = c, seq
	h.down(0)
}

// worse is the heap order: the root is the worst kept candidate.
func (h *best) worse(i, j int) bool { return better(h.cs[j], h.cs[i], h.seq[j], h.seq[i]) }

func (h *best) swap(i, j int) {
	h.cs[i], h.cs[j] = h.cs[j], h.cs[i]
	h.seq[i], h.seq[j] = h.seq[j], h.seq[i]
}

func (h *best) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.worse(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

func (h *best) down(i int) {
	for {
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(h.cs) && h.worse(l, w) {
			w = l
		}
		if r < len(h.cs) && h.worse(r, w) {
			w = r
		}
		if w == i {
			return
		}
		h.swap(i, w)
		i = w
	}
}

// sorted returns the kept candidates best first.
func (h *best) sorted() []Candidate {
	idx := make([]int, len(h.cs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return better(h.cs[idx[a]], h.cs[idx[b]], h.seq[idx[a]], h.seq[idx[b]]) })
	out := make([]Candidate, len(idx))
	for i, k := range idx {
		out[i] = h.cs[k]
	}
	return out
}

// each calls fn for every combination of s except the micro-batch, in a
// fixed order. Engine-specific sharding values are expanded here so that
// each distinct layout is produced once.
func (s Space) each(base memory.Job, fn func(Layout)) {
	for _, n := range s.GPUCounts {
		for _, e := range s.Engines {
			for _, z := range s.shardings(e) {
				for _, tp := range s.TP {
					for _, pp := range s.PP {
						for _, cp := range s.CP {
							for _, ep := range s.EP {
								for _, ck := range s.GradCheckpoint {
									for _, off := range s.Offload {
										for _, m := range s.Methods {
											fn(Layout{Engine: e, ZeRO: z.zero, FSDPStrategy: z.fsdp, NumGPUs: n,
												TP: tp, PP: pp, CP: cp, EP: ep, GradCheckpoint: ck, Offload: off,
												Method: m, GradAccum: max(base.GradAccum, 1)})
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

type sharding struct {
	zero int
	fsdp string
}

// shardings lists the sharding settings engine e takes from s.ZeRO.
func (s Space) shardings(e string) []sharding {
	var out []sharding
	for _, z := range s.ZeRO {
		switch e {
		case memory.EngineDeepSpeed:
			if z >= 0 && z <= 3 {
				out = append(out, sharding{zero: z})
			}
		case memory.EngineFSDP:
			switch z {
			case 3:
				out = append(out, sharding{fsdp: "full_shard"})
			case 2:
				out = append(out, sharding{fsdp: "shard_grad_op"})
			}
		case memory.EngineMegatron:
			if z == 0 || z == 1 {
				out = append(out, sharding{zero: z})
			}
		}
	}
	switch e {
	case memory.EngineSingle, memory.EngineDDP, memory.EngineFSDP2:
		out = []sharding{{}}
	}
	return out
}

// Valid returns "" if some engine runs l, or why none does. It checks
// only structure (divisibility, which engine supports which option);
// whether the model allows it (heads divisible by tp, experts by ep) is
// the estimator's call.
func (l Layout) Valid() string {
	tp, pp, cp, ep := max(l.TP, 1), max(l.PP, 1), max(l.CP, 1), max(l.EP, 1)
	mp := tp * pp * cp
	switch {
	case l.NumGPUs < 1:
		return "no GPUs"
	case l.NumGPUs%mp != 0:
		return "tp·pp·cp does not divide the GPU count"
	case tp*cp > GPUsPerNode:
		return "tp·cp spans more than one node"
	}
	parallel := tp > 1 || pp > 1 || cp > 1
	switch l.Engine {
	case memory.EngineSingle:
		if l.NumGPUs != 1 || parallel || ep > 1 || l.Offload != OffloadNone && l.Offload != "" {
			return "a single process runs one GPU without offload"
		}
	case memory.EngineDDP, memory.EngineFSDP:
		if l.NumGPUs < 2 || parallel || ep > 1 {
			return "ddp and fsdp need 2+ GPUs and no model parallelism"
		}
		if l.Engine == memory.EngineDDP && l.Offload != OffloadNone && l.Offload != "" {
			return "ddp does not offload"
		}
		if l.Engine == memory.EngineFSDP && l.Offload == OffloadOptimizer || l.Engine == memory.EngineFSDP && l.Offload == OffloadParams && l.FSDPStrategy != "full_shard" {
			return "fsdp offloads parameters with full_shard only"
		}
	case memory.EngineDeepSpeed:
		if parallel || ep > 1 {
			return "deepspeed layouts here use data parallelism only"
		}
		if l.Offload == OffloadOptimizer && l.ZeRO < 1 || l.Offload == OffloadParams && l.ZeRO < 3 {
			return "deepspeed offloads the optimizer from ZeRO-1 and parameters at ZeRO-3"
		}
		if l.NumGPUs == 1 && (l.Offload == OffloadNone || l.Offload == "") {
			return "deepspeed on one GPU without offload is the single-process layout"
		}
	case memory.EngineFSDP2:
		if l.NumGPUs < 2 || ep > 1 || l.Offload == OffloadOptimizer {
			return "fsdp2 needs 2+ GPUs and offloads parameters only"
		}
	case memory.EngineMegatron:
		if l.NumGPUs < 2 {
			return "megatron on one GPU is the single-process layout"
		}
		if l.Offload != OffloadNone && l.Offload != "" {
			return "megatron layouts here do not offload"
		}
		if (l.NumGPUs/pp)%ep != 0 {
			return "ep does not divide the GPUs of a pipeline stage"
		}
	default:
		return "unknown engine"
	}
	return ""
}
