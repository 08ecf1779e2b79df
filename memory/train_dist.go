package memory

import (
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/model"
)

// distSpec is the resolved parallel layout of a training job and the
// pipeline stage being estimated (MODEL.md §3, §4.7, §4.8, §8).
type distSpec struct {
	single             bool // one process, nothing sharded
	world, nodes       int
	dp, tp, pp, cp, ep int
	engine             string // ddp, deepspeed, fsdp, fsdp2, megatron
	zero               int    // 0 none, 1 optimizer, 2 + gradients, 3 + parameters
	nd                 float64
	sp                 bool
	offloadOpt         string // "", cpu or nvme
	offloadParams      string // "", cpu or nvme
	shardGradOp        bool   // FSDP SHARD_GRAD_OP: units stay unsharded from forward to backward
	schedule           string // 1f1b, interleaved or gpipe
	virtual            int    // model chunks per GPU (interleaved schedule)
	// unsharded is torchtitan before PR #685 with cp > 1 and dp 1: no
	// FSDP at all, so no engine (titanEngine).
	unsharded bool

	// The pipeline stage being estimated: text layers [stageLo, stageHi).
	stage            int
	stageLo, stageHi int
	stageLayers      int
	first, last      bool
	inFlight         float64 // micro-batches whose activations the stage holds
}

// Pipeline schedules (Job.PipelineSchedule).
const (
	schedule1F1B        = "1f1b"
	scheduleInterleaved = "interleaved"
	scheduleGPipe       = "gpipe"
)

// resolveDist reads the parallel layout. A job without engine and with
// one GPU is a single process. It fills s.dist in place: initJob starts
// from a zero setup, and copying the layout in and out of a local cost
// more than the reads and writes below.
func (s *setup) resolveDist() error {
	j := s.job
	// The bitwise or of the sizes is negative exactly when one of them is
	// (the sign bit): a valid job pays one test instead of nine.
	if j.NumGPUs|j.DP|j.TP|j.PP|j.CP|j.EP|j.Nodes|j.ZeRO|j.VirtualStages < 0 {
		return distSizeError(j)
	}
	// The engine-buffer sizes, tested one by one only when one may be
	// negative.
	if j.ReduceBucketSize|j.AllgatherBucketSize|j.SubGroupSize < 0 || !(j.DDPBucketCapMB >= 0) ||
		j.PrefetchBucketSize != nil || j.MaxLiveParameters != nil || j.MaxReuseDistance != nil || j.ParamPersistenceThreshold != nil {
		if err := bufferSizeError(j); err != nil {
			return err
		}
	}
	d := &s.dist
	if oneProcessLayout(j) && s.m.Text.Layers > 0 {
		// What resolveLayout sets for such a job, without its checks,
		// none of which can fail here (TestOneProcessLayout compares the
		// two): most estimates are of one GPU.
		d.tp, d.pp, d.cp, d.ep, d.nodes, d.dp, d.world, d.virtual = 1, 1, 1, 1, 1, 1, 1, 1
		d.nd, d.schedule = 1, schedule1F1B
	} else if err := s.resolveLayout(d); err != nil {
		return err
	}
	if d.pp > 1 && d.engine == EngineDeepSpeed && d.zero >= 2 {
		// deepspeed/runtime/pipe/engine.py asserts zero stage < 2.
		return FieldErrorf("zero", "{zero=%d} with {pp=%d}: DeepSpeed's pipeline engine supports ZeRO stages 0 and 1 only", d.zero, d.pp)
	}
	if d.pp > 1 && d.engine == EngineFSDP {
		s.warn("pp with engine=fsdp: pipeline parallelism is run with FSDP2 (torchtitan); FSDP1 units are assumed per stage")
	}
	d.sp = j.SP
	if d.sp && d.tp == 1 {
		s.warn("sp: sequence parallelism splits along the tensor-parallel group; with tp=1 it changes nothing")
	}
	d.single = d.world == 1 && d.engine == ""
	if d.single && (d.offloadOpt != "" || d.offloadParams != "") {
		s.warn("offload_optimizer/offload_params need an engine that offloads (engine=deepspeed or fsdp): ignored for a plain single process")
		d.offloadOpt, d.offloadParams = "", ""
	}
	if d.pp > 1 {
		// Each pipeline stage is set, shares and all, before it is
		// estimated (estimateStages, stagePeaks).
		s.placeStage(0)
	} else {
		s.setStage(0)
	}
	return nil
}

