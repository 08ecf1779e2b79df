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

	bandTermsPerEstimate = 7
	mib                  = float64(units.MiB)
	fragPrefix           = "fragmentation"
)

// withBand attaches the band to an estimate; the hook of [Estimate]. The
// band and its terms share one allocation.
func withBand(r *Result) {
	attachBand(r, new(bandBox))
}

// attachBand computes the band of r into box and attaches it.
func attachBand(r *Result, box *bandBox) {
	n := bandTerms(&r.Job, &r.PerGPU, &box.terms)
	box.band = bandAround(&r.PerGPU, box.terms[:n:n])
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
	var buf [bandTermsPerEstimate]BandTerm
	n := bandTerms(&r.Job, &r.PerGPU, &buf)
	terms := make([]BandTerm, n, bandTermsPerEstimate)
	copy(terms, buf[:n])
	return bandAround(&r.PerGPU, terms)
}

// bandAround is the band of the device peak made of terms, which are
// sorted largest first.
func bandAround(p *PerGPU, terms []BandTerm) Band {
	lo, hi := combine(terms, levelDevice)
	return Band{Peak: "device", LowBytes: sat(p.DevicePeakBytes - lo), ExpectedBytes: p.DevicePeakBytes,
		HighBytes: units.Add(p.DevicePeakBytes, hi), Terms: terms}
}

// bandTerms writes the non-zero terms of an estimate into dst, largest
// first, and returns how many there are.
func bandTerms(j *Job, p *PerGPU, dst *[bandTermsPerEstimate]BandTerm) int {
	rows := bandRowsOf(p)
	var all [bandTermsPerEstimate]BandTerm
	k := 0
	all[k], k = allocatorTerm(j, p, &rows), k+1
	all[k], k = runtimeTerm(j, &rows), k+1
	if j.Mode != Serving { // vLLM's KV pool absorbs these differences
		all[k], k = residualTerm(p), k+1
		all[k], k = activationTerm(j, &rows), k+1
		all[k], k = seqCapTerm(j, &rows), k+1
	}
	all[k], k = commTerm(&rows), k+1
	all[k], k = optimizerDefaultTerm(j, p, &rows), k+1
	// Keep the non-zero terms and order them by their larger side,
	// largest first; equal sizes keep their order (a stable insertion
	// sort over indexes, so the terms themselves move once).
	var idx [bandTermsPerEstimate]int
	var size [bandTermsPerEstimate]units.Bytes
	n := 0
	for i := range k {
		t := &all[i]
		if t.DownBytes <= 0 && t.UpBytes <= 0 {
			continue
		}
		idx[n], size[n] = i, max(t.DownBytes, t.UpBytes)
		for m := n; m > 0 && size[m] > size[m-1]; m-- {
			idx[m], idx[m-1] = idx[m-1], idx[m]
			size[m], size[m-1] = size[m-1], size[m]
		}
		n++
	}
	for i := range n {
		dst[i] = all[idx[i]]
	}
	return n
}

// bandRows are the breakdown rows the band terms read: for each name
// the bytes of the first row so named, 0 when there is none.
type bandRows struct {
	frag, ctx, nccl, act, out, loss, comm, step units.Bytes
}

