package memory

import (
	"fmt"
	"math"
)

// What the caching allocator adds to a training step's live tensors
// (MODEL.md §10), derived from the tensors' sizes with the arithmetic of
// alloc.go rather than from a fraction of the total:
//
//   - the weights are loaded one tensor after another with nothing cached
//     to reuse, so each takes blocks of fresh segments: the blocks'
//     rounding and the unsplit remainders they keep count as allocated
//     (PyTorch adds block->size to allocated_bytes), and the remainders
//     split off but too small for the next tensor stay reserved
//     (freshFootprint). With expandable segments the weights tile one
//     segment per stream whose last page later allocations fill: only
//     the 512-byte rounding remains;
//   - with roundup_power2_divisions every gradient, optimizer state and
//     master copy is rounded up to its power-of-two division too
//     (round_size); the 512-byte rounding alone is below 512 bytes a
//     tensor and not counted;
//   - the pools of other streams (FSDP, ZeRO-3) are the stream_cache row
//     (alloc_streams.go).
//
// What the allocator does with the tensors that come and go within a
// step — activations, logits, transients freed in one phase and
// requested in other sizes in the next, whose blocks are split and
// cached — depends on the order of every request, which the estimate
// does not follow tensor by tensor: that remains the fragmentation
// fraction (constants fragmentation*), and the breakdown says so.

// allocFoot is the allocator's share of a stage's model states.
type allocFoot struct {
	absorbed float64 // weights: block bytes beyond the tensors' (allocated)
	slack    float64 // weights: free remainders of their segments (reserved)
	states   float64 // divisions rounding of optimizer states and master (allocated)
	grads    float64 // divisions rounding of all gradients (allocated, while alive)
	derived  bool    // the weights' segments were derived (whole modules, tensor by tensor)
}

// allocKey is what a model's weight footprint depends on besides the
// model: cached in the modTab, as searches estimate one model with one
// dtype and allocator configuration many times.
type allocKey struct {
	weight, rest float64 // bytes per element of weights and of unquantized modules
	quant        string  // quantized dtype name ("" when not)
	double       bool
	quantHead    bool
	conf         AllocConf
}

// weightsLoadedPerTensor reports whether the stage's weights are loaded as
// one tensor per parameter with every module wholly on the rank: one GPU
// or DDP (and DeepSpeed ZeRO-1/2, whose modules keep their parameters),
// no tensor, pipeline or expert split. FSDP and ZeRO-3 flatten or shard
// parameters, Megatron keeps them in contiguous buffers: their segments
// are not derived.
func (s *setup) weightsLoadedPerTensor() bool {
	d := &s.dist
	if !s.unitFracs {
		return false
	}
	switch {
	case d.single:
		return true
	case d.engine == EngineDDP:
		return true
	case d.engine == EngineDeepSpeed:
		return d.zero < 3
	}
	return false
}

// allocFootprint computes the stage's allocFoot.
func (s *setup) allocFootprint(st *rankStates) allocFoot {
	var f allocFoot
	conf := &s.alloc
	if s.weightsLoadedPerTensor() {
		f.absorbed, f.slack = s.weightFootprint()
		f.derived = true
	}
	if conf.hasDivisions() {
		f.states, f.grads = s.stateRounding(st)
	}
	return f
}

// hasDivisions reports whether roundup_power2_divisions rounds any size.
func (c *AllocConf) hasDivisions() bool {
	for _, d := range c.RoundupDivisions {
		if d > 1 {
			return true
		}
	}
	return false
}

// weightFootprint is the weights' block bytes beyond the tensors' and
// their segments' free remainders, from the model table's tensor groups
// (kept in the table for the next estimate with the same key).
func (s *setup) weightFootprint() (absorbed, slack float64) {
	rest := s.weight.BytesPerElement()
	if s.weight.Quantized {
		rest = s.compute.BytesPerElement()
		if s.kbitFP32 {
			rest = 4
		}
	}
	key := allocKey{weight: s.weight.BytesPerElement(), rest: rest, double: s.double, quantHead: s.quantHead, conf: s.alloc}
	if s.weight.Quantized {
		key.quant = s.weight.Name
	}
	t := s.tab
	if t.allocOK && t.allocKey == key {
		return t.allocAbsorbed, t.allocSlack
	}
	conf := &s.alloc
	var small float64 // rounded bytes of the small pool's tensors, which share 2 MiB segments
	add := func(size, n float64) {
		if size <= 0 || n <= 0 {
			return
		}
		b := uint64(math.Ceil(size))
		rs := conf.roundSize(b)
		if smallPool(rs) && !conf.ExpandableSegments {
			small += n * float64(rs)
			return
		}
		a, r := conf.freshFootprint(b, n)
		absorbed += a - n*size
		if !conf.ExpandableSegments {
			slack += r - a
		}
	}
	rows := t.rows()
	for i := range s.m.Modules {
		mod := &s.m.Modules[i]
		n := float64(mod.Instances)
		if s.weight.Quantized && mod.In > 0 && mod.Out > 0 && (mod.Component != compLMHead || s.quantHead) {
			// The packed weight and, as one more tensor, its block
			// constants; the bias in the unquantized dtype.
			w := int64(mod.In) * int64(mod.Out)
			packed := float64(w) * s.weight.Bits / 8
			add(packed, n)
			add(quantizedLinearBytes(s.weight, w, mod.Out, mod.In, s.double)-packed, n)
			add(float64(mod.Each-w)*rest, n)
			continue
		}
		row := &rows[i]
		for _, g := range row.gs[:row.k] {
			add(g.numel()*rest, g.count)
		}
	}
	if small > 0 {
		// Small blocks keep no remainder (one of 512 bytes or more is
		// split off); they share 2 MiB segments.
		slack += math.Ceil(small/kSmallBuffer)*kSmallBuffer - small
	}
	t.allocKey, t.allocAbsorbed, t.allocSlack, t.allocOK = key, absorbed, slack, true
	return absorbed, slack
}