// oneProcessLayout reports whether j describes one process on one GPU
// in the plainest way: no engine, no sharding, offload or schedule
// option, and every layout size 0 (default) or 1. The sizes are known to
// be non-negative, so their bitwise or is at most 1 exactly when each is.
func oneProcessLayout(j *Job) bool {
	return j.NumGPUs|j.DP|j.TP|j.PP|j.CP|j.EP|j.Nodes|j.VirtualStages <= 1 && j.ZeRO == 0 &&
		j.Engine == "" && j.FSDPStrategy == "" && j.OffloadOptimizer == "" && j.OffloadParams == "" &&
		j.PipelineSchedule == ""
}

// resolveLayout reads the parallel degrees, the engine and the pipeline
// schedule of the job into d, and checks them against each other and
// against the model.
func (s *setup) resolveLayout(d *distSpec) error {
	j := s.job
	d.tp, d.pp, d.cp, d.ep, d.nodes = max(j.TP, 1), max(j.PP, 1), max(j.CP, 1), max(j.EP, 1), max(j.Nodes, 1)
	if err := d.resolveWorld(j); err != nil {
		return err
	}
	if err := s.resolveEngine(d); err != nil {
		return err
	}
	if err := s.checkDivisible(d); err != nil {
		return err
	}
	return s.resolveSchedule(d)
}

// distSizeError is the error naming the flag of the first negative
// layout size of j, or nil if there is none.
func distSizeError(j *Job) error {
	sizes := [len(distKeys)]int{j.NumGPUs, j.DP, j.TP, j.PP, j.CP, j.EP, j.Nodes, j.ZeRO, j.VirtualStages}
	for i, n := range sizes {
		if n < 0 {
			return FieldErrorf(distKeys[i], "{"+distKeys[i]+"}: want a non-negative value, got %d", n)
		}
	}
	return nil
}

// bufferSizeError is the error naming the first negative engine-buffer
// size of j (DeepSpeed's config fields are ge=0), or nil if there is none.
func bufferSizeError(j *Job) error {
	sizes := [...]struct {
		key string
		n   *int64
	}{
		{"reduce_bucket_size", &j.ReduceBucketSize}, {"allgather_bucket_size", &j.AllgatherBucketSize},
		{"stage3_prefetch_bucket_size", j.PrefetchBucketSize}, {"stage3_max_live_parameters", j.MaxLiveParameters},
		{"stage3_max_reuse_distance", j.MaxReuseDistance}, {"stage3_param_persistence_threshold", j.ParamPersistenceThreshold},
		{"sub_group_size", &j.SubGroupSize},
	}
	for _, sz := range sizes {
		if sz.n != nil && *sz.n < 0 {
			return FieldErrorf(sz.key, "{"+sz.key+"}: want a non-negative number of elements, got %d", *sz.n)
		}
	}
	if !(j.DDPBucketCapMB >= 0) { // negative or NaN
		return FieldErrorf("ddp_bucket_cap_mb", "{ddp_bucket_cap_mb}: want a non-negative size in MB, got %v", j.DDPBucketCapMB)
	}
	return nil
}

// distKeys names the layout sizes distSizeError checks, in its order.
var distKeys = [...]string{"num_gpus", "dp", "tp", "pp", "cp", "ep", "nodes", "zero", "virtual_pipeline_stages"}

