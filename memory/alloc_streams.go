package memory

import "github.com/gpumem/gpumem/units"

// Caching-allocator pools of FSDP's communication streams (MODEL.md §10).
//
// PyTorch's caching allocator ties every block to the stream it was
// allocated on: "Once freed, blocks can be re-allocated on the same
// stream, but not on any other stream" (pytorch/pytorch
// c10/cuda/CUDACachingAllocator.cpp, the allocator's header comment;
// get_free_block compares the stream before the size). FSDP allocates its
// collective buffers on its own streams:
//
//   - FSDP2 (torch/distributed/_composable/fsdp/_fsdp_collectives.py):
//     foreach_all_gather allocates the all-gather output on the all-gather
//     copy-in stream; foreach_reduce_scatter (foreach_reduce in later
//     releases) allocates the reduce-scatter input (the unsharded
//     gradients in reduce_dtype) and output on the reduce-scatter stream,
//     and the sharded gradients are views of that output ("The RS output
//     is allocated in the RS stream and used in the default stream (for
//     optimizer)").
//   - FSDP1 (torch/distributed/fsdp/_runtime_utils.py): _unshard allocates
//     the padded unsharded flat parameter on the unshard stream;
//     _post_backward_hook casts the unsharded gradient to reduce_dtype and
//     _reduce_grad allocates the new sharded gradient on the post-backward
//     stream.
//
// Freed, these blocks stay cached for their stream. zero_grad (set_to_none)
// frees the sharded gradients before the next forward, so through forward
// and loss their memory is reserved but unusable by the compute stream;
// nothing returns it unless a cudaMalloc fails (release_cached_blocks).
// The reserved peak is therefore the compute stream's own peak plus these
// pools, not the allocated peak plus a fraction.

// fsdpPools are the pools of FSDP's communication streams on one rank, in
// bytes, and the bytes of them each phase's rows count as allocated.
type fsdpPools struct {
	gather float64 // all-gather outputs
	reduce float64 // reduce-scatter inputs and outputs, the sharded gradients among them
	live   [numPhases]float64
}

// gatherPool is the all-gather pool for units of unit bytes and a root
// unit (embedding, final norm, output head) of root bytes, gathered first.
// k = fsdpGathersInFlight outputs are alive at a time. The allocator hands
// out the smallest free block that fits and splits it (best fit), so:
//
//   - FSDP2: the root's output is freed once the next unit's copy-out is
//     done; a root at least as large as a unit then serves units in turn,
//     a smaller one cannot: root + (k−1)·unit, or root + k·unit;
//   - FSDP1: the root's unsharded flat parameter is its all-gather output
//     and stays until the end of backward (the root is not resharded after
//     forward), so the units need k blocks of their own: root + k·unit.
func gatherPool(unit, root float64, fsdp2 bool) float64 {
	k := float64(fsdpGathersInFlight)
	if fsdp2 && root >= unit {
		return root + (k-1)*unit
	}
	return root + k*unit
}

// reduceInputs are the reduce-scatter input blocks: one for the units,
// reused from one unit to the next, and the root's own when it does not
// fit in the unit's block (the root reduce-scatters last, with the unit
// block free). unit and root are bytes of one unsharded gradient in the
// reduce dtype.
func reduceInputs(unit, root float64) float64 {
	if root > unit {
		return unit + root
	}
	return unit
}

// fsdpPools returns the communication-stream pools of an FSDP job that
// shards its gradients (FULL_SHARD, HYBRID_SHARD, SHARD_GRAD_OP), and false
// for any other job.
func (s *setup) fsdpPools(t *trainParts) (fsdpPools, bool) {
	d := &s.dist
	if d.single || !s.isFSDP() || d.zero < 2 {
		return fsdpPools{}, false
	}
	c := s.compute.BytesPerElement()
	r := s.fsdpReduceBytes()
	unit, root := s.fsdpUnits(true)
	gradUnit := s.fsdpGradUnit(unit, &t.p)
	gradRoot := root
	if s.method != MethodFull {
		gradRoot = max(0, min(root, t.p.trainable-gradUnit*float64(d.stageLayers)))
	}
	var p fsdpPools
	fsdp2 := d.engine == EngineFSDP2
	if !d.shardGradOp {
		// SHARD_GRAD_OP keeps the gathered units from forward to the end
		// of their backward: the comm row counts them as allocated.
		p.gather = gatherPool(unit*c, root*c, fsdp2)
	}
	// The sharded gradients (the grads row, in the parameter dtype) and
	// the unsharded reduce-dtype inputs; when the dtypes differ, the
	// reduce-dtype output of the largest unit is cast and freed too.
	p.reduce = t.st.grads + reduceInputs(gradUnit*r, gradRoot*r)
	gradBytes := s.gradElemBytes(false)
	if s.fsdpMaster() {
		gradBytes = 4 // the sharded gradients of fp32 sharded parameters
	}
	if r != gradBytes {
		p.reduce += max(gradUnit, gradRoot) / d.nd * r
	}
	// What the phases count as allocated in these pools: the grads row
	// (the sharded gradients alive), the reduce-scatter input of the comm
	// row in backward, and the all-gather outputs of the comm row: FSDP2's
	// prefetched output (its unsharded parameters are copied out on the
	// compute stream), FSDP1's gathered units themselves.
	grads := s.gradPhases(t)
	for ph := range numPhases {
		g := 0.0
		switch {
		case ph == phStep:
		case fsdp2:
			g = unit * c
		default:
			g = (2*unit + root) * c
		}
		in := 0.0
		if ph == phBackward || ph == phBackwardEnd {
			in = gradUnit * r
		}
		p.live[ph] = min(g, p.gather) + min(grads[ph]+in, p.reduce)
	}
	return p, true
}

