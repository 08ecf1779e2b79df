package memory

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpumem/gpumem/model"
)

// distSpec is the resolved parallel layout of a training job: what one
// rank (the most loaded: pipeline stage 0) holds and which model states
// its data-parallel group shards (MODEL.md §3, §4.7, §4.8, §8).
type distSpec struct {
	single             bool // one process, nothing sharded
	world              int
	dp, tp, pp, cp, ep int
	engine             string // ddp, deepspeed, fsdp, fsdp2, megatron
	zero               int    // 0 none, 1 optimizer, 2 + gradients, 3 + parameters
	nd                 float64
	stageLayers        int     // text layers on pipeline stage 0
	inFlight           float64 // micro-batches whose activations stage 0 holds
	sp                 bool
	offloadOpt         bool
	offloadParams      bool
	shardGradOp        bool // FSDP SHARD_GRAD_OP: units stay unsharded from forward to backward
}

// Engines (Job.Engine) after normalisation.
const (
	engineDDP       = "ddp"
	engineDeepSpeed = "deepspeed"
	engineFSDP      = "fsdp"
	engineFSDP2     = "fsdp2"
	engineMegatron  = "megatron"
)

// resolveDist reads the parallel layout. A job without engine and with
// one GPU is a single process.
func (s *setup) resolveDist() error {
	j := s.job
	d := distSpec{tp: max(j.TP, 1), pp: max(j.PP, 1), cp: max(j.CP, 1), ep: max(j.EP, 1)}
	for _, v := range []struct {
		name string
		n    int
	}{{"--num-gpus", j.NumGPUs}, {"--dp", j.DP}, {"--tp", j.TP}, {"--pp", j.PP}, {"--cp", j.CP}, {"--ep", j.EP}, {"--nodes", j.Nodes}, {"--zero", j.ZeRO}} {
		if v.n < 0 {
			return fmt.Errorf("%s: want a non-negative value, got %d", v.name, v.n)
		}
	}
	model := d.tp * d.pp * d.cp
	d.dp = j.DP
	d.world = j.NumGPUs
	switch {
	case d.world == 0 && d.dp == 0:
		d.dp, d.world = 1, model
	case d.world == 0:
		d.world = d.dp * model
	case d.dp == 0:
		if d.world%model != 0 {
			return fmt.Errorf("--num-gpus %d is not a multiple of tp×pp×cp = %d", d.world, model)
		}
		d.dp = d.world / model
	}
	if d.dp*model != d.world {
		return fmt.Errorf("--num-gpus %d ≠ dp %d × tp %d × pp %d × cp %d", d.world, d.dp, d.tp, d.pp, d.cp)
	}
	if err := s.resolveEngine(&d); err != nil {
		return err
	}
	if err := s.checkDivisible(&d); err != nil {
		return err
	}
	L := s.m.Text.Layers
	d.stageLayers = L
	d.inFlight = 1
	if d.pp > 1 {
		if d.pp > L {
			return fmt.Errorf("--pp %d: more pipeline stages than the %d layers", d.pp, L)
		}
		d.stageLayers = (L + d.pp - 1) / d.pp
		// 1F1B: stage 0 holds min(p, micro-batches) micro-batches; the
		// interleaved schedule multiplies by 1 + (p−1)/(p·v) (§4.7).
		d.inFlight = math.Min(float64(d.pp), float64(s.accum))
		if v := j.VirtualStages; v > 1 {
			d.inFlight = float64(d.pp) * (1 + float64(d.pp-1)/float64(d.pp*v))
		}
	}
	d.sp = j.SP
	d.single = d.world == 1 && d.engine == ""
	if d.single && (d.offloadOpt || d.offloadParams) {
		s.warn("--offload-optimizer/--offload-params need an engine that offloads (--engine deepspeed or fsdp): ignored for a plain single process")
	}
	s.dist = d
	return nil
}