// resolveWorld reconciles the GPU count with the parallel degrees:
// world = dp × tp × pp × cp (expert parallelism reuses the dp × cp ranks).
func (d *distSpec) resolveWorld(j *Job) error {
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
			return FieldErrorf("num_gpus", "{num_gpus=%d} is not a multiple of tp×pp×cp = %d", d.world, model)
		}
		d.dp = d.world / model
	}
	if d.dp*model != d.world {
		return FieldErrorf("num_gpus", "{num_gpus=%d} ≠ dp %d × tp %d × pp %d × cp %d", d.world, d.dp, d.tp, d.pp, d.cp)
	}
	if d.world%d.nodes != 0 {
		return FieldErrorf("nodes", "{nodes=%d}: %d GPUs cannot be spread evenly over them", d.nodes, d.world)
	}
	if d.ep > 1 && (d.dp*d.cp)%d.ep != 0 {
		return FieldErrorf("ep", "{ep=%d}: expert parallelism is carved from the dp × cp = %d data-parallel ranks and must divide them", d.ep, d.dp*d.cp)
	}
	return nil
}

// resolveEngine sets the sharding stage and group of the engine.
func (s *setup) resolveEngine(d *distSpec) error {
	j := s.job
	e, err := normalizeEngine(j.Engine, d.world)
	if err != nil {
		return err
	}
	d.engine = e
	if s.framework == FrameworkTorchtitan {
		if err := s.titanEngine(d); err != nil {
			return err
		}
		e = d.engine
	}
	d.nd = float64(d.dp)
	switch e {
	case EngineDeepSpeed:
		if j.ZeRO > 3 {
			return FieldErrorf("zero", "{zero}: want a stage 0..3, got %d", j.ZeRO)
		}
		d.zero = j.ZeRO
	case EngineFSDP, EngineFSDP2:
		if err := s.resolveFSDP(d); err != nil {
			return err
		}
	case EngineMegatron:
		if j.ZeRO > 1 {
			return FieldErrorf("zero", "{zero=%d}: Megatron's distributed optimizer shards the optimizer state and fp32 master only (ZeRO-1); use {zero=1}, or {engine=deepspeed} for stages 2 and 3", j.ZeRO)
		}
		if j.ZeRO == 1 {
			// Distributed optimizer: fp32 master + states sharded over DP×CP (§3.4).
			d.zero, d.nd = 1, float64(d.dp*d.cp)
		}
	default:
		if j.ZeRO > 0 && !d.unsharded {
			return FieldErrorf("zero", "{zero=%d}: ZeRO stages need {engine=deepspeed} (or megatron for its distributed optimizer, fsdp for full sharding)", j.ZeRO)
		}
	}
	if j.FSDPStrategy != "" && e != EngineFSDP && e != EngineFSDP2 && !d.unsharded {
		return FieldErrorf("fsdp_strategy", "{fsdp_strategy=%s}: needs {engine=fsdp} or fsdp2 (engine is %s)", j.FSDPStrategy, cond(e == "", "none", e))
	}
	// Most jobs offload nothing: an empty flag needs no parsing.
	if j.OffloadOptimizer != "" {
		if d.offloadOpt, err = offloadTarget("offload_optimizer", j.OffloadOptimizer); err != nil {
			return err
		}
	}
	if j.OffloadParams != "" {
		if d.offloadParams, err = offloadTarget("offload_params", j.OffloadParams); err != nil {
			return err
		}
	}
	if d.offloadParams != "" && d.zero < 3 && e != "" {
		return FieldErrorf("offload_params", "{offload_params}: parameter offload needs ZeRO-3 or FSDP full sharding")
	}
	if (d.offloadOpt != "" || d.offloadParams != "") && (e == EngineDDP || e == EngineMegatron) {
		return FieldErrorf(cond(d.offloadOpt != "", "offload_optimizer", "offload_params"), "{offload_optimizer}/{offload_params}: engine %s does not offload (use {engine=deepspeed} or fsdp)", e)
	}
	return nil
}

// normalizeEngine maps the engine spellings onto the engine names; more
// than one GPU without an engine is DDP.
func normalizeEngine(name string, world int) (string, error) {
	switch name {
	case "":
		if world > 1 {
			return EngineDDP, nil
		}
		return "", nil
	case EngineDDP, EngineDeepSpeed, EngineFSDP, EngineFSDP2, EngineMegatron:
		// An engine name as the switch below returns it: no folding.
		return name, nil
	}
	e := fold(name)
	switch {
	case e == "" && world > 1:
		return EngineDDP, nil
	case e == "":
		return "", nil
	case e == "ddp" || e == "torch-ddp":
		return EngineDDP, nil
	case e == "deepspeed" || e == "ds" || strings.HasPrefix(e, "zero"):
		return EngineDeepSpeed, nil
	case e == "fsdp" || e == "fsdp1":
		return EngineFSDP, nil
	case e == "fsdp2" || strings.Contains(e, "torchtitan") || e == "fully_shard":
		return EngineFSDP2, nil
	case e == "megatron" || e == "megatron-core" || e == "nemo":
		return EngineMegatron, nil
	}
	return "", FieldErrorf("engine", "{engine}: unknown engine %q (want ddp, deepspeed, fsdp, fsdp2 or megatron)", name)
}

