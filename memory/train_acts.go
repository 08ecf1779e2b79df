package memory

import (
	"math"
	"strings"
	"unsafe"

	"github.com/gpumem/gpumem/model"
)

// actTotals are the activation terms of the step phases, in bytes.
type actTotals struct {
	fwd     float64 // saved by the text layers at the end of forward (or their checkpoints)
	top     float64 // alive while the first layer of backward runs (incl. its recompute)
	bottom  float64 // alive while the last recording layer's backward runs
	trans   float64 // one layer's backward transient
	layer   float64 // one (the largest) full layer inventory, all tokens
	ckpt    float64 // one layer checkpoint (the layer input; with ckptOp also what the policy keeps)
	opKept  float64 // ckptOp: what the policy keeps of one layer besides its input
	nrec    int     // text layers that record a graph
	nckpt   int     // text layers holding a checkpoint
	out     float64 // outside the layers: final norm + lm_head input + input ids
	vision  float64 // vision tower and projector, saved through forward and backward
	encoder float64 // encoder stack of an encoder-decoder model
	mask    float64 // materialised attention mask (shared by all layers)
	perTok  layerAct
}

// loraLayer is the adapters of one text layer (nil unless the job
// trains LoRA adapters). The regime's lora field is set by the caller
// holding the regime, so that fillRegime stores no pointer to s through
// its argument (which would make the set-up escape to the heap).
func (s *setup) loraLayer() *loraLayer {
	if s.method == MethodLoRA || s.method == MethodQLoRA {
		return &s.lora.perLayer
	}
	return nil
}

// fillRegime writes the activation regime of the text stack into r, a
// zero actRegime, but for its lora field (see loraLayer); actRegime
// keeps it for the job.
func (s *setup) fillRegime(r *actRegime) {
	r.c, r.resid, r.amp, r.attn = s.compute.BytesPerElement(), s.residual, s.amp, s.attn
	r.fused = s.framework == FrameworkMegatron
	r.selectiv = s.ckpt == ckptSelective
	r.trainW = s.method == MethodFull
	r.adapterB = s.adapter.BytesPerElement()
	if !r.trainW {
		// The LoRA knobs are zero unless the job trains adapters.
		r.dropout, r.rank = s.lora.dropout, float64(s.lora.rank)
		r.loraFA, r.dora = s.lora.variant == VariantLoRAFA, s.lora.variant == VariantDoRA
		r.variant = s.lora.variant
		if n := s.prefixTokens(); n > 0 {
			r.prefix = float64(n) / float64(s.seqTotal)
		}
	}
	// GQA K/V are saved at query width when repeat_kv runs: HF SDPA with
	// a padding mask (no native GQA, MODEL.md §15.7), eager attention,
	// torchtune and litgpt (expand before SDPA).
	st := &s.m.Text
	if st.KVHeads < st.Heads {
		switch {
		case s.attn == trAttnEager:
			r.gqaWide = true
		case s.framework == FrameworkTorchtune || s.framework == FrameworkLitGPT:
			r.gqaWide = true
		case s.framework == FrameworkHF && s.attn == trAttnSDPA && !s.packed:
			r.gqaWide = true
		}
	}
	r.bnbSaves = s.bnbOld && s.method == MethodQLoRA
	r.tp, r.sp = float64(max(s.dist.tp, 1)), s.dist.sp
	litgpt := s.framework == FrameworkLitGPT
	r.sepOut, r.litgptQKV = litgpt, litgpt
	r.vView = litgpt && st.KVHeads == st.Heads
	r.extraNorms = s.extraNorms()
	r.attnOver, r.mlpOver = s.actOverrides(st, r.c)
	if len(s.trainable.patterns) > 0 {
		r.tw = s.layerWeights()
	}
}