// stateRounding is roundup_power2_divisions' rounding of the optimizer
// states and master weights (allocated for the whole step) and of all the
// gradients, as a share of each row: the trainable tensors' rounding
// with the element sizes of each row.
func (s *setup) stateRounding(st *rankStates) (states, grads float64) {
	var bytes, extra [3]float64 // per element size: 2, 4 and 1 bytes
	conf := &s.alloc
	sizes := [3]float64{2, 4, 1}
	s.forEachTrainable(func(g tensorGroup) {
		for j, eb := range sizes {
			b := g.numel() * eb
			if b < 1 {
				continue
			}
			bytes[j] += g.count * b
			extra[j] += g.count * (float64(conf.roundSize(uint64(math.Ceil(b)))) - b)
		}
	})
	share := func(eb float64) float64 {
		for j, e := range sizes {
			if e == eb && bytes[j] > 0 {
				return extra[j] / bytes[j]
			}
		}
		return 0
	}
	gradShare := share(s.gradElemBytes(false))
	stateShare := share(math.Max(1, s.stateElemBytes(false)))
	return st.optim.states*stateShare + st.master*share(4), st.grads * gradShare
}

// allocRows is the allocator_rounding row in each phase: the weights'
// absorbed remainders and the states' rounding throughout, the
// gradients' while they are alive.
func (s *setup) allocRows(t *trainParts) [numPhases]float64 {
	f := &t.alloc
	var r [numPhases]float64
	base := f.absorbed + f.states
	g := [numPhases]float64{}
	if f.grads > 0 {
		g = s.gradPhases(t)
	}
	for ph := range numPhases {
		r[ph] = base
		if f.grads > 0 && t.st.grads > 0 {
			r[ph] += f.grads * g[ph] / t.st.grads
		}
	}
	return r
}

// allocNotes are the warnings an allocator configuration draws: the
// settings whose effect the estimate does not derive.
func (s *setup) allocNotes() {
	c := &s.alloc
	if c.Backend == "cudaMallocAsync" {
		s.warn("alloc_conf backend:cudaMallocAsync: CUDA's stream-ordered allocator replaces the caching allocator; gpumem models the caching allocator, so the reserved and device peaks are those it would reserve")
	}
	if c.GCThreshold > 0 {
		s.warn(fmt.Sprintf("alloc_conf garbage_collection_threshold:%g acts only under a per-process memory fraction (torch.cuda.set_per_process_memory_fraction), which the job does not state: not applied", c.GCThreshold))
	}
	if c.MaxSplitSize > 0 {
		s.warn("alloc_conf max_split_size_mb: blocks that large are not split; counted for the weights' segments, while its effect on the reuse of freed blocks within a step stays in the fragmentation fraction")
	}
	if c.hasDivisions() {
		s.warn("alloc_conf roundup_power2_divisions: the weights, gradients, optimizer states and master weights are rounded as the allocator rounds them; activations and other tensors of the step are not, so the estimate is low by their rounding")
	}
}

// Formula and source of the segment_slack row.
const (
	segmentSlackFormula = "Σ weights: segment bytes − block bytes, the weights moved to the GPU tensor by tensor into fresh segments (2 MiB small-pool segments shared; 20 MiB segments cut for 1-10 MiB tensors; larger ones rounded up to 2 MiB, remainders over 1 MiB split off); transformers' device_map loading first reserves one segment for them all (caching_allocator_warmup), which leaves less"
	segmentSlackSource  = "pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp get_allocation_size, should_split, alloc_found_block at 001074d2 (MODEL.md §10)"
)

// resolvedAlloc is a job's allocator configuration and, when the
// framework set it rather than the job, the note saying so.
type resolvedAlloc struct {
	conf    AllocConf
	assumed string
}

// resolveAllocConf parses job.AllocConf. A job that states none runs
// PyTorch's defaults, except under torchtitan from 2024-10, whose launch
// script turns expandable segments on. expandable_segments needs torch
// 2.1 or later: older releases refuse the key.
func resolveAllocConf(job *Job, rs ruleSet, titan bool) (resolvedAlloc, error) {
	var r resolvedAlloc
	if job.AllocConf == "" {
		if titan && !rs.has(ruleTitanDefaultSegments) && !rs.has(ruleTorchNoExpandableSegments) {
			r.conf.ExpandableSegments = true
			r.assumed = "alloc_conf not given: assuming expandable_segments:True, which torchtitan's launch script sets (from 2024-10); state alloc_conf to override"
		}
		return r, nil
	}
	c, err := ParseAllocConf(job.AllocConf)
	if err != nil {
		return r, FieldErrorf("alloc_conf", "{alloc_conf}: %w", err)
	}
	if c.ExpandableSegments && rs.has(ruleTorchNoExpandableSegments) {
		return r, FieldErrorf("alloc_conf", "{alloc_conf}: expandable_segments needs torch 2.1 or later; the {stack} states an older torch, which refuses the key")
	}
	r.conf = c
	return r, nil
}

// allocConfText names an allocator configuration for formulas.
func allocConfText(c *AllocConf) string {
	if s := c.String(); s != "" {
		return s
	}
	return "defaults"
}