// bandRowsOf reads the rows the band needs in one pass over the
// breakdown (the first row of each name counts).
func bandRowsOf(p *PerGPU) bandRows {
	var r bandRows
	var seen uint8
	take := func(bit uint8, dst *units.Bytes, b units.Bytes) {
		if seen&bit == 0 {
			seen |= bit
			*dst = b
		}
	}
	for i := range p.Components {
		c := &p.Components[i]
		switch c.Name {
		case "fragmentation":
			take(1, &r.frag, c.Bytes)
		case "cuda_context":
			take(2, &r.ctx, c.Bytes)
		case "nccl":
			take(4, &r.nccl, c.Bytes)
		case "activations":
			take(8, &r.act, c.Bytes)
		case "output_activations":
			take(16, &r.out, c.Bytes)
		case "loss":
			take(32, &r.loss, c.Bytes)
		case "comm_buffers":
			take(64, &r.comm, c.Bytes)
		case "optimizer_step":
			take(128, &r.step, c.Bytes)
		}
	}
	return r
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

func frac(b units.Bytes, f float64) units.Bytes { return units.FromFloat(float64(b) * f) }

// overridden reports whether the job sets a constant whose name starts
// with prefix (a calibrated value).
func overridden(j *Job, prefix string) bool {
	if len(j.Constants) == 0 {
		return false
	}
	for k := range j.Constants {
		if strings.HasPrefix(strings.ToLower(k), prefix) {
			return true
		}
	}
	return false
}

// allocatorTerm: the fragmentation fraction within its documented range.
func allocatorTerm(j *Job, p *PerGPU, rows *bandRows) BandTerm {
	frag, alloc := rows.frag, float64(p.AllocatedPeakBytes)
	t := BandTerm{Name: "allocator", Level: "reserved",
		Reason: "caching-allocator fragmentation (reserved − allocated) varies with the shapes a run allocates",
		Source: "MODEL.md §10 (2–10 % in steady training), §15.5 (0–2 % HF inference, ≈ 15 % torch 1.x), §15.11 (13–22 % sharded)"}
	if frag <= 0 || alloc <= 0 {
		return t
	}
	f := float64(frag) / alloc
	lo, hi := fragTrainLo, fragTrainHi
	switch {
	case overridden(j, fragPrefix):
		lo, hi = f-fragCalibrated, f+fragCalibrated
		t.Reason = "calibrated fragmentation fraction, trusted to ±2 points"
	case j.Mode == Inference || j.Mode == Serving:
		lo, hi = fragInferLo, fragInferHi
	case hasSoftware(j.Software, "torch1"):
		lo, hi = fragLegacyLo, fragLegacyHi
	case f > fragTrainHi: // the sharded-training fraction
		lo, hi = fragShardedLo, fragShardedHi
	}
	lo, hi = min(lo, f), max(hi, f)
	t.DownBytes = units.FromFloat(max(0, f-lo) * alloc)
	t.UpBytes = units.FromFloat(max(0, hi-f) * alloc)
	return t
}

// runtimeTerm: the CUDA context and NCCL communicators.
func runtimeTerm(j *Job, rows *bandRows) BandTerm {
	t := BandTerm{Name: "runtime", Level: "device",
		Reason: "CUDA context size depends on the driver, CUDA version and kernels loaded; NCCL buffers on channels and peers",
		Source: "MODEL.md §10 (context 300–600 MiB lazy, ~1 GiB with more kernels; NCCL 0.2–1 GiB per communicator), §15.5 (1343 MiB eager)"}
	ctx := float64(rows.ctx)
	var d, u float64
	switch {
	case ctx <= 0:
	case overridden(j, "cuda_context"):
		d, u = ctx*ctxCalibrated, ctx*ctxCalibrated
	case hasSoftware(j.Software, "torch1"):
		d, u = max(0, ctx-ctxEagerLoMiB*mib), max(0, ctxEagerHiMiB*mib-ctx)
	default:
		d, u = max(0, ctx-ctxLazyLoMiB*mib), max(0, ctxLazyHiMiB*mib-ctx)
	}
	if n := float64(rows.nccl); n > 0 && !overridden(j, "nccl") {
		d, u = math.Hypot(d, n*ncclDown), math.Hypot(u, n*ncclUp)
	}
	t.DownBytes, t.UpBytes = units.FromFloat(d), units.FromFloat(u)
	return t
}

// residualTerm: the estimator's residual error on measured runs.
func residualTerm(p *PerGPU) BandTerm {
	r := frac(p.AllocatedPeakBytes, residual)
	return BandTerm{Name: "residual", Level: "allocated", DownBytes: r, UpBytes: r,
		Reason: "tensors and transients the component inventories do not list",
		Source: "dev measurements: 80 % of the scored records are within 5 % of the estimate (accuracy.CheckBand)"}
}

// activationTerm: saved activations and the loss at the peak phase.
func activationTerm(j *Job, rows *bandRows) BandTerm {
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
	return BandTerm{Name: "activations", Level: "allocated", DownBytes: frac(act, down), UpBytes: frac(act, actUp),
		Reason: actReasons[reason],
		Source: "MODEL.md §4.3, §14 item 1, §15.7, §15.14; dev measurements within ±5 % with the stated framework"}
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

// seqCapTerm: unpacked data, where --seq-len only caps the sample length.
func seqCapTerm(j *Job, rows *bandRows) BandTerm {
	t := BandTerm{Name: "seq_len_cap", Level: "allocated",
		Reason: "packed is false: seq_len only caps variable-length samples, and the peak is set by the longest batch the run meets",
		Source: "MODEL.md §15.15; testdata README (unpacked datasets: the real peak depends on the longest batch)"}
	if j.Mode == Inference || j.Packed == nil || *j.Packed {
		return t
	}
	act := units.Add(rows.act, units.Add(rows.out, rows.loss))
	t.DownBytes = frac(act, actSeqCapDown)
	return t
}

// commTerm: data-parallel communication buffers (DDP buckets, DeepSpeed
// IPG buckets, FSDP unsharded units).
func commTerm(rows *bandRows) BandTerm {
	c := rows.comm
	return BandTerm{Name: "comm_buffers", Level: "allocated", DownBytes: frac(c, commDown), UpBytes: frac(c, commUp),
		Reason: "bucket sizes and overlap settings of the distributed engine",
		Source: "MODEL.md §14 item 2 (IPG buckets 1–2 GB at defaults, FSDP unsharded units, prefetch)"}
}

// optimizerDefaultTerm: no optimizer given, so torch's foreach AdamW with
// its step intermediate is assumed; the fused AdamW that HF Trainer picks
// on torch >= 2.8 has none, which lowers a peak at the step.
func optimizerDefaultTerm(j *Job, p *PerGPU, rows *bandRows) BandTerm {
	t := BandTerm{Name: "optimizer_default", Level: "allocated",
		Reason: "optimizer not stated: foreach AdamW assumed; fused AdamW (HF default on torch >= 2.8) has no step intermediate",
		Source: "MODEL.md §2.1 (HF default optimizer), §2.3 (foreach +1× states at step), §15.6"}
	if (j.Mode != "" && j.Mode != Train) || j.Optimizer != "" || p.PeakPhase != "step" {
		return t
	}
	step := rows.step
	if step <= 0 {
		return t
	}
	alt := sat(p.AllocatedPeakBytes - step)
	for _, ph := range p.Phases {
		if ph.Name != "step" {
			alt = max(alt, ph.Bytes)
		}
	}
	t.DownBytes = sat(p.AllocatedPeakBytes - alt)
	return t
}
