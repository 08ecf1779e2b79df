package memory

import "github.com/gpumem/gpumem/model"

// DeepSpeed defaults (microsoft/DeepSpeed:deepspeed/runtime/zero/config.py)
// and the HF Trainer's "auto" values (transformers integrations/deepspeed.py
// trainer_config_finalize): MODEL.md §3.3.
const (
	dsReduceBucket    = 5e8 // reduce_bucket_size, elements
	dsAllgatherBucket = 5e8 // allgather_bucket_size, elements
	dsPrefetchBucket  = 5e7 // stage3_prefetch_bucket_size, elements
	dsMaxLive         = 1e9 // stage3_max_live_parameters, elements
	dsPersistence     = 1e5 // stage3_param_persistence_threshold, elements
	dsSubGroup        = 1e9 // sub_group_size, elements
	dsMaxReuse        = 1e9 // stage3_max_reuse_distance, elements
	// ZeRO-Infinity NVMe swapping (deepspeed/runtime/zero/offload_config.py):
	// offload_param buffer_count 5 × buffer_size 1e8 elements; offload_optimizer
	// buffer_count 4 sub-group-sized fp32 swap buffers.
	dsParamSwapBuffers = 5 * 1e8
	dsOptSwapBuffers   = 4
)

// dsKnobs are the DeepSpeed buffer sizes of the job, in elements.
type dsKnobs struct {
	reduce, allgather, prefetch, maxLive, persist, subGroup, maxReuse float64
	overlap, contiguous                                               bool
}

// deepspeedKnobs resolves the DeepSpeed settings: the job's values, else
// the HF Trainer's "auto" values under the HF framework, else DeepSpeed's
// defaults. overlap_comm defaults to true for ZeRO-3 only.
func (s *setup) deepspeedKnobs() dsKnobs {
	j := s.job
	h := float64(s.m.Text.Hidden)
	hf := s.framework == FrameworkHF
	pick := func(v int64, auto, def float64) float64 {
		switch {
		case v > 0:
			return float64(v)
		case hf && auto > 0:
			return auto
		}
		return def
	}
	// The ZeRO-3 knobs where 0 is a setting: nil is the default.
	pickSet := func(v *int64, auto, def float64) float64 {
		if v != nil {
			return float64(*v)
		}
		return pick(0, auto, def)
	}
	k := dsKnobs{
		reduce:     pick(j.ReduceBucketSize, h*h, dsReduceBucket),
		allgather:  pick(j.AllgatherBucketSize, 0, dsAllgatherBucket),
		prefetch:   pickSet(j.PrefetchBucketSize, 0.9*h*h, dsPrefetchBucket),
		maxLive:    pickSet(j.MaxLiveParameters, 0, dsMaxLive),
		persist:    pickSet(j.ParamPersistenceThreshold, 10*h, dsPersistence),
		subGroup:   pick(j.SubGroupSize, 0, dsSubGroup),
		maxReuse:   pickSet(j.MaxReuseDistance, 0, dsMaxReuse),
		overlap:    s.dist.zero == 3,
		contiguous: true,
	}
	if j.OverlapComm != nil {
		k.overlap = *j.OverlapComm
	}
	if j.ContiguousGradients != nil {
		k.contiguous = *j.ContiguousGradients
	}
	return k
}