// layerWeights lists the base weights of the lowest trainable text layer
// that --trainable module names (or PEFT modules_to_save) select; every
// recording layer is taken to train the same modules. Linears are
// grouped by the tensor they read with the short names addLayerGeometry
// groups adapters by; the first hidden-width norm of a layer in module
// order is the one feeding attention, narrower ones sit inside attention
// (QK norms, latent norms), the others feed or follow the MLP.
func (s *setup) layerWeights() layerTrain {
	var w layerTrain
	st := &s.m.Text
	lo := s.trainable.lowest
	rows := s.tab.named(s.m)
	firstNorm := true
	for i := range s.m.Modules {
		mod := &s.m.Modules[i]
		if mod.Stack != stackText || mod.Layer < 0 || lo < mod.Layer || lo >= mod.Layer+max(mod.Layers, 1) {
			continue
		}
		isNorm := mod.Kind == "norm" || mod.Component == "norm"
		hiddenNorm := isNorm && (mod.Each == int64(st.Hidden) || mod.Each == 2*int64(st.Hidden))
		trains := s.trainable.matches(mod)
		switch {
		case hiddenNorm && firstNorm:
			firstNorm = false
			w.attnNorm = trains
		case !trains:
		case hiddenNorm:
			w.mlpNorm = true
		case isNorm:
			w.qkNorm = true
		case mod.In > 0 && mod.Out > 0:
			switch linearRoleOf(rows[i].short) {
			case roleQKV, roleFusedQKV:
				w.qkvIn++
			case roleO:
				w.oIn++
			case roleMLPIn:
				w.mlpIn++
			default:
				w.downIn++
			}
		}
	}
	return w
}

// actOverrides converts the activation factors a job sets (constants
// attn_act_factor_fa, attn_act_factor_no_fa, mlp_act_factor: elements of
// the hidden size per token per layer) into bytes per token per layer
// with the compute dtype's element size c; 0 keeps a part derived. The
// FlashAttention factor applies to the fused kernels (flash, SDPA), the
// other to eager attention, as the two paths of the estimator the
// factors come from.
func (s *setup) actOverrides(st *model.Stack, c float64) (attn, mlp float64) {
	h := float64(st.Hidden)
	f := s.c[cAttnActFactorFA]
	if s.attn == trAttnEager {
		f = s.c[cAttnActFactorNoFA]
	}
	return f * h * c, s.c[cMLPActFactor] * h * c
}

// ckptRetention is the fraction of the activations kept with layer
// checkpointing when the job sets grad_ckpt_reduction, or 0 when the
// derived model (checkpoints + one recomputed layer) applies.
func (s *setup) ckptRetention() float64 {
	if s.ckpt != ckptFull && s.ckpt != ckptEveryN {
		return 0
	}
	return s.c[cGradCkptReduction]
}

// warnUnusedActConstants names activation constants the job sets that
// do not apply to it: the attention factor of the other attention path,
// or a checkpointing retention without layer checkpointing.
func (s *setup) warnUnusedActConstants() {
	if s.attn == trAttnEager && s.c[cAttnActFactorFA] > 0 {
		s.warn("attn_act_factor_fa is set but attention is eager: it applies to flash and SDPA attention (attn_act_factor_no_fa applies to eager)")
	}
	if s.attn != trAttnEager && s.c[cAttnActFactorNoFA] > 0 {
		s.warn("attn_act_factor_no_fa is set but attention is fused (flash or SDPA): it applies to eager attention (attn_act_factor_fa applies here)")
	}
	if s.c[cGradCkptReduction] > 0 && s.ckptRetention() == 0 {
		s.warn("grad_ckpt_reduction is set but the job does not checkpoint layers: it applies with grad_checkpoint=full or every-N")
	}
}

// actMemo is what the activations and overheads of a stage compute
// alike for every pipeline stage of a job, and every micro-batch of a
// [Sweep]: the runtime overheads, the regime, and the inventory of a
// decoder layer of type lt on the uniform path (its own weights training
// as the method says, its input needing grad).
type actMemo struct {
	// ov is the job's runtime overheads (trainOverheads), once haveOv.
	ov         Overheads
	haveOv     bool
	haveRegime bool
	r          actRegime
	haveLayer  bool
	lt         model.LayerType
	a          layerAct
}

// actRegime returns the activation regime of the text stack, computed
// once per job (fillRegime: the part of it that holds no pointer into
// s), with its lora field.
func (s *setup) actRegime() actRegime {
	if !s.acts.haveRegime {
		s.fillRegime(&s.acts.r)
		s.acts.haveRegime = true
	}
	r := s.acts.r
	r.lora = s.loraLayer()
	return r
}

// uniformLayer returns decoderLayer(st, lt, r) for the uniform path's r
// (the job's regime with trainW as the method says), computed once per
// job and layer type.
func (s *setup) uniformLayer(st *model.Stack, lt model.LayerType, r *actRegime) layerAct {
	m := &s.acts
	if !m.haveLayer || m.lt != lt {
		m.a, m.lt, m.haveLayer = decoderLayer(st, lt, r), lt, true
	}
	return m.a
}