// resolveEngine sets the sharding stage and group of the engine.
func (s *setup) resolveEngine(d *distSpec) error {
	j := s.job
	e := strings.ToLower(strings.TrimSpace(j.Engine))
	switch {
	case e == "" && d.world > 1:
		e = engineDDP
	case e == "":
	case e == "ddp" || e == "torch-ddp":
		e = engineDDP
	case e == "deepspeed" || e == "ds" || strings.HasPrefix(e, "zero"):
		e = engineDeepSpeed
	case e == "fsdp" || e == "fsdp1":
		e = engineFSDP
	case e == "fsdp2" || strings.Contains(e, "torchtitan") || e == "fully_shard":
		e = engineFSDP2
	case e == "megatron" || e == "megatron-core" || e == "nemo":
		e = engineMegatron
	default:
		return fmt.Errorf("--engine: unknown engine %q (want ddp, deepspeed, fsdp, fsdp2 or megatron)", j.Engine)
	}
	d.engine = e
	d.nd = float64(d.dp)
	switch e {
	case engineDeepSpeed:
		if j.ZeRO > 3 {
			return fmt.Errorf("--zero: want a stage 0..3, got %d", j.ZeRO)
		}
		d.zero = j.ZeRO
	case engineFSDP, engineFSDP2:
		d.zero = 3
		switch strings.ToLower(j.FSDPStrategy) {
		case "", "full_shard":
		case "shard_grad_op":
			d.zero, d.shardGradOp = 2, true
		case "no_shard":
			d.zero = 0
		case "hybrid_shard", "_hybrid_shard_zero2":
			// Sharded inside a node, replicated across nodes.
			d.nd = math.Max(1, float64(d.dp)/float64(max(j.Nodes, 1)))
			if strings.Contains(strings.ToLower(j.FSDPStrategy), "zero2") {
				d.zero, d.shardGradOp = 2, true
			}
		default:
			return fmt.Errorf("--fsdp-strategy: unknown strategy %q (want full_shard, shard_grad_op, hybrid_shard or no_shard)", j.FSDPStrategy)
		}
		if e == engineFSDP2 {
			// torchtitan shards over the flattened dp_shard × cp mesh (§15.10).
			d.nd *= float64(d.cp)
		}
	case engineMegatron:
		if j.ZeRO >= 1 {
			// Distributed optimizer: fp32 master + states sharded over DP×CP (§3.4).
			d.zero, d.nd = 1, float64(d.dp*d.cp)
		}
	}
	d.offloadOpt = isOffload(j.OffloadOptimizer)
	d.offloadParams = isOffload(j.OffloadParams)
	if d.offloadParams && d.zero < 3 {
		return fmt.Errorf("--offload-params: parameter offload needs ZeRO-3 or FSDP full sharding")
	}
	return nil
}

// isOffload reports whether an offload flag names a target.
func isOffload(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	return v == "cpu" || v == "nvme" || v == "true"
}

// checkDivisible rejects tensor/expert parallel sizes the model cannot be
// split by (Megatron requires heads and KV heads divisible by tp).
func (s *setup) checkDivisible(d *distSpec) error {
	st := &s.m.Text
	if d.tp > 1 && (st.Heads%d.tp != 0 || (st.KVHeads >= d.tp && st.KVHeads%d.tp != 0)) {
		return fmt.Errorf("--tp %d: %d attention heads / %d KV heads are not divisible by it", d.tp, st.Heads, st.KVHeads)
	}
	if d.ep > 1 && (st.MoE == nil || st.MoE.Experts%d.ep != 0) {
		return fmt.Errorf("--ep %d: the model has no routed experts divisible by it", d.ep)
	}
	return nil
}

// rankFrac is the share of a module's parameters rank 0 of stage 0
// holds before data-parallel sharding: the stage's layers, 1/tp of Linear
// weights, embeddings and output head (vocab-parallel), 1/ep of routed
// experts.
func (s *setup) rankFrac(mod *model.Module) float64 {
	d := &s.dist
	if d.single || (d.tp == 1 && d.pp == 1 && d.ep == 1) || s.wholeModel {
		return 1
	}
	f := 1.0
	if mod.Stack == stackText && mod.Layer >= 0 {
		n := max(mod.Layers, 1)
		hi := min(mod.Layer+n, d.stageLayers)
		if hi <= mod.Layer {
			return 0
		}
		f = float64(hi-mod.Layer) / float64(n)
	} else if d.pp > 1 && (mod.Component == compLMHead || mod.Component == "final_norm") {
		return 0 // on the last stage
	}
	switch {
	case mod.Expert:
		f /= float64(d.ep)
	case mod.In > 0 && mod.Out > 0, mod.Component == compEmbedding:
		f /= float64(d.tp)
	}
	return f
}