// shardStates divides the model states by the data-parallel sharding
// group (ZeRO arXiv:1910.02054 §5: stage 1 optimizer states, 2 + grads,
// 3 + params) and moves offloaded states to the host. It returns the
// host bytes of this rank (CPU, NVMe).
func (s *setup) shardStates(r *rankStates, p *trParams) (cpu, nvme float64) {
	d := &s.dist
	if d.single || (d.nd <= 1 && d.offloadOpt == "" && d.offloadParams == "" && !s.fsdpMaster()) {
		return 0, 0
	}
	nd := max(d.nd, 1)
	masterGrad := 0.0
	if s.master && !s.gradFP32 {
		masterGrad = 4 * (p.trainable - p.adapters) // the fp32 gradient copy in the step transient
	}
	if s.fsdpMaster() {
		// FSDP mixed precision: the sharded flat parameters are the fp32
		// model itself (the master); the bf16 copies exist only while a
		// unit is unsharded (MixedPrecision param_dtype, §3.5).
		r.weights = r.weights * 4 / s.weight.BytesPerElement()
		r.master = 0
		// Their gradients are fp32 as well: the reduce-scatter output is
		// cast to the sharded parameter's dtype (FSDP1 _runtime_utils.py
		// _cast_grad_to_param_dtype; FSDP2 _fsdp_collectives.py
		// foreach_reduce_scatter, _to_dtype_if_needed(..., orig_dtype)),
		// and the optimizer updates the fp32 parameters with them
		// directly: no fp32 gradient copy in the step.
		k := 4 / s.gradElemBytes(false)
		r.grads += (p.trainable - p.adapters) * s.gradElemBytes(false) * (k - 1)
		r.gradsHead *= k
		r.gradsEmb *= k
	}
	if d.zero >= 1 {
		r.master /= nd
		r.optim.states /= nd
		stepGrad := masterGrad / nd
		if s.fsdpMaster() {
			stepGrad = 0
		}
		if d.engine == EngineDeepSpeed && d.zero == 3 {
			// ZeRO-3 converts the gradients to fp32 per optimizer sub-group
			// (stage3.py _prepare_fp32_grad_for_sub_group; §2.3).
			stepGrad = min(stepGrad, 4*s.deepspeedKnobs().subGroup)
		}
		r.optim.transient = (r.optim.transient-masterGrad)/nd + stepGrad
	}
	if d.zero >= 2 {
		r.grads /= nd
		r.gradsHead /= nd
		r.gradsEmb /= nd
	}
	if d.zero >= 3 || (s.isFSDP() && d.zero >= 2) {
		// FSDP SHARD_GRAD_OP still stores sharded flat parameters; the
		// unsharded units are its communication buffers. A sharded
		// QLoRA job's quantization constants are not parameters: every
		// rank keeps them whole (resolveShardedQLoRA).
		r.weights = (r.weights-r.weightsReplicated)/nd + r.weightsReplicated
		r.adapters /= nd
	}
	// Host bytes by offload target (offloadTarget: "cpu" or "nvme").
	var host [2]float64
	at := func(target string) *float64 {
		if target == "nvme" {
			return &host[1]
		}
		return &host[0]
	}
	if d.offloadOpt != "" {
		// ZeRO-Offload (arXiv:2101.06840): fp32 master, optimizer states,
		// the fp32 gradient partition and the update live on the host;
		// the GPU keeps its reduce buckets.
		*at(d.offloadOpt) += r.master + r.optim.states + 4*(p.trainable)/nd
		r.master, r.optim.states, r.optim.transient = 0, 0, 0
		if d.zero >= 2 {
			r.grads, r.gradsHead, r.gradsEmb = 0, 0, 0
		}
	}
	if d.offloadParams != "" {
		*at(d.offloadParams) += r.weights - r.weightsReplicated
		r.weights = r.weightsReplicated
	}
	cpu, nvme = host[0], host[1]
	if nvme > 0 {
		// NVMe swapping stages tensors through pinned CPU buffers
		// (ZeRO-Infinity arXiv:2104.07857 §5).
		if d.offloadParams == "nvme" {
			cpu += dsParamSwapBuffers * s.compute.BytesPerElement()
		}
		if d.offloadOpt == "nvme" {
			cpu += dsOptSwapBuffers * 4 * min(s.deepspeedKnobs().subGroup, p.trainable/nd)
		}
	}
	return cpu, nvme
}

// isFSDP reports whether the engine is PyTorch FSDP (1 or 2).
func (s *setup) isFSDP() bool { return s.dist.engine == EngineFSDP || s.dist.engine == EngineFSDP2 }

