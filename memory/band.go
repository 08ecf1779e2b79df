package memory

import (
	"math"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// Band is the uncertainty of an estimate: the range the measured device
// peak (nvidia-smi) is expected in, and the terms it is made of. Each term
// is one documented source of error (allocator behaviour, framework
// versions, settings left to defaults, variable sequence lengths) with
// how far it can move the peak down and up. Terms are independent, so
// they combine as a root sum of squares on each side.
type Band struct {
	// Peak names the peak the band applies to: "device".
	Peak string `json:"peak"`
	// LowBytes, ExpectedBytes and HighBytes bound the device peak;
	// ExpectedBytes is PerGPU.DevicePeakBytes.
	LowBytes      units.Bytes `json:"low_bytes"`
	ExpectedBytes units.Bytes `json:"expected_bytes"`
	HighBytes     units.Bytes `json:"high_bytes"`
	// Terms are the contributions, largest first.
	Terms []BandTerm `json:"terms"`
}

// BandTerm is one contribution to a [Band].
type BandTerm struct {
	// Name identifies the term: "allocator", "runtime", "residual", "activations",
	// "comm_buffers", "seq_len_cap", "optimizer_default".
	Name string `json:"name"`
	// Level is the lowest peak the term moves: "allocated", "reserved"
	// or "device" (a term moves its level and every level above it).
	Level string `json:"level"`
	// DownBytes and UpBytes are how far the term can move the peak below
	// and above the estimate (both non-negative).
	DownBytes units.Bytes `json:"down_bytes"`
	UpBytes   units.Bytes `json:"up_bytes"`
	// Reason says what is uncertain; Source where the width comes from.
	Reason string `json:"reason"`
	Source string `json:"source"`
}

// Relative widths of the band terms. Each is a fraction of the component
// it applies to.
const (
	// Fragmentation ranges: reserved exceeds allocated by 2–10 % in steady
	// training (MODEL.md §10), 0–2 % for HF inference and about 15 % on
	// torch 1.x (§15.5; read as 10–20 %). A calibrated fraction is
	// trusted to ±2 points.
	fragTrainLo, fragTrainHi   = 0.02, 0.10
	fragInferLo, fragInferHi   = 0.0, 0.03
	fragLegacyLo, fragLegacyHi = 0.10, 0.20
	fragCalibrated             = 0.02
	// Sharded training (ZeRO-3, FSDP) runs collectives on their own
	// streams: the ZeRO-3 record sits 13–22 % above an allocated-based
	// estimate (MODEL.md §15.11); read as 8–22 %.
	fragShardedLo, fragShardedHi = 0.08, 0.22

	// Residual: what the component inventories leave unexplained. The
	// scored development measurements (accuracy package) put 80 % of the
	// estimates within 5 % of the measured peak once every known
	// component is counted, so ±5 % of the allocated peak. This width is
	// read off the same records the band is checked on (in-sample).
	residual = 0.05

	// CUDA context: 300–600 MiB with lazy loading, more with
	// FlashAttention/Triton kernels, up to about 1 GiB (MODEL.md §10,
	// pytorch PR #86509); 0.7–1.5 GiB with eager loading (§15.5: 1343 MiB
	// measured). A calibrated context is trusted to ±10 %.
	ctxLazyLoMiB, ctxLazyHiMiB   = 300, 1024
	ctxEagerLoMiB, ctxEagerHiMiB = 700, 1536
	ctxCalibrated                = 0.10

	// NCCL: 0.2–1 GiB per communicator (MODEL.md §10) around the
	// 512 MiB the estimate counts: -60 %/+100 %.
	ncclDown, ncclUp = 0.6, 1.0

	// Saved activations and the loss: the per-framework inventories are
	// measured (MODEL.md §4.3, §14) and put the single-GPU training
	// records within ±5 % (accuracy package); ±10 % covers version drift
	// (kernel choices, compile, §15.14). An unstated framework adds 5
	// points below (fused-kernel frameworks save less: 32 vs 45.5 sbh per
	// Llama layer, §14.1), an unstated attention implementation 5 more
	// (SDPA with a padding mask saves full-width K and V, flash does not,
	// §15.7). Selective checkpointing policies differ by framework
	// (Megatron recomputes the attention core, torchtitan's op-level SAC
	// keeps matmul outputs): 25 % below.
	actDown, actUp   = 0.10, 0.10
	actUnstated      = 0.05
	actSelectiveDown = 0.25

	// Unpacked data: the longest padded batch sets the peak, and a run
	// whose samples stay under half the cap keeps the token-proportional
	// terms (activations, loss) under half. A judgement, not fitted: the
	// unpacked development records (MetaMathQA, alpaca) peak near their
	// cap over long runs, so the term only widens the band downwards.
	actSeqCapDown = 0.50

	// Communication buckets: DDP buckets, DeepSpeed IPG buckets and FSDP
	// unsharded units depend on bucket sizes, overlap and prefetch
	// settings (MODEL.md §14 item 2: 1–2 GB at DeepSpeed defaults); ±50 %.
	commDown, commUp = 0.50, 0.50

	mib        = float64(units.MiB)
	fragPrefix = "fragmentation"
)

// The band terms, in the order they are computed; terms of equal size
// keep this order in [Band.Terms].
const (
	termAllocator = iota
	termRuntime
	termResidual
	termActivations
	termSeqCap
	termComm
	termOptimizerDefault
	bandTermsPerEstimate
)

// bandTermText holds what each term says about itself: its name, level,
// reason and source, the fields of a [BandTerm] that do not depend on
// the job. A term whose reason does gives it with its widths
// ([termWidth]).
var bandTermText = [bandTermsPerEstimate]BandTerm{
	termAllocator: {Name: "allocator", Level: "reserved",
		Reason: "caching-allocator fragmentation (reserved − allocated) varies with the shapes a run allocates",
		Source: "MODEL.md §10 (2–10 % in steady training), §15.5 (0–2 % HF inference, ≈ 15 % torch 1.x), §15.11 (13–22 % sharded)"},
	termRuntime: {Name: "runtime", Level: "device",
		Reason: "CUDA context size depends on the driver, CUDA version and kernels loaded; NCCL buffers on channels and peers",
		Source: "MODEL.md §10 (context 300–600 MiB lazy, ~1 GiB with more kernels; NCCL 0.2–1 GiB per communicator), §15.5 (1343 MiB eager)"},
	termResidual: {Name: "residual", Level: "allocated",
		Reason: "tensors and transients the component inventories do not list",
		Source: "dev measurements: 80 % of the scored records are within 5 % of the estimate (accuracy.CheckBand)"},
	termActivations: {Name: "activations", Level: "allocated",
		// The reason is one of actReasons, by what the job leaves unstated.
		Source: "MODEL.md §4.3, §14 item 1, §15.7, §15.14; dev measurements within ±5 % with the stated framework"},
	termSeqCap: {Name: "seq_len_cap", Level: "allocated",
		Reason: "packed is false: seq_len only caps variable-length samples, and the peak is set by the longest batch the run meets",
		Source: "MODEL.md §15.15; testdata README (unpacked datasets: the real peak depends on the longest batch)"},
	termComm: {Name: "comm_buffers", Level: "allocated",
		Reason: "bucket sizes and overlap settings of the distributed engine",
		Source: "MODEL.md §14 item 2 (IPG buckets 1–2 GB at defaults, FSDP unsharded units, prefetch)"},
	termOptimizerDefault: {Name: "optimizer_default", Level: "allocated",
		Reason: "optimizer not stated: foreach AdamW assumed; fused AdamW (HF default on torch >= 2.8) has no step intermediate",
		Source: "MODEL.md §2.1 (HF default optimizer), §2.3 (foreach +1× states at step), §15.6"},
}

// termWidth is what one term computes for an estimate: how far it can
// move the peak down and up, and its reason when that is not the fixed
// one of [bandTermText].
type termWidth struct {
	down, up units.Bytes
	reason   string
}

// withBand attaches the band to an estimate; the hook of [Estimate]. The
// band and its terms share one allocation.
func withBand(r *Result) {
	attachBand(r, new(bandBox))
}

// attachBand computes the band of r into box and attaches it.
func attachBand(r *Result, box *bandBox) {
	fillBand(&box.band, &box.terms, &r.Job, &r.PerGPU)
	r.PerGPU.Band = &box.band
}

// bandBox is the band of one estimate with room for all its terms.
type bandBox struct {
	band  Band
	terms [bandTermsPerEstimate]BandTerm
}

// EstimateBand computes the band of an estimate from its job and
// components. It is a pure function of the result.
func EstimateBand(r Result) Band {
	box := new(bandBox)
	fillBand(&box.band, &box.terms, &r.Job, &r.PerGPU)
	return box.band
}

// fillBand writes the band of the device peak of p, for job j, to b,
// with its non-zero terms in dst, largest first.
func fillBand(b *Band, dst *[bandTermsPerEstimate]BandTerm, j *Job, p *PerGPU) {
	in := bandIn{j: j, p: p, env: bandEnvOf(j)}
	in.rows.read(p)
	var w [bandTermsPerEstimate]termWidth
	w[termAllocator] = in.allocatorTerm()
	w[termRuntime] = in.runtimeTerm()
	if in.env&envServing == 0 { // vLLM's KV pool absorbs these differences
		w[termResidual] = in.residualTerm()
		w[termActivations], w[termSeqCap] = in.activationTerms()
	}
	w[termComm] = in.commTerm()
	w[termOptimizerDefault] = in.optimizerDefaultTerm()
	// Keep the non-zero terms and order them by their larger side,
	// largest first; equal sizes keep their order (a stable insertion
	// sort of the term indexes, so each term is written once).
	var order [bandTermsPerEstimate]uint8
	var size [bandTermsPerEstimate]units.Bytes
	n := 0
	for id := range w {
		s := max(w[id].down, w[id].up)
		if s <= 0 {
			continue
		}
		m := n
		for ; m > 0 && size[m-1] < s; m-- {
			order[m], size[m] = order[m-1], size[m-1]
		}
		order[m], size[m] = uint8(id), s
		n++
	}
	// Every term moves the device peak: the band is their root sum of
	// squares on each side, added in the order of the terms as combine
	// adds them.
	var d2, u2 float64
	for i, id := range order[:n] {
		t, d := &w[id], &dst[i]
		*d = bandTermText[id]
		d.DownBytes, d.UpBytes = t.down, t.up
		if t.reason != "" {
			d.Reason = t.reason
		}
		d2 += float64(t.down) * float64(t.down)
		u2 += float64(t.up) * float64(t.up)
	}
	lo, hi := units.FromFloat(math.Sqrt(d2)), units.FromFloat(math.Sqrt(u2))
	*b = Band{Peak: "device", LowBytes: sat(p.DevicePeakBytes - lo), ExpectedBytes: p.DevicePeakBytes,
		HighBytes: units.Add(p.DevicePeakBytes, hi), Terms: dst[:n:n]}
}

// The names of the breakdown rows the band reads.
const (
	rowNameFrag = "fragmentation"
	rowNameCtx  = "cuda_context"
	rowNameNCCL = "nccl"
	rowNameAct  = "activations"
	rowNameOut  = "output_activations"
	rowNameLoss = "loss"
	rowNameComm = "comm_buffers"
	rowNameStep = "optimizer_step"
)

// bandRowLens has bit l set when one of the rows the band reads has a
// name of length l (all are shorter than 64), so that most rows are
// passed over without comparing names.
const bandRowLens uint64 = 1<<len(rowNameFrag) | 1<<len(rowNameCtx) | 1<<len(rowNameNCCL) | 1<<len(rowNameAct) |
	1<<len(rowNameOut) | 1<<len(rowNameLoss) | 1<<len(rowNameComm) | 1<<len(rowNameStep)

// bandRows are the breakdown rows the band terms read: for each name
// the bytes of the first row so named, 0 when there is none.
type bandRows struct {
	frag, ctx, nccl, act, out, loss, comm, step units.Bytes
}

// read reads the rows the band needs in one pass over the breakdown of
// p. The pass runs backwards, so the first row of a name is the last
// one written and the one that counts.
func (r *bandRows) read(p *PerGPU) {
	comps := p.Components
	for i := len(comps) - 1; i >= 0; i-- {
		c := &comps[i]
		// A length of 64 or more wraps to a smaller one: the name is
		// then compared and matches none.
		if bandRowLens>>(len(c.Name)&63)&1 == 0 {
			continue
		}
		switch c.Name {
		case rowNameFrag:
			r.frag = c.Bytes
		case rowNameCtx:
			r.ctx = c.Bytes
		case rowNameNCCL:
			r.nccl = c.Bytes
		case rowNameAct:
			r.act = c.Bytes
		case rowNameOut:
			r.out = c.Bytes
		case rowNameLoss:
			r.loss = c.Bytes
		case rowNameComm:
			r.comm = c.Bytes
		case rowNameStep:
			r.step = c.Bytes
		}
	}
}

// Peak levels, ordered.
const (
	levelAllocated = iota
	levelReserved
	levelDevice
)

func levelOf(s string) int {
	switch s {
	case "reserved":
		return levelReserved
	case "device":
		return levelDevice
	}
	return levelAllocated
}

// combine adds the terms that move level (root sum of squares per side).
func combine(terms []BandTerm, level int) (down, up units.Bytes) {
	var d2, u2 float64
	for i := range terms {
		t := &terms[i]
		if level == levelDevice || levelOf(t.Level) <= level {
			d2 += float64(t.DownBytes) * float64(t.DownBytes)
			u2 += float64(t.UpBytes) * float64(t.UpBytes)
		}
	}
	return units.FromFloat(math.Sqrt(d2)), units.FromFloat(math.Sqrt(u2))
}

// BandAt returns the band of the peak at level ("allocated", "reserved"
// or "device"): the terms that move that peak, around it. ok is false
// when the estimate has no band.
func (p PerGPU) BandAt(level string) (low, high units.Bytes, ok bool) {
	if p.Band == nil {
		return 0, 0, false
	}
	peak := p.DevicePeakBytes
	switch levelOf(level) {
	case levelAllocated:
		peak = p.AllocatedPeakBytes
	case levelReserved:
		peak = p.ReservedPeakBytes
	}
	d, u := combine(p.Band.Terms, levelOf(level))
	return sat(peak - d), units.Add(peak, u), true
}

func sat(b units.Bytes) units.Bytes { return max(b, 0) }

// roundCount rounds a parameter count computed in floating point to the
// nearest integer, saturating at math.MaxInt64 and mapping NaN or
// negative values to 0. A sum of counts near the int64 limit rounds up
// to 2⁶³ in a float64, which a plain conversion turns negative.
func roundCount(f float64) int64 {
	if f > 0 && f < math.MaxInt64 {
		return int64(f + 0.5)
	}
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return 0
}

func frac(b units.Bytes, f float64) units.Bytes { return units.FromFloat(float64(b) * f) }

// bandIn is what the band terms read of an estimate: its job, its
// per-GPU result, the breakdown rows they need and facts about the job.
type bandIn struct {
	j    *Job
	p    *PerGPU
	rows bandRows
	env  bandEnv
}

// bandEnv is a set of facts about the job the terms read, found once
// per estimate: its mode, software era and calibrated constants.
type bandEnv uint8

// The facts of a [bandEnv].
const (
	envTrain     bandEnv = 1 << iota // mode "" or "train"
	envInference                     // mode "inference"
	envServing                       // mode "serving"
	envTorch1                        // the job runs torch 1.x
	envCalFrag                       // a calibrated fragmentation* constant
	envCalCtx                        // a calibrated CUDA context
	envCalNCCL                       // a calibrated NCCL size
)

// bandEnvOf finds the facts of j.
func bandEnvOf(j *Job) (e bandEnv) {
	switch j.Mode {
	case "", Train:
		e |= envTrain
	case Inference:
		e |= envInference
	case Serving:
		e |= envServing
	}
	if rulesOf(j).has(ruleTorchFragmentation1x) {
		e |= envTorch1
	}
	if len(j.Constants) > 0 {
		if overridden(j, fragPrefix) {
			e |= envCalFrag
		}
		if overridden(j, "cuda_context") {
			e |= envCalCtx
		}
		if overridden(j, "nccl") {
			e |= envCalNCCL
		}
	}
	return e
}

// overridden reports whether the job sets a constant whose name starts
// with prefix (a calibrated value).
func overridden(j *Job, prefix string) bool {
	for k := range j.Constants {
		if strings.HasPrefix(strings.ToLower(k), prefix) {
			return true
		}
	}
	return false
}

// allocatorTerm: the fragmentation fraction within its documented range.
func (in *bandIn) allocatorTerm() (t termWidth) {
	frag, alloc := in.rows.frag, float64(in.p.AllocatedPeakBytes)
	if frag <= 0 || alloc <= 0 {
		return t
	}
	f := float64(frag) / alloc
	lo, hi := fragTrainLo, fragTrainHi
	switch {
	case in.env&envCalFrag != 0:
		lo, hi = f-fragCalibrated, f+fragCalibrated
		t.reason = "calibrated fragmentation fraction, trusted to ±2 points"
	case in.env&(envInference|envServing) != 0:
		lo, hi = fragInferLo, fragInferHi
	case in.env&envTorch1 != 0:
		lo, hi = fragLegacyLo, fragLegacyHi
	case f > fragTrainHi: // the sharded-training fraction
		lo, hi = fragShardedLo, fragShardedHi
	}
	lo, hi = min(lo, f), max(hi, f)
	t.down = units.FromFloat(max(0, f-lo) * alloc)
	t.up = units.FromFloat(max(0, hi-f) * alloc)
	return t
}

// runtimeTerm: the CUDA context and NCCL communicators.
func (in *bandIn) runtimeTerm() termWidth {
	ctx := float64(in.rows.ctx)
	var d, u float64
	switch {
	case ctx <= 0:
	case in.env&envCalCtx != 0:
		d, u = ctx*ctxCalibrated, ctx*ctxCalibrated
	case in.env&envTorch1 != 0:
		d, u = max(0, ctx-ctxEagerLoMiB*mib), max(0, ctxEagerHiMiB*mib-ctx)
	default:
		d, u = max(0, ctx-ctxLazyLoMiB*mib), max(0, ctxLazyHiMiB*mib-ctx)
	}
	if n := float64(in.rows.nccl); n > 0 && in.env&envCalNCCL == 0 {
		d, u = math.Hypot(d, n*ncclDown), math.Hypot(u, n*ncclUp)
	}
	return termWidth{down: units.FromFloat(d), up: units.FromFloat(u)}
}

// residualTerm: the estimator's residual error on measured runs.
func (in *bandIn) residualTerm() termWidth {
	r := frac(in.p.AllocatedPeakBytes, residual)
	return termWidth{down: r, up: r}
}

// activationTerms are the two terms of the saved activations and the
// loss at the peak phase: their inventories' drift (activations) and,
// on unpacked data, --seq-len being only a cap of the sample length
// (seq_len_cap).
func (in *bandIn) activationTerms() (drift, seqCap termWidth) {
	j, rows := in.j, &in.rows
	act := units.Add(rows.act, units.Add(rows.out, rows.loss))
	down := actDown
	reason := 0
	if j.Framework == "" {
		down += actUnstated
		reason |= actReasonFramework
	}
	if j.Attention == "" {
		down += actUnstated
		reason |= actReasonAttention
	}
	if j.GradCheckpoint == "selective" {
		down = max(down, actSelectiveDown)
		reason |= actReasonSelective
	}
	drift = termWidth{down: frac(act, down), up: frac(act, actUp), reason: actReasons[reason]}
	if in.env&envInference == 0 && j.Packed != nil && !*j.Packed {
		seqCap.down = frac(act, actSeqCapDown)
	}
	return drift, seqCap
}

// Flags selecting the reason of the activations term.
const (
	actReasonFramework = 1 << iota // framework not stated
	actReasonAttention             // attention not stated
	actReasonSelective             // selective checkpointing
)

// actReasons is the reason of the activations term for each combination
// of the actReason flags, built once so an estimate joins no strings.
var actReasons = func() (r [8]string) {
	for i := range r {
		s := "saved-activation inventories change with framework and library versions"
		var unstated []string
		if i&actReasonFramework != 0 {
			unstated = append(unstated, "framework")
		}
		if i&actReasonAttention != 0 {
			unstated = append(unstated, "attention")
		}
		if len(unstated) > 0 {
			s += "; not stated, so defaults assumed: " + strings.Join(unstated, ", ")
		}
		if i&actReasonSelective != 0 {
			s += "; selective checkpointing keeps different tensors in each framework"
		}
		r[i] = s
	}
	return r
}()

// commTerm: data-parallel communication buffers (DDP buckets, DeepSpeed
// IPG buckets, FSDP unsharded units).
func (in *bandIn) commTerm() termWidth {
	c := float64(in.rows.comm)
	return termWidth{down: units.FromFloat(c * commDown), up: units.FromFloat(c * commUp)}
}

// optimizerDefaultTerm: no optimizer given, so torch's foreach AdamW with
// its step intermediate is assumed; the fused AdamW that HF Trainer picks
// on torch >= 2.8 has none, which lowers a peak at the step.
func (in *bandIn) optimizerDefaultTerm() termWidth {
	p := in.p
	if in.env&envTrain == 0 || in.j.Optimizer != "" || p.PeakPhase != "step" {
		return termWidth{}
	}
	step := in.rows.step
	if step <= 0 {
		return termWidth{}
	}
	alt := sat(p.AllocatedPeakBytes - step)
	for i := range p.Phases {
		// The size first: most phases are below alt, and then the
		// name need not be compared.
		if ph := &p.Phases[i]; ph.Bytes > alt && ph.Name != "step" {
			alt = ph.Bytes
		}
	}
	return termWidth{down: sat(p.AllocatedPeakBytes - alt)}
}