// shardStates divides the model states by the data-parallel sharding
// group (ZeRO arXiv:1910.02054 §5: stage 1 optimizer states, 2 + grads,
// 3 + params) and moves offloaded states to the host.
func (s *setup) shardStates(r *rankStates) (hostBytes float64) {
	d := &s.dist
	if d.single || (d.nd <= 1 && !d.offloadOpt && !d.offloadParams) {
		return 0
	}
	nd := math.Max(d.nd, 1)
	if d.zero >= 1 {
		r.master /= nd
		r.optim.states /= nd
		r.optim.transient /= nd
	}
	if d.zero >= 2 {
		r.grads /= nd
		r.gradsHead /= nd
		r.gradsEmb /= nd
	}
	if d.zero >= 3 {
		r.weights /= nd
		r.adapters /= nd
	}
	if d.offloadOpt {
		// ZeRO-Offload (arXiv:2101.06840): fp32 master, states and the
		// update run on the host.
		hostBytes += r.master + r.optim.states
		r.master, r.optim.states, r.optim.transient = 0, 0, 0
	}
	if d.offloadParams {
		hostBytes += r.weights
		r.weights = 0
	}
	return hostBytes
}

// DeepSpeed defaults (microsoft/DeepSpeed:deepspeed/runtime/zero/config.py)
// and the HF Trainer's "auto" values (transformers integrations/deepspeed.py):
// MODEL.md §3.3.
const (
	dsReduceBucket   = 5e8 // reduce_bucket_size, elements
	dsPrefetchBucket = 5e7 // stage3_prefetch_bucket_size, elements
)

// commBuffers is the per-phase memory of the engine's communication and
// gathering buffers on one rank (MODEL.md §3.3, §3.5, §3.6, §3.7).
func (s *setup) commBuffers(r *rankStates) [numPhases]float64 {
	d := &s.dist
	if d.single {
		return [numPhases]float64{}
	}
	c := s.compute.BytesPerElement()
	h := float64(s.m.Text.Hidden)
	reduce, prefetch := dsReduceBucket, dsPrefetchBucket
	if s.framework == FrameworkHF {
		reduce, prefetch = h*h, 0.9*h*h
	}
	unit, root := s.fsdpUnits()
	switch d.engine {
	case engineDDP:
		// gradient_as_bucket_view=False (default): all-reduce buckets as
		// large as the gradients, kept for the whole run (§3.7).
		return allPhases(r.grads)
	case engineDeepSpeed:
		switch d.zero {
		case 0, 1, 2:
			// Independent-partition gradient bucket (contiguous_gradients).
			return allPhases(reduce * c)
		default:
			// Gathered parameters: the module in use and the prefetched
			// one, plus the prefetch bucket and one reduce bucket (§3.3).
			g := 2*unit*c + prefetch*c + reduce*c
			return [numPhases]float64{g, g, g, g, 0}
		}
	case engineFSDP, engineFSDP2:
		if d.zero == 0 {
			return allPhases(r.grads)
		}
		// Current + prefetched unit unsharded in the compute dtype, the
		// root unit (embedding, final norm, lm_head) kept unsharded through
		// forward and backward, the unit's unsharded fp32 gradient (§3.5).
		fwd := 2*unit*c + root*c
		if d.shardGradOp {
			fwd = float64(s.dist.stageLayers)/float64(max(s.m.Text.Layers, 1))*unit*float64(s.m.Text.Layers)*c + root*c
		}
		bwd := fwd + 4*unit
		return [numPhases]float64{fwd, fwd, bwd, bwd, 0}
	}
	return [numPhases]float64{}
}

// fsdpUnits returns the parameters of the largest wrapped unit (one
// decoder layer) and of the root unit, on this rank before sharding.
func (s *setup) fsdpUnits() (unit, root float64) {
	L := float64(max(s.m.Text.Layers, 1))
	var layers float64
	for i := range s.m.Modules {
		mod := &s.m.Modules[i]
		f := s.rankFrac(mod)
		switch {
		case mod.Stack == stackText && mod.Layer >= 0:
			layers += float64(mod.Params) * f
		case mod.Stack == stackText:
			root += float64(mod.Params) * f
		}
	}
	return layers / math.Min(L, float64(s.dist.stageLayers)), root
}

// allPhases repeats v over the phases.
func allPhases(v float64) [numPhases]float64 { return [numPhases]float64{v, v, v, v, v} }

// ncclBytes is the device memory of the rank's NCCL communicators.
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

// modelTrainable is the trainable parameter count of the whole model (not
// of one rank's share), for Result.TrainableParams.
func (s *setup) modelTrainable(p *trParams) float64 {
	d := &s.dist
	if d.single || (d.tp == 1 && d.pp == 1 && d.ep == 1) {
		return p.trainable
	}
	s.wholeModel = true
	var n float64
	s.forEachTrainable(func(g tensorGroup) { n += g.count * g.numel() })
	s.wholeModel = false
	return n
}