// fsdpMaster reports whether FSDP shards an fp32 model that is cast to
// the compute dtype per unit (a bf16/fp16 job with an fp32 master).
func (s *setup) fsdpMaster() bool {
	return s.isFSDP() && s.dist.zero >= 2 && s.master && !s.weight.Quantized
}

// engineBuffers is the per-phase memory of the engine's communication
// and gathering buffers on one rank (gradient buckets, gathered
// parameters, reduce buffers; MODEL.md §3.3, §3.5, §3.6, §3.7, §8), which
// depends on the parameters and states of the stage but not on the
// micro-batch. The comm row adds the model-parallel buffers
// (parallelBuffers, §4.8) to it.
func (s *setup) engineBuffers(r *rankStates, p *trParams) [numPhases]float64 {
	d := &s.dist
	var out [numPhases]float64
	if d.single {
		return out
	}
	switch d.engine {
	case EngineDDP:
		out = s.ddpBuckets(r)
	case EngineDeepSpeed:
		out = s.deepspeedBuffers(r, p)
	case EngineFSDP, EngineFSDP2:
		out = s.fsdpBuffers(r, p)
	}
	return out
}

// ddpBuckets: DistributedDataParallel(gradient_as_bucket_view=False), the
// default, keeps all-reduce buckets (bucket_cap_mb, 25 MB each, the first
// 1 MB) covering every gradient, for the whole run — a second gradient
// copy (pytorch/pytorch torch/nn/parallel/distributed.py; §3.7). With the
// view the gradients are the buckets (gradPhases keeps them alive).
func (s *setup) ddpBuckets(r *rankStates) [numPhases]float64 {
	if s.job.GradientAsBucketView {
		return [numPhases]float64{}
	}
	return allPhases(r.grads)
}

// deepspeedBuffers are DeepSpeed's ZeRO buffers (MODEL.md §3.3).
//
//   - stage 0: gradients are all-reduced through flattened buffers of up
//     to 5e8 elements after backward (engine.py buffered_allreduce_fallback);
//   - stages 1-2: with contiguous_gradients, the independent-partition
//     gradient bucket of reduce_bucket_size elements in the gradient
//     dtype, two with overlap_comm (stage_1_and_2.py backward: buf_0,
//     buf_1); the all-gather of the updated partitions after the step
//     writes into the flat bf16 parameters in place
//     (deepspeed/runtime/utils.py all_gather_into_tensor_dp_groups), so
//     allgather_bucket_size only chunks the fallback for torch builds
//     without all_gather_into_tensor and costs nothing here;
//   - stage 3: the gathered working set — the module in use plus the
//     prefetch bucket, capped by stage3_max_live_parameters — the
//     persistent parameters below stage3_param_persistence_threshold kept
//     whole on every rank, and the reduce (IPG) bucket (zero3ReduceBucket).
//     In backward under layer checkpointing the working set is at least
//     what is kept for reuse (zero3KeptForReuse) plus what may still be
//     prefetched.
func (s *setup) deepspeedBuffers(r *rankStates, p *trParams) [numPhases]float64 {
	k := s.deepspeedKnobs()
	c := s.compute.BytesPerElement()
	g := s.gradElemBytes(false)
	switch s.dist.zero {
	case 0:
		b := min(k.reduce, p.trainable) * g
		return [numPhases]float64{0, 0, 0, 0, b}
	case 1, 2:
		if !k.contiguous {
			return [numPhases]float64{}
		}
		b := k.reduce * g
		if k.overlap {
			b *= 2
		}
		return [numPhases]float64{0, 0, b, b, 0}
	}
	gathered := s.zero3Gathered(&k)
	persist := s.persistentParams(k.persist) * c
	bucket := s.zero3ReduceBucket(&k, p)
	fwd := gathered + persist
	bwd := s.zero3GatheredBackward(&k) + persist
	return [numPhases]float64{fwd + bucket[phForward], fwd + bucket[phLoss], bwd + bucket[phBackward],
		bwd + bucket[phBackwardEnd], persist + bucket[phStep]}
}