// activations computes the activation terms (MODEL.md §4, §5, §11).
func (s *setup) activations() (t actTotals) {
	st := &s.m.Text
	r := s.actRegime()
	// Context parallelism splits every sequence over cp ranks (§4.8).
	n := s.tokens / float64(max(s.dist.cp, 1))
	// Prefix tuning lengthens every layer's keys and values.
	kvLen := float64(s.seqTotal + s.prefixTokens())
	scale := s.c[cActivationScale]
	if s.compile {
		scale *= s.c[cCompileActivationFactor]
	}
	L := st.Layers
	lowest := min(max(s.trainable.lowest, 0), L)
	// Recording layers on this rank: the stage's layers from the lowest
	// trainable one (all of them when the embedding trains).
	lo, hi := max(lowest, s.dist.stageLo), min(s.dist.stageHi, L)
	full := r.trainW // full fine-tuning (fillRegime)
	if full {
		lo = s.dist.stageLo
	}
	t.nrec = max(hi-lo, 0)
	// Per-layer inventories by layer type, summed over recording layers.
	encoderOnly := !st.Causal && s.m.Encoder == nil && st.Norm == model.LayerNorm
	// The lowest trainable layer, when its input does not require grad,
	// saves less than the layers above it (gradFlow).
	noGradLo := !full && t.nrec > 0 && !encoderOnly && s.inputNoGrad(lo) // full: every input requires grad
	var sum, first, last layerAct
	if s.uniformLayers(lo, hi) {
		// Fast path: every recording layer has the same type and trains
		// alike (dense decoders, full or LoRA training); r.trainW is full.
		var a layerAct
		if encoderOnly {
			r.postLN = true
			a = encoderPostLN(st, &r)
		} else {
			a = s.uniformLayer(st, layerTypeAt(st, max(hi-1, 0)), &r)
		}
		k := float64(t.nrec)
		sum, first, last = a.times(k), a, a
		if noGradLo {
			r.noGradIn = true
			first = decoderLayer(st, layerTypeAt(st, lo), &r)
			r.noGradIn = false
			sum = a.times(k - 1).add(first)
			if t.nrec == 1 {
				last = first
			}
		}
		t.layer = max(a.bytes(n, kvLen), first.bytes(n, kvLen)) * scale
		s.finishActs(&t, &r, sum, first, last, n, kvLen, scale)
		return t
	}
	// Layers repeat a few types: compute each (type, trains) inventory once.
	var cache [4]struct {
		lt    model.LayerType
		train bool
		a     layerAct
		ok    bool
	}
	for i := lo; i < hi; i++ {
		lt := layerTypeAt(st, i)
		train := full || (s.trainable.lo <= i && i <= s.trainable.hi)
		var a layerAct
		hit := false
		for k := range cache {
			if e := &cache[k]; e.ok && e.lt == lt && e.train == train {
				a, hit = e.a, true
				break
			}
		}
		switch {
		case i == lo && noGradLo:
			r.trainW, r.noGradIn = train, true
			a = decoderLayer(st, lt, &r)
			r.noGradIn = false
		case !hit:
			r.trainW = train
			if encoderOnly {
				r.postLN = true
				a = encoderPostLN(st, &r)
			} else {
				a = decoderLayer(st, lt, &r)
			}
			e := &cache[i%len(cache)]
			e.lt, e.train, e.a, e.ok = lt, train, a, true
		}
		sum = sum.add(a)
		if i == lo {
			first = a
		}
		last = a
		t.layer = max(t.layer, a.bytes(n, kvLen)*scale)
	}
	r.trainW = full
	s.finishActs(&t, &r, sum, first, last, n, kvLen, scale)
	return t
}