// resolveFSDP maps the FSDP sharding strategy onto a ZeRO stage and a
// sharding group (MODEL.md §3.5, §3.6). --zero, when given, must agree.
func (s *setup) resolveFSDP(d *distSpec) error {
	j := s.job
	d.zero = 3
	strategy := fold(j.FSDPStrategy)
	switch strategy {
	case "", "full_shard":
	case "shard_grad_op":
		d.zero, d.shardGradOp = 2, true
	case "no_shard":
		d.zero = 0
	case "hybrid_shard", "_hybrid_shard_zero2":
		// Sharded inside a node, replicated across nodes.
		d.nd = max(1, float64(d.dp)/float64(d.nodes))
		if strings.Contains(strategy, "zero2") {
			d.zero, d.shardGradOp = 2, true
		}
	default:
		return FieldErrorf("fsdp_strategy", "{fsdp_strategy}: unknown strategy %q (want full_shard, shard_grad_op, hybrid_shard or no_shard)", j.FSDPStrategy)
	}
	if j.ZeRO != 0 && j.ZeRO != d.zero {
		return FieldErrorf("zero", "{zero=%d} disagrees with {fsdp_strategy=%s} (ZeRO-%d-like); give one", j.ZeRO, cond(strategy == "", "full_shard", strategy), d.zero)
	}
	switch {
	case d.engine == EngineFSDP2:
		// FSDP2 shards over the flattened dp_shard × cp mesh: torchtitan
		// (torchtitan/distributed/parallel_dims.py @b5bcd76, fsdp =
		// dp_shard * cp; PR #685) and accelerate's ParallelismConfig
		// alike (§15.10).
		d.nd *= float64(d.cp)
	}
	// FSDP1 shards over the process group it is given, the data-parallel
	// ranks: context-parallel ranks hold replicas (torchtitan, whose
	// "fsdp" titanEngine reads as FSDP2, never ran FSDP1 with context
	// parallelism: it had none before 2024-10-22).
	return nil
}

// titanEngine is torchtitan's data-parallel engine for the job's
// torchtitan version (the version rules ruleTitan*): per-parameter FSDP
// (fully_shard, FSDP2) since PR #165 (2024-03-28), FSDP1 before it (the
// rules go by month: March 2024 reads as FSDP1);
// without an engine, FSDP over every data-parallel rank, as torchtitan's
// default data_parallel_shard_degree -1 does
// (torchtitan/distributed/parallel_dims.py @b5bcd76: dp_shard is what
// dp_replicate, cp, tp and pp leave of the world). Context parallelism
// exists from PR #592 (2024-10-22); until PR #685 (2024-12-11) a job with
// cp > 1 and no data-parallel sharding applied no FSDP at all.
func (s *setup) titanEngine(d *distSpec) error {
	if d.cp > 1 && s.rules.has(ruleTitanNoCP) {
		return FieldErrorf("cp", "{cp=%d}: torchtitan of this stack has no context parallelism (added by PR #592 on 2024-10-22); state torchtitan 2024-10 or later in the {stack}", d.cp)
	}
	explicit := strings.TrimSpace(s.job.Engine) != ""
	switch d.engine {
	case EngineFSDP, EngineFSDP2:
	case EngineDDP:
		if explicit {
			return nil
		}
		if d.dp*d.cp == 1 {
			// Model parallel only: nothing to shard or replicate.
			return nil
		}
	default:
		return nil
	}
	switch {
	case d.engine == EngineFSDP2 && explicit:
		// Stated: FSDP2 it is (the PR #165 runs used it before the merge).
	case s.rules.has(ruleTitanFSDP1):
		d.engine = EngineFSDP
	case d.engine == EngineFSDP && explicit:
		s.warn("engine=fsdp with framework=torchtitan: torchtitan shards with per-parameter FSDP (fully_shard, FSDP2) since PR #165 (2024-03-28); estimated as fsdp2")
		d.engine = EngineFSDP2
	default:
		d.engine = EngineFSDP2
	}
	if d.cp > 1 && d.dp == 1 && s.rules.has(ruleTitanCPUnsharded) {
		// apply_fsdp ran only when dp_shard > 1 (parallelize_llama.py
		// before PR #685): no sharding and no gradient reduction.
		s.warn(fmt.Sprintf("cp=%d with dp=1 on torchtitan before December 2024: torchtitan applied no FSDP then (fixed by PR #685 on 2024-12-11), so every rank holds the whole model states", d.cp))
		d.engine, d.unsharded = "", true
	}
	return nil
}