// zero3ReduceBucket is the per-phase memory of ZeRO-3's reduce (IPG)
// bucket. With contiguous_gradients (the default) the optimizer
// allocates __ipg_bucket_flat_buffer once, when it is built
// (stage3.py _setup_for_real_optimizer: torch.empty(reduce_bucket_size,
// dtype=self.dtype) on the device, also with the optimizer offloaded),
// and frees it only in destroy(): reduce_bucket_size elements whatever
// the trainable parameter count, in every phase. Its dtype is that of
// the optimizer's first parameter, which the engine has cast to the
// config's fp16/bf16 (engine.py _configure_distributed_model) —
// zero3BucketBytes. Without contiguous_gradients the bucket is the
// autograd gradients themselves, held in backward until the bucket
// would overflow: at most reduce_bucket_size elements and no more than
// are trainable (MODEL.md §3.3).
func (s *setup) zero3ReduceBucket(k *dsKnobs, p *trParams) [numPhases]float64 {
	b := s.zero3BucketBytes()
	if k.contiguous {
		return allPhases(k.reduce * b)
	}
	held := min(k.reduce, p.trainable) * b
	return [numPhases]float64{0, 0, held, held, 0}
}

// zero3BucketBytes is the element size of ZeRO-3's reduce bucket and of
// the gradients copied into it: the dtype of the trainable parameters
// after the engine's cast to the config's fp16/bf16 (stage3.py
// self.dtype = param_groups[0]['params'][0].dtype). That is the weight
// dtype, or the compute dtype when the frozen base weights are quantized
// (QLoRA: the trainable parameters are the adapters).
func (s *setup) zero3BucketBytes() float64 {
	if s.weight.Quantized {
		return s.compute.BytesPerElement()
	}
	return s.gradElemBytes(false)
}

// zero3GatheredBackward is the gathered working set of ZeRO-3 in
// backward, in bytes: the forward's, or, when more, the parameters kept
// for reuse plus the prefetch the live-parameter cap still allows
// (partitioned_param_coordinator.py fetch_sub_module: max_params_to_prefetch
// = min(max_live − available, prefetch_bucket)).
func (s *setup) zero3GatheredBackward(k *dsKnobs) float64 {
	g := s.zero3Gathered(k)
	kept := s.zero3KeptForReuse()
	if kept == 0 {
		return g
	}
	return max(g, (kept+min(k.prefetch, max(0, k.maxLive-kept)))*s.compute.BytesPerElement())
}

// zero3KeptForReuse is the parameter count ZeRO-3 keeps gathered from a
// layer's recomputation into its backward under layer checkpointing.
// After a module runs, __params_to_release (partitioned_param_coordinator.py)
// walks the recorded module trace forward and keeps the module's
// parameters gathered when it meets them again before
// stage3_max_reuse_distance elements (1e9 by default; Job.MaxReuseDistance) of parameters;
// stage3_max_live_parameters bounds prefetching only, not this. A
// checkpointed layer's trace is its forward, recomputed, then its
// backward in reverse order, so the Linear j of n is met again after
// 2·Σ_{l>j} n_l elements: the last projections of the layer (for
// Llama-2-70B gate, up and down, 705 M parameters) stay gathered until
// their backward. Dense layers only (routed experts depend on the
// tokens); 0 without full layer checkpointing.
func (s *setup) zero3KeptForReuse() float64 {
	if s.ckpt != ckptFull || s.m.Text.MoE != nil {
		return 0
	}
	maxReuse := s.deepspeedKnobs().maxReuse
	top := min(s.dist.stageHi, s.m.Text.Layers) - 1
	var sizes [16]float64
	n := 0
	for i := range s.m.Modules {
		mod := &s.m.Modules[i]
		if mod.Stack != stackText || mod.Layer < 0 || mod.Kind != "linear" || mod.Expert ||
			top < mod.Layer || top >= mod.Layer+max(mod.Layers, 1) || n == len(sizes) {
			continue
		}
		sizes[n] = s.storageElems(mod) / float64(max(s.dist.tp, 1))
		n++
	}
	kept, after := 0.0, 0.0
	for j := n - 1; j >= 0; j-- {
		if 2*after < maxReuse {
			kept += sizes[j]
		}
		after += sizes[j]
	}
	return kept
}