// inputNoGrad reports whether layer lo, the lowest recording layer of
// this rank, is the lowest trainable layer of a LoRA or frozen/partial
// job and its input does not require grad, so that it saves only what
// the outputs of its trainable weights reach (gradFlow): nothing below
// it trains (no trainable embedding, vision tower, projector, encoder
// module or layer), it is not a pipeline stage's first layer fed by another stage
// (received activations require grad; a trained encoder's output feeds
// cross-attention), and HF's checkpointing does not
// make the embedding output require grad. The last holds for HF with
// layer checkpointing, LoRA or frozen alike: with reentrant checkpointing
// (HF's default use_reentrant=True) a checkpointed layer none of whose
// inputs requires grad gives its parameters no gradient, so PEFT and
// gradient_checkpointing_enable call enable_input_require_grads, a
// forward hook that sets requires_grad on the embedding output
// (huggingface/transformers src/transformers/modeling_utils.py,
// huggingface/peft src/peft/utils/other.py; MODEL.md §4.3.5, §5.2), and
// every layer then keeps its full inventory. A frozen job known only by
// a trainable-parameter count keeps it too: which modules train is
// unknown.
func (s *setup) inputNoGrad(lo int) bool {
	t := &s.trainable
	switch s.method {
	case MethodLoRA, MethodQLoRA:
		if s.lora.lowest != lo || (t.lo <= t.hi && t.lo <= lo) || s.promptTokens() > 0 {
			// Prompt tuning's virtual tokens require grad at the input.
			return false
		}
	case MethodFrozen:
		if s.countOnly() {
			return false
		}
	default:
		return false
	}
	switch {
	case t.lowest != lo:
		return false
	case lo == s.dist.stageLo && !s.dist.first:
		return false
	case s.framework == FrameworkHF && s.ckpt != ckptNone:
		return false
	case t.vision || t.projector || s.lora.vision:
		return false
	}
	for i := range s.m.Modules {
		mod := &s.m.Modules[i]
		if (mod.Component == compEmbedding && mod.Stack == stackText || mod.Stack == "encoder") && t.fraction(mod) > 0 {
			return false
		}
	}
	return true
}

// finishActs turns the summed layer inventories into the phase terms of
// t and adds the terms outside the layers.
func (s *setup) finishActs(t *actTotals, r *actRegime, sum, first, last layerAct, n, kvLen, scale float64) {
	st := &s.m.Text
	t.perTok = sum.times(scale)
	full := sum.bytes(n, kvLen) * scale
	t.trans = layerBackwardTransient(st, r).bytes(n, kvLen) + s.peftBackwardTransient(r) + s.float8Transient(n)
	// activation_scale scales the whole row, checkpoints included.
	t.ckpt = s.residual * float64(st.Hidden) * n * s.c[cActivationScale]
	if s.ckpt == ckptOp {
		// The policy's kept outputs are matmul and kernel results, which
		// compile_activation_factor (fused elementwise kernels) does not
		// shrink: activation_scale only.
		t.opKept = titanOpSaved(st, r, s.compile) * n * s.c[cActivationScale]
		t.ckpt += t.opKept
	}
	s.layerPhases(t, full, first.bytes(n, kvLen)*scale, last.bytes(n, kvLen)*scale)
	if k := s.dist.inFlight; k > 1 {
		// A pipeline stage keeps the activations of k micro-batches (§4.7).
		one := t.fwd
		t.fwd *= k
		t.top += (k - 1) * one
		t.bottom += (k - 1) * one
	}
	if s.dist.pp > 1 && !s.dist.last {
		t.out = 3 * 8 * n // ids only: the output layer is on the last stage
	} else {
		t.out = s.outsideActs(r)
	}
	if s.dist.first {
		// Most models have neither stack: skip the calls.
		if s.m.Vision != nil {
			t.vision = s.visionActs(r)
		}
		if s.m.Encoder != nil {
			t.encoder = s.encoderActs(r)
		}
	}
	t.mask = s.maskBytes()
}

// uniformLayers reports whether text layers from..L-1 share one layer
// type and one trainability.
func (s *setup) uniformLayers(from, to int) bool {
	st := &s.m.Text
	if !s.trainable.all && s.trainable.lo <= s.trainable.hi {
		// A trained layer range (frozen/partial training, or LoRA's
		// modules_to_save layers) records unlike the layers around it.
		return false
	}
	if len(st.LayerTypes) < st.Layers {
		return st.MoE == nil || st.MoE.DenseLayers <= from
	}
	if from >= to {
		return true
	}
	if s.tab.oneLayerType {
		return true // every range of one layer type is uniform
	}
	lts := st.LayerTypes[max(from, 0):min(to, st.Layers)]
	a := lts[0]
	for _, l := range lts[1:] {
		if l.CrossAttention != a.CrossAttention || l.MoE != a.MoE || !sameAttn(l.Attention, a.Attention) || !sameKV(l, a) ||
			l.State != a.State || l.FFN != a.FFN || l.NoFFN != a.NoFFN {
			return false
		}
	}
	return true
}

// sameAttn reports whether two attention kinds are equal. The kinds of a
// parsed model are the package constants, so the strings usually share
// their bytes: comparing the pointers first spares a call per layer.
func sameAttn(a, b model.AttnKind) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || unsafe.StringData(string(a)) == unsafe.StringData(string(b)) || a == b
}