// offloadTarget reads the offload setting key: "" (none), cpu or nvme.
func offloadTarget(key, v string) (string, error) {
	switch fold(v) {
	case "", "none", "false", "no":
		return "", nil
	case "cpu", "true", "yes":
		return "cpu", nil
	case "nvme":
		return "nvme", nil
	}
	return "", FieldErrorf(key, "{"+key+"}: want none, cpu or nvme, got %q", v)
}

// checkDivisible rejects tensor/expert parallel sizes the model cannot be
// split by: Megatron and torchtitan require the attention heads and the
// KV heads (query groups) to be divisible by tp.
func (s *setup) checkDivisible(d *distSpec) error {
	st := &s.m.Text
	if d.tp > 1 {
		if st.Heads < d.tp || st.Heads%d.tp != 0 {
			return FieldErrorf("tp", "{tp=%d}: the %d attention heads (num_attention_heads) are not divisible by it", d.tp, st.Heads)
		}
		if st.KVHeads > 0 && (st.KVHeads < d.tp || st.KVHeads%d.tp != 0) {
			return FieldErrorf("tp", "{tp=%d}: the %d KV heads (num_key_value_heads) are not divisible by it; tensor parallelism splits whole KV heads", d.tp, st.KVHeads)
		}
	}
	if d.ep > 1 && (st.MoE == nil || st.MoE.Experts%d.ep != 0) {
		return FieldErrorf("ep", "{ep=%d}: the model has no routed experts divisible by it", d.ep)
	}
	return nil
}

// resolveSchedule reads the pipeline schedule and virtual stages.
func (s *setup) resolveSchedule(d *distSpec) error {
	j := s.job
	L := s.m.Text.Layers
	d.virtual = max(j.VirtualStages, 1)
	sch := fold(j.PipelineSchedule)
	switch sch {
	case "":
		sch = schedule1F1B
		if d.virtual > 1 {
			sch = scheduleInterleaved
		}
	case "1f1b", "pipedream-flush", "one_f_one_b":
		sch = schedule1F1B
	case "interleaved", "interleaved-1f1b", "interleaved1f1b":
		sch = scheduleInterleaved
	case "gpipe", "all-forward-all-backward":
		sch = scheduleGPipe
	default:
		return FieldErrorf("pipeline_schedule", "{pipeline_schedule}: unknown schedule %q (want 1f1b, interleaved or gpipe)", j.PipelineSchedule)
	}
	d.schedule = sch
	if d.pp == 1 && (d.virtual > 1 || j.PipelineSchedule != "") {
		s.warn("virtual_pipeline_stages/pipeline_schedule: no effect without pipeline parallelism (pp=1)")
		d.virtual, d.schedule = 1, schedule1F1B
	}
	if sch == scheduleInterleaved && d.virtual < 2 {
		return FieldErrorf("virtual_pipeline_stages", "{pipeline_schedule=interleaved}: give {virtual_pipeline_stages} >= 2 (model chunks per GPU)")
	}
	if sch != scheduleInterleaved && d.virtual > 1 {
		return FieldErrorf("virtual_pipeline_stages", "{virtual_pipeline_stages=%d}: only the interleaved schedule runs several model chunks per GPU (schedule %s)", d.virtual, sch)
	}
	if d.pp*d.virtual > L {
		if d.virtual > 1 {
			return FieldErrorf("pp", "{pp=%d} × {virtual_pipeline_stages=%d}: more model chunks than the %d layers", d.pp, d.virtual, L)
		}
		return FieldErrorf("pp", "{pp=%d}: more pipeline stages than the %d layers", d.pp, L)
	}
	if d.pp > 1 && L%(d.pp*d.virtual) != 0 {
		s.warn(fmt.Sprintf("pp=%d: %d layers do not split evenly; the first stages get one layer more", d.pp*d.virtual, L))
	}
	return nil
}