// zero3Gathered is the bytes of ZeRO-3's gathered working set: the
// module in use plus the prefetch bucket, capped by
// stage3_max_live_parameters. Offloaded parameters come back from the
// host through the same working set.
func (s *setup) zero3Gathered(k *dsKnobs) float64 {
	return min(k.maxLive, s.largestModule(true)+k.prefetch) * s.compute.BytesPerElement()
}

// persistentParams counts the parameters ZeRO-3 leaves unpartitioned on
// every rank: tensors smaller than the persistence threshold (norms,
// biases) of the current stage.
func (s *setup) persistentParams(threshold float64) float64 {
	var n float64
	for i := range s.m.Modules {
		mod := &s.m.Modules[i]
		f := s.frac(i)
		if f == 0 {
			continue
		}
		s.moduleTensorsOnce(mod, func(numel, count float64) {
			if numel < threshold {
				n += numel * count * f
			}
		})
	}
	return n
}

// moduleTensorsOnce calls fn with each tensor shape of a module (elements
// of one tensor and how many there are).
func (s *setup) moduleTensorsOnce(mod *model.Module, fn func(numel, count float64)) {
	moduleTensors(s.m, mod, 1, func(g tensorGroup) { fn(g.numel(), g.count) })
}

// fsdpBuffers are FSDP's unsharded units (MODEL.md §3.5, §3.6): the unit
// computing and the one prefetched (limit_all_gathers, FSDP2's two
// all-gather outputs) in the compute dtype, the root unit (embedding,
// final norm, head) which stays unsharded from forward into backward,
// and in backward the unit's unsharded gradient in the reduce dtype (fp32
// in torchtitan's MixedPrecisionPolicy, the gradient dtype otherwise)
// before its reduce-scatter. SHARD_GRAD_OP keeps every unit of the stage
// unsharded from forward to the end of its backward.
func (s *setup) fsdpBuffers(r *rankStates, p *trParams) [numPhases]float64 {
	d := &s.dist
	if d.zero == 0 {
		return allPhases(r.grads) // NO_SHARD all-reduces like DDP
	}
	c := s.compute.BytesPerElement()
	unit, root := s.fsdpUnits(true)
	fwd := 2*unit*c + root*c
	if d.shardGradOp {
		fwd = float64(d.stageLayers)*unit*c + root*c
	}
	bwd := fwd + s.fsdpReduceBytes()*s.fsdpGradUnit(unit, p)
	return [numPhases]float64{fwd, fwd, bwd, bwd, 0}
}

// fsdpReduceBytes is the element size FSDP reduce-scatters gradients in:
// fp32 in torchtitan's MixedPrecisionPolicy(reduce_dtype=float32) and
// under an fp32 master, the gradient dtype otherwise.
func (s *setup) fsdpReduceBytes() float64 {
	if s.framework == FrameworkTorchtitan || s.master {
		return 4
	}
	return s.gradElemBytes(false)
}

// fsdpGradUnit is the number of gradients one wrapped unit of unit
// parameters reduce-scatters: only trainable parameters get unsharded
// gradients (LoRA: the adapters).
func (s *setup) fsdpGradUnit(unit float64, p *trParams) float64 {
	if d := &s.dist; d.stageLayers > 0 && s.method != MethodFull {
		return min(unit, p.trainable/float64(d.stageLayers))
	}
	return unit
}