// layerPhases applies checkpointing and offload to the layer totals.
// A set checkpointing retention r (grad_ckpt_reduction) replaces the
// checkpoint model: every phase keeps r × what it keeps without
// checkpointing.
func (s *setup) layerPhases(t *actTotals, full, bottomLayer, topLayer float64) {
	if r := s.ckptRetention(); r > 0 {
		t.fwd, t.top, t.bottom = r*full, r*full, r*bottomLayer
		s.offloadPhases(t)
		return
	}
	switch s.ckpt {
	case ckptFull:
		// HF checkpoints every decoder layer; with frozen layers below,
		// enable_input_require_grads makes all of them record (§5.2).
		t.nckpt = t.nrec
		// (Only full training sets trainable.all.)
		if !s.trainable.all && s.framework == FrameworkHF && s.trainable.lowest < s.m.Text.Layers {
			t.nckpt = s.dist.stageLayers
		}
		ck := float64(t.nckpt) * t.ckpt
		t.fwd = ck
		t.top = ck + topLayer
		t.bottom = t.ckpt + bottomLayer
	case ckptOp:
		// Every recording layer keeps its input and the policy's outputs
		// through forward. The layer in backward has popped its outputs
		// from the policy's cache while recomputing: those its recomputed
		// graph saves are in its full inventory, the rest are freed.
		t.nckpt = t.nrec
		if t.nrec == 0 {
			t.fwd, t.top, t.bottom = 0, 0, 0
			break
		}
		ck := float64(t.nckpt) * t.ckpt
		t.fwd = ck
		t.top = ck - t.opKept + topLayer
		t.bottom = t.ckpt - t.opKept + bottomLayer
	case ckptEveryN:
		k := int(math.Ceil(float64(t.nrec) / float64(s.ckptEvery)))
		t.nckpt = k
		avg := 0.0
		if t.nrec > 0 {
			avg = full / float64(t.nrec)
		}
		t.fwd = float64(k)*t.ckpt + float64(t.nrec-k)*avg
		t.top = t.fwd + topLayer
		t.bottom = t.ckpt + bottomLayer
	default:
		t.fwd = full
		t.top = full
		t.bottom = bottomLayer
	}
	s.offloadPhases(t)
}

// offloadPhases bounds the layer totals by what activation offloading
// keeps on the GPU.
func (s *setup) offloadPhases(t *actTotals) {
	if s.offload {
		// Saved tensors stream to host memory; the GPU keeps the layer in
		// flight and the one being prefetched (torchtune OffloadActivations).
		keep := 2 * max(t.layer, t.ckpt)
		if s.ckpt == ckptFull {
			keep = 2*t.ckpt + t.layer
		}
		t.fwd = min(t.fwd, keep)
		t.top = min(t.top, keep+t.layer)
		t.bottom = min(t.bottom, keep+t.layer)
	}
}

// layerTypeAt returns layer i's type (a full-attention dense layer when
// the stack lists none).
func layerTypeAt(st *model.Stack, i int) model.LayerType {
	if i < len(st.LayerTypes) {
		return st.LayerTypes[i]
	}
	lt := model.LayerType{Attention: model.FullAttention}
	if st.MoE != nil {
		lt.MoE = i >= st.MoE.DenseLayers
	}
	return lt
}

// outsideActs is what the final norm and the output projection's input
// save (MODEL.md §4.6 "final norm + lm_head input" 8·sbh when training),
// plus the int64 input ids, labels and position ids.
func (s *setup) outsideActs(r *actRegime) float64 {
	st := &s.m.Text
	n := s.tokens
	ids := 3*8*n + s.promptEncoderActs()
	if s.loss == lossNone {
		return ids + r.c*float64(st.Hidden)*n
	}
	headTrains := s.method == MethodFull || s.trainable.fraction(s.lmHead()) > 0
	// A 4-bit lm_head on bitsandbytes < 0.43.2 keeps its input (§15.3).
	keepsInput := headTrains || (r.bnbSaves && s.quantHead)
	consumers := 0
	if keepsInput && s.loss != lossLiger {
		consumers = 1
	}
	// normAct with the final norm's weight training as the head does.
	return ids + normSaves(st, r, float64(st.Hidden), true, headTrains, consumers)*n
}

// lmHead returns the output-projection module (or an empty one).
func (s *setup) lmHead() *model.Module {
	for i := range s.m.Modules {
		if s.m.Modules[i].Component == compLMHead {
			return &s.m.Modules[i]
		}
	}
	return &model.Module{Layer: -1}
}