// setStage selects the pipeline stage the component formulas describe:
// its text layers, whether it holds the embedding (first stage) or the
// output layer and loss (last stage), and how many micro-batches of
// activations it keeps (MODEL.md §4.7).
func (s *setup) setStage(i int) {
	s.placeStage(i)
	s.fillFracs()
}

// fillFracs computes the share of every module on the current stage
// once (s.fracs, rankFrac), for the loops over modules that read it.
func (s *setup) fillFracs() {
	f := s.tab.fracs()
	if d := &s.dist; d.single || (d.tp == 1 && d.pp == 1 && d.ep == 1) {
		// Every module whole on every rank (rankFrac's first case). The
		// table's scratch often holds these already (the previous estimate
		// of the model was one such job).
		if !s.tab.fracOnes {
			for i := range f {
				f[i] = 1
			}
			s.tab.fracOnes = true
		}
		s.fracs, s.unitFracs = f, true
		return
	}
	s.tab.fracOnes = false
	// rankFrac of every module, its cases read from the module's place
	// in the model table rather than by comparing its names, with the
	// stage's facts loaded once.
	d := &s.dist
	mods := s.m.Modules
	rows, f := s.tab.rows()[:len(mods)], f[:len(mods)]
	lo, hi := d.stageLo, d.stageHi
	pipe := d.pp > 1
	var on [placeEmbed + 1]bool // whether the modules of a place outside the layers are on this stage (onStage)
	on[placeFirst] = !pipe || d.first
	on[placeHead] = !pipe || d.last
	on[placeEmbed] = !pipe || d.first || (d.last && s.m.Text.TiedEmbeddings)
	ep, tp := float64(d.ep), float64(d.tp)
	unit := true
	for i := range mods {
		mod, row := &mods[i], &rows[i]
		v := 1.0
		if row.place == placeLayers {
			n := max(mod.Layers, 1)
			a, b := max(mod.Layer, lo), min(mod.Layer+n, hi)
			if b <= a {
				f[i], unit = 0, false
				continue
			}
			v = float64(b-a) / float64(n)
		} else if !on[row.place] {
			f[i], unit = 0, false
			continue
		}
		switch {
		case mod.Expert:
			v /= ep
		case row.tpSplit:
			v /= tp
		}
		f[i] = v
		unit = unit && v == 1
	}
	s.fracs, s.unitFracs = f, unit
}

// frac is the rank fraction of module i: its share on the current stage
// (rankFrac, as fillFracs computed it), or 1 while the whole model is
// counted.
func (s *setup) frac(i int) float64 {
	if s.wholeModel {
		return 1
	}
	return s.fracs[i]
}