// largestModule is the parameter count of the largest module ZeRO-3
// gathers on its own (the module that owns the parameters directly: a
// Linear, an embedding), on this rank — DeepSpeed's largest_layer_params
// (stage3.py estimate_zero3_model_states_mem_needs; MODEL.md §3.2); when
// stored, the elements ZeRO-3 gathers for it (storageElems).
func (s *setup) largestModule(stored bool) float64 {
	var n float64
	for i := range s.m.Modules {
		mod := &s.m.Modules[i]
		f := s.frac(i)
		if f == 0 {
			continue
		}
		// One instance of the module, with the tp/ep split of rankFrac
		// but not its share of layers.
		each := float64(mod.Each)
		if stored {
			each = s.storageElems(mod)
		}
		switch {
		case mod.Expert:
			// Each expert is a module of its own.
		case mod.In > 0 && mod.Out > 0, mod.Component == compEmbedding:
			each /= float64(s.dist.tp)
		}
		n = max(n, each)
	}
	return n
}

// fsdpUnits returns the parameters of the largest wrapped unit (one
// decoder layer) and of the root unit, on this rank before sharding;
// when stored, the elements FSDP gathers for them (storageElems: a
// sharded QLoRA job's 4-bit weights are gathered packed).
func (s *setup) fsdpUnits(stored bool) (unit, root float64) {
	var layers float64
	for i := range s.m.Modules {
		mod := &s.m.Modules[i]
		f := s.frac(i)
		n := float64(mod.Params)
		if stored && (s.shardedQ || s.float8Gather) {
			n = s.storageElems(mod) * float64(mod.Instances)
		}
		switch {
		case mod.Stack == stackText && mod.Layer >= 0:
			layers += n * f
		case mod.Stack == stackText:
			root += n * f
		}
	}
	return layers / float64(max(s.dist.stageLayers, 1)), root
}

// parallelBuffers are the transient buffers of model parallelism, one
// layer at a time (forward and backward):
//
//   - sequence parallel: the all-gathered sequence (N·h) before the
//     column-parallel Linears (Korthikanti et al. §4.2.2);
//   - context parallel: the K/V blocks exchanged between ranks — all of
//     them with torchtitan's all-gather rotation, a send and a receive
//     block with Megatron's ring; dK/dV travel too in backward (§4.8);
//   - expert parallel: the all-to-all send and receive buffers of the
//     routed token copies, 2·N·K_e·h (§8).
func (s *setup) parallelBuffers() [numPhases]float64 {
	d := &s.dist
	st := &s.m.Text
	c := s.compute.BytesPerElement()
	n := s.tokens / float64(d.cp) // tokens of one micro-batch on this rank
	var fwd, bwd float64
	if d.sp && d.tp > 1 {
		fwd += n * float64(st.Hidden) * c
		bwd += n * float64(st.Hidden) * c
	}
	if d.cp > 1 {
		kv := 2 * n * float64(st.KVHeads*st.HeadDim) / float64(d.tp) * c // K and V of one local chunk
		blocks := 2.0
		if d.engine == EngineFSDP2 || s.framework == FrameworkTorchtitan {
			blocks = float64(d.cp)
		}
		fwd += blocks * kv
		bwd += 2 * blocks * kv
	}
	if d.ep > 1 && st.MoE != nil {
		a2a := 2 * n * float64(st.MoE.ExpertsPerToken) * float64(st.Hidden) * c
		fwd += a2a
		bwd += a2a
	}
	if fwd == 0 && bwd == 0 {
		return [numPhases]float64{}
	}
	return [numPhases]float64{fwd, fwd, bwd, bwd, 0}
}

// allPhases repeats v over the phases.
func allPhases(v float64) [numPhases]float64 { return [numPhases]float64{v, v, v, v, v} }

// ncclBytes is the device memory of the rank's NCCL communicators: one per
// parallel group the rank joins (dp × cp, tp, pp, ep), each nccl_mib
// (NVIDIA/nccl src/init.cc buffer defaults; MODEL.md §10).
func (s *setup) ncclBytes() float64 {
	d := &s.dist
	if d.single || d.world <= 1 {
		return 0
	}
	n := 0
	for _, size := range []int{d.dp * d.cp, d.tp, d.pp, d.ep} {
		if size > 1 {
			n++
		}
	}
	return float64(n) * s.c[cNCCLMiB] * (1 << 20)
}