// visionActs is the vision tower's saved activations (MODEL.md §9): a
// pre-LN transformer over the patches of every image, recorded when the
// tower (or an adapter in it) trains, plus the projector's input and
// hidden state when the projector trains.
func (s *setup) visionActs(r *actRegime) float64 {
	v := s.m.Vision
	if v == nil || s.images == 0 {
		return 0
	}
	total, perSeq := imagePatches(v, s.job.ImageSize)
	patches := float64(perSeq) // each tile is its own attention sequence
	nv := float64(s.images) * float64(total)
	out := 0.0
	if s.trainable.vision || s.lora.vision {
		vr := *r
		vr.lora = nil
		vr.tw = layerTrain{} // the trainable names are the text layers'
		vr.gqaWide = false
		vr.attnOver, vr.mlpOver = 0, 0 // the factors are the text layers'
		a := decoderLayer(&v.Stack, model.LayerType{Attention: model.FullAttention}, &vr)
		per := a.bytes(nv, patches)
		switch k := s.ckptRetention(); {
		case k > 0:
			out = k * float64(v.Layers) * per
		case s.ckpt == ckptFull:
			out = float64(v.Layers)*r.resid*float64(v.Hidden)*nv + per
		default:
			out = float64(v.Layers) * per
		}
		out *= s.c[cActivationScale]
	}
	if s.trainable.vision || s.trainable.projector || s.method == MethodFull {
		imgTok := float64(s.seqTotal-s.seq) * float64(s.batch)
		out += r.c * (float64(v.Hidden)*nv + 2*float64(s.m.Text.Hidden)*imgTok)
	}
	return out
}

// encoderActs is the encoder stack of an encoder-decoder model, run over
// as many source tokens as the target sequence.
func (s *setup) encoderActs(r *actRegime) float64 {
	e := s.m.Encoder
	if e == nil {
		return 0
	}
	n := s.tokens
	er := *r
	er.tw = layerTrain{}           // the trainable names are the text layers'
	er.attnOver, er.mlpOver = 0, 0 // the factors are the text layers'
	a := decoderLayer(e, model.LayerType{Attention: model.FullAttention}, &er)
	per := a.bytes(n, float64(s.seqTotal))
	if k := s.ckptRetention(); k > 0 {
		return k * float64(e.Layers) * per * s.c[cActivationScale]
	}
	if s.ckpt == ckptFull {
		return (float64(e.Layers)*s.residual*float64(e.Hidden)*n + per) * s.c[cActivationScale]
	}
	return float64(e.Layers) * per * s.c[cActivationScale]
}

// maskBytes is the 4-D attention mask HF builds for eager attention, and
// for SDPA when batches are padded: [b, 1, s, s] in the compute dtype,
// shared by all layers (MODEL.md §5.1). Flash kernels, packed SDPA
// (is_causal) and encoders' [b,1,1,s] masks need none.
func (s *setup) maskBytes() float64 {
	if s.framework != FrameworkHF || !s.m.Text.Causal {
		return 0
	}
	if s.attn == trAttnEager || (s.attn == trAttnSDPA && !s.packed) {
		// b × s × (s + prefix): prefix tuning's past key/value positions
		// are columns of the mask.
		sl := float64(s.seqTotal)
		return s.compute.BytesPerElement() * float64(s.batch) * sl * (sl + float64(s.prefixTokens()))
	}
	return 0
}

// extraNorms counts the hidden-width norms per text layer beyond two
// (Gemma 2/3: pre/post feed-forward norms and a post-attention norm on
// the attention output).
func (s *setup) extraNorms() float64 { return s.tab.extraNorms }

// extraNormsOf is extraNorms of model m, tabulated once per model.
func extraNormsOf(m *model.Model) float64 {
	st := &m.Text
	if st.Layers == 0 || st.Hidden == 0 {
		return 0
	}
	var n float64
	for i := range m.Modules {
		mod := &m.Modules[i]
		if mod.Stack != stackText || mod.Layer < 0 || mod.Component != "norm" || mod.In > 0 {
			continue
		}
		if strings.Contains(mod.Name, ".self_attn.") {
			// Query/key norms inside attention (OLMoE's and OLMo 2's span
			// the whole projection, as wide as the hidden state) are
			// counted with the attention block (selfAttnAct, st.QKNorm).
			continue
		}
		if mod.Each == int64(st.Hidden) || mod.Each == 2*int64(st.Hidden) {
			n += float64(mod.Instances)
		}
	}
	return max(n/float64(st.Layers)-2, 0)
}