// placeStage sets the layer range, end-stage flags and micro-batches in
// flight of pipeline stage i.
func (s *setup) placeStage(i int) {
	d := &s.dist
	L := s.m.Text.Layers
	base, rem := L/d.pp, L%d.pp
	d.stage = i
	d.stageLo = i*base + min(i, rem)
	d.stageLayers = base
	if i < rem {
		d.stageLayers++
	}
	d.stageHi = d.stageLo + d.stageLayers
	d.first, d.last = i == 0, i == d.pp-1
	d.inFlight = 1
	if d.pp == 1 {
		return
	}
	m := float64(s.accum) // micro-batches per step
	switch d.schedule {
	case scheduleGPipe:
		// All forwards before any backward.
		d.inFlight = m
	case scheduleInterleaved:
		// Megatron interleaved 1F1B: rank i runs (p−i−1)·2 + (v−1)·p
		// warm-up chunk forwards, then holds one more; a chunk is 1/v of
		// the stage (megatron/core/pipeline_parallel/schedules.py
		// forward_backward_pipelining_with_interleaving). Stage 0 gets
		// Korthikanti's factor p·(1 + (p−1)/(p·v)) (§4.7).
		p, v := float64(d.pp), float64(d.virtual)
		chunks := (p-float64(i)-1)*2 + (v-1)*p + 1
		d.inFlight = min(chunks, m*v) / v
	default:
		// 1F1B (PipeDream-Flush): stage i holds min(p − i, m) micro-batches.
		d.inFlight = min(float64(d.pp-i), m)
	}
}

// rankFrac is the share of a module's parameters one rank of the current
// pipeline stage holds before data-parallel sharding: the stage's layers,
// 1/tp of Linear weights, embeddings and output head (vocab-parallel),
// 1/ep of routed experts. The embedding sits on the first stage, the
// final norm and head on the last (with a copy of tied embeddings, as
// Megatron keeps for the shared output weight). fillFracs computes it for
// every module of a stage from the modules' places in the model table
// (s.fracs, s.frac); tests check the two agree.
func (s *setup) rankFrac(mod *model.Module) float64 {
	d := &s.dist
	if d.single || (d.tp == 1 && d.pp == 1 && d.ep == 1) || s.wholeModel {
		return 1
	}
	f := 1.0
	switch {
	case mod.Stack == stackText && mod.Layer >= 0:
		n := max(mod.Layers, 1)
		lo, hi := max(mod.Layer, d.stageLo), min(mod.Layer+n, d.stageHi)
		if hi <= lo {
			return 0
		}
		f = float64(hi-lo) / float64(n)
	case d.pp > 1:
		if !s.onStage(mod) {
			return 0
		}
	}
	switch {
	case mod.Expert:
		f /= float64(d.ep)
	case mod.In > 0 && mod.Out > 0, mod.Component == compEmbedding:
		f /= float64(d.tp)
	}
	return f
}

// onStage reports whether a module outside the text layers lives on the
// current pipeline stage.
func (s *setup) onStage(mod *model.Module) bool {
	d := &s.dist
	switch {
	case mod.Component == compLMHead || mod.Component == "final_norm":
		return d.last
	case mod.Component == compEmbedding && mod.Stack == stackText:
		return d.first || (d.last && s.m.Text.TiedEmbeddings)
	}
	// Vision tower, projector, encoder, position tables: the first stage.
	return d.first
}

// modelTrainable is the trainable parameter count of the whole model (not
// of one rank's share), for Result.TrainableParams.
func (s *setup) modelTrainable(p *trParams) float64 {
	d := &s.dist
	if d.single || (d.tp == 1 && d.pp == 1 && d.ep == 1) {
		return p.trainable
	}
	if s.trainable.all {
		// Full training: every tensor group of the model at full size,
		// summed in the model table's order as forEachTrainable would.
		return s.tab.numel
	}
	s.wholeModel = true
	var n float64
	s.forEachTrainable(func(g tensorGroup) { n += g.count * g.numel() })
	s.wholeModel = false
	return n
}

// parallelInfo is the Result.Parallel of a distributed job; false for a
// single process.
func (s *setup) parallelInfo(t *trainParts) (Parallel, bool) {
	d := &s.dist
	if d.single {
		return Parallel{}, false
	}
	p := Parallel{Engine: d.engine, World: d.world, DP: d.dp, TP: d.tp, PP: d.pp, CP: d.cp, EP: d.ep,
		ZeRO: d.zero, ShardGroup: int(d.nd)}
	switch {
	case d.engine == EngineDeepSpeed && d.zero == 3:
		p.LargestUnitParams = roundCount(s.largestModule(false))
	case s.isFSDP() && d.zero >= 2:
		unit, root := s.fsdpUnits(false)
		p.LargestUnitParams = roundCount(max(unit, root))
	}
	if t != nil {
		p.PeakStage = d.stage
	}
	return p, true
}