// zero3Pools are the communication-stream pools of a DeepSpeed ZeRO-3
// job with overlap_comm (on by default for stage 3), which puts its
// collectives on streams of their own (v0.14 and later):
//
//   - all-gather: PartitionedParameterCoordinator runs every fetch under
//     its __allgather_stream (parameter_offload.py creates it when
//     overlap_comm), and all_gather_coalesced allocates the gathered
//     parameters there (partition_parameters.py; the multi-parameter
//     path also its flat gather buffer, cut into the parameters with
//     torch.cat before it is freed); free_param releases them into that
//     stream's pool. The pool is the gathered working set, which the
//     comm_buffers row counts as allocated from forward to the end of
//     backward, not at the optimizer step.
//   - reduce: __reduce_and_partition_ipg_grads runs on
//     reduce_and_partition_stream; with reduce_scatter on (the default)
//     reduce_scatter_coalesced (runtime/comm/coalesced_collectives.py)
//     torch.cat's the bucket's gradients, interleaved by rank, into a new
//     flat buffer of the bucket's size in the gradient dtype (no copy for
//     a bucket of one tensor that divides evenly; buckets that collect
//     several tensors are taken here), and the rank's partition, a view of
//     it, is copied into the persistent gradient partitions. No phase
//     counts the buffer as allocated.
//
// The IPG bucket and the gradient partitions are allocated once on the
// compute stream; the autograd gradients copied into the bucket are
// record_stream'ed to the reduce stream, which delays their reuse but
// keeps them in the compute stream's pool.
func (s *setup) zero3Pools(t *trainParts) (fsdpPools, bool) {
	d := &s.dist
	if d.single || d.engine != EngineDeepSpeed || d.zero != 3 {
		return fsdpPools{}, false
	}
	k := s.deepspeedKnobs()
	if !k.overlap {
		return fsdpPools{}, false
	}
	var p fsdpPools
	fwd, bwd := s.zero3Gathered(&k), s.zero3GatheredBackward(&k)
	p.gather = max(fwd, bwd)
	p.reduce = min(k.reduce, t.p.trainable) * s.zero3BucketBytes()
	p.live[phForward], p.live[phLoss] = fwd, fwd
	p.live[phBackward], p.live[phBackwardEnd] = bwd, bwd
	return p, true
}

// streamCache returns the reserved bytes FSDP's communication-stream
// pools add to the allocated peak, with the pools: the compute stream
// reserves the largest phase total without the pools' live part, the
// pools add their whole size (MODEL.md §10), and the allocated peak is
// subtracted. It returns false for jobs without such pools.
func (s *setup) streamCache(t *trainParts) (cache float64, pools fsdpPools, ok bool) {
	pools, ok = t.pools, t.poolsOK
	if !ok {
		return 0, pools, false
	}
	total := &t.rows.sum
	var peak, compute float64
	for ph := range numPhases {
		peak = max(peak, total[ph])
		compute = max(compute, total[ph]-pools.live[ph])
	}
	return max(0, compute+pools.gather+pools.reduce-peak), pools, true
}

// commPools are the stage's communication-stream pools (FSDP, or ZeRO-3
// with overlap_comm), which depend on its parameters and states but not
// on the micro-batch; false when it has none.
func (s *setup) commPools(t *trainParts) (fsdpPools, bool) {
	if p, ok := s.fsdpPools(t); ok {
		return p, true
	}
	return s.zero3Pools(t)
}

// trainOverheads is [runtimeOverheads] for a training stage whose parts
// are computed: an FSDP job, or a ZeRO-3 job with overlap_comm, gets its
// communication-stream pools as the stream_cache row (and the training
// fragmentation for the compute stream).
func (s *setup) trainOverheads(t *trainParts) Overheads {
	if !s.acts.haveOv {
		// The job's, alike for every stage: computed once.
		s.acts.ov, s.acts.haveOv = runtimeOverheads(s.job, &s.c), true
	}
	o := s.acts.ov
	o.SegmentSlack = units.FromFloat(t.alloc.slack)
	if s.dist.single || s.dist.zero < 2 {
		// No FSDP (sharding level 2 or 3) or ZeRO-3 stream pools.
		return o
	}
	if cache, p, ok := s.streamCache(t); ok {
		o.setStreamCache(cache, p.gather, p.reduce, &s.c)
	}
	return o
}

// Formula and source of the stream_cache row.
const (
	streamCacheFormula = "all-gather stream pool + reduce stream pool (FSDP: sharded gradients, unsharded reduce-dtype gradients; ZeRO-3: the bucket's flat reduce-scatter copy) − the part the allocated peak holds"
	streamCacheSource  = "MODEL.md §10: pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp (blocks reused on their own stream only); " +
		"torch/distributed/_composable/fsdp/_fsdp_collectives.py foreach_all_gather, foreach_reduce_scatter (later foreach_reduce); torch/distributed/fsdp/_runtime_utils.py _post_backward_hook, _reduce_grad; " +
		"deepspeed/runtime/zero/partitioned_param_coordinator.py __allgather_stream, stage3.py reduce_and_partition_stream, runtime/comm/coalesced_collectives.py reduce_scatter_coalesced"
)
