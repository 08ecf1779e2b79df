package memory

import (
	"github.com/gpumem/gpumem/model"
)

// layerAct is what one layer saves for backward, per token of the
// micro-batch: lin bytes per token plus quad bytes per token per attended
// key position (the s² terms of eager attention).
type layerAct struct {
	lin, quad float64
	// fixed is what the layer saves whatever the tokens: weight-sized
	// tensors some PEFT methods build in forward (peftAct).
	fixed float64
}

// bytes is the layer's total for n tokens attending to kv positions each.
func (a layerAct) bytes(n, kv float64) float64 { return a.lin*n + a.quad*n*kv + a.fixed }

// add returns a + b.
func (a layerAct) add(b layerAct) layerAct {
	return layerAct{a.lin + b.lin, a.quad + b.quad, a.fixed + b.fixed}
}

// times returns k·a.
func (a layerAct) times(k float64) layerAct { return layerAct{a.lin * k, a.quad * k, a.fixed * k} }

// actRegime is everything besides the stack shape that decides what a
// layer saves: dtypes, kernels and which weights train.
type actRegime struct {
	c        float64 // bytes of a compute-dtype activation (2 bf16/fp16, 4 fp32)
	resid    float64 // bytes of the residual stream (4 under AMP or after kbit prep)
	amp      bool    // autocast: each consumer Linear casts its input (MODEL.md §4.5)
	attn     trAttn
	gqaWide  bool // K/V saved at full query width (repeat_kv, MODEL.md §15.7)
	fused    bool // fused norm/SwiGLU kernels (torch.compile, Liger, TE)
	selectiv bool // selective recompute: attention core recomputed
	trainW   bool // the layer's own weights train (full fine-tuning)
	lora     *loraLayer
	adapterB float64 // bytes of an adapter-dtype element
	dropout  float64 // LoRA dropout probability
	loraFA   bool
	dora     bool
	rank     float64
	// variant is the PEFT method of the adapters (VariantLoRA, ...);
	// prefix is prefix tuning's virtual tokens per sequence position
	// (n / s: every layer's keys and values are n positions longer).
	variant string
	prefix  float64
	postLN  bool // BERT-style post-LN encoder with dropout 0.1
	// bnbSaves is bitsandbytes < 0.43.2: MatMul4Bit keeps each 4-bit
	// Linear's input (MODEL.md §15.3); sepOut is true when the o-proj input
	// is a separate copy (litgpt reshapes the attention output).
	bnbSaves, sepOut bool
	// litgptQKV is litgpt's LoRAQKVLinear: one adapter module on the fused
	// q/k/v projection whatever the checkpoint's layout (see [loraAct]).
	litgptQKV bool
	// tp splits attention heads and FFN width over ranks; sp (sequence
	// parallel) also splits the norms and their inputs (Korthikanti
	// arXiv:2205.05198 Table 2). tp 0 means 1.
	tp float64
	sp bool
	// vView is litgpt's fused-qkv attention without K/V expansion: v is a
	// view of the qkv output, so the kernel's saved v keeps the whole qkv
	// tensor alive (q and k are new tensors after RoPE).
	vView bool
	// extraNorms is the number of hidden-width norms per layer beyond the
	// usual two (Gemma 2/3 sandwich norms around attention and MLP outputs).
	extraNorms float64
	// attnOver and mlpOver replace the attention and MLP parts of each
	// text layer's inventory (layerSplit), in bytes per token before
	// tensor parallelism; 0 keeps the derived parts. They come from the
	// constants attn_act_factor_fa / attn_act_factor_no_fa and
	// mlp_act_factor (× hidden × bytes of a compute-dtype element).
	attnOver, mlpOver float64
	// noGradIn is true for the lowest trainable layer of a LoRA or
	// frozen/partial job, whose input (the frozen embedding's output, or
	// a frozen layer's) does not require grad (see [gradFlow]).
	noGradIn bool
	// tw lists the base weights of each text layer that train when only
	// some of its modules do (--trainable module names, PEFT
	// modules_to_save); the zero value when none do. trainW (the whole
	// layer trains) overrides it.
	tw layerTrain
}

// layerTrain lists the base weights of one text layer that train:
// whether the norm feeding attention, a norm inside attention (QK norms,
// latent norms) and another norm of the layer train, and the trainable
// Linears counted by the tensor they read, as loraLayer counts adapters.
type layerTrain struct {
	attnNorm, qkNorm, mlpNorm bool
	qkvIn, oIn, mlpIn, downIn int
}

// wholeLayer is a layer all of whose weights train: three consumers of
// the attention norm's output (q, k, v; one autocast cast each under
// AMP), o, two of the MLP norm's output (gate, up), down.
var wholeLayer = layerTrain{attnNorm: true, qkNorm: true, mlpNorm: true, qkvIn: 3, oIn: 1, mlpIn: 2, downIn: 1}

// weights returns the layer's trainable base weights (read only).
func (r *actRegime) weights() *layerTrain {
	if r.trainW {
		return &wholeLayer
	}
	return &r.tw
}

// gradFlow says which tensors of a layer require grad when its input
// does not (the lowest trainable layer of a LoRA or frozen/partial job).
// Autograd saves a tensor for an op only when some input of the op
// requires grad (derivatives.yaml formulas are recorded only then; a
// custom Function's ctx is dropped with no graph to attach it to), and a
// frozen weight makes nothing require grad: only the output of a
// trainable weight (a norm's, a Linear's or an adapter's) does, and what
// is computed from it.
type gradFlow struct {
	attnIn bool // the attention norm's output: its weight trains
	attn   bool // q/k/v: attnIn, a trainable q/k/v/qkv Linear or an adapter on one
	out    bool // the attention block's output: attn, or a trainable o or an adapter on it
	mlpIn  bool // the MLP norm's input: out, unless the block reads the layer input (parallel residual)
	mlp    bool // the MLP norm's output: mlpIn, or the norm's weight trains
	hid    bool // the MLP hidden state: mlp, or a trainable gate/up or an adapter on one
	mlpOut bool // the MLP block's output: hid, or a trainable down or an adapter on it
}

// allGrad is the gradFlow of a layer whose input requires grad.
var allGrad = gradFlow{true, true, true, true, true, true, true}

// flow returns the layer's gradFlow: everything requires grad unless
// r.noGradIn.
func (r *actRegime) flow(st *model.Stack) gradFlow {
	if !r.noGradIn {
		return allGrad
	}
	w := r.weights()
	var g loraLayer
	if r.lora != nil {
		g = *r.lora
	}
	var f gradFlow
	f.attnIn = w.attnNorm
	f.attn = f.attnIn || w.qkNorm || w.qkvIn > 0 || g.attnIn+g.qkvIn > 0 || g.kvGrad
	f.out = f.attn || w.oIn > 0 || g.oIn > 0
	f.mlpIn = f.out && !st.ParallelBlock
	f.mlp = f.mlpIn || w.mlpNorm
	f.hid = f.mlp || w.mlpIn > 0 || g.mlpIn > 0
	f.mlpOut = f.hid || w.downIn > 0 || g.downIn > 0
	return f
}

// normAct is what one normalisation saves (MODEL.md §4.3.1, §4.3.7): the
// HF Python RMSNorm keeps an fp32 copy of its input, the normalised tensor
// when its weight trains, and its output is saved by consumer Linears that
// train (one shared tensor, or one autocast cast per consumer under AMP).
func normAct(st *model.Stack, r *actRegime, width float64, consumers int, trainLinears bool) float64 {
	if !trainLinears {
		consumers = 0
	}
	return normSaves(st, r, width, true, r.trainW, consumers)
}

// normSaves is what one normalisation saves when its input requires grad
// (inGrad) or not, its weight trains (weight) or not, and linears
// trainable Linears read its output. By the autograd rule of [gradFlow]:
// the HF Python RMSNorm's fp32 input copy is saved by pow and mul, whose
// inputs require grad only when the norm's input does; the weight
// multiply weight * x̂ saves x̂ for the weight's gradient and nothing
// for x̂'s (the generated MulBackward0 saves each input only when the
// other input's gradient is computed: pytorch/pytorch
// tools/autograd/gen_variable_type.py guards saved inputs with
// should_compute_output);
// F.layer_norm and fused norm kernels save their input for either
// gradient (native_layer_norm_backward recomputes the normalised tensor
// from it); a trainable Linear saves its input for its weight gradient
// whether or not that input requires grad.
func normSaves(st *model.Stack, r *actRegime, width float64, inGrad, weight bool, linears int) float64 {
	keepsIn := st.Norm == model.LayerNorm || r.fused
	b := 0.0
	switch {
	case keepsIn && (inGrad || weight):
		b = r.resid * width // F.layer_norm / fused kernels save the input as is
	case !keepsIn && inGrad:
		b = 4 * width // x.to(float32) in LlamaRMSNorm
	}
	if weight && !keepsIn {
		// weight * x̂: x̂ saved in the input dtype of the multiply, the
		// wider of the two (max without the NaN handling: both are
		// element sizes).
		e := r.c
		if r.resid > e {
			e = r.resid
		}
		b += e * width
	}
	if linears > 0 {
		if r.amp {
			b += float64(linears) * 2 * width
		} else {
			b += r.c * width
		}
	}
	return b
}

// layerSplit is one layer's saved inventory split by block, the split
// the activation-factor constants (attn_act_factor_fa/_no_fa,
// mlp_act_factor) replace:
//
//	attention: the norm feeding q/k/v, q/k/v (after RoPE and QK norms),
//	  the kernel output (= o_proj input) and logsumexp, or eager
//	  attention's scores and probabilities (quad); a cross-attention
//	  block with its norm; adapters on q/k/v/o and their own inputs;
//	  the q/k/v/o inputs bitsandbytes < 0.43.2 keeps
//	mlp: the norm feeding gate/up, gate and up outputs, the activation
//	  output, the down input; the MoE router and expert copies; adapters
//	  on gate/up/down; the gate/up/down inputs old bitsandbytes keeps
//	post-norms: Gemma's sandwich norms, one on each block's output
//	  (half counted with each block)
type layerSplit struct {
	attn      layerAct // attention block, without its input norm
	attnNorm  float64  // the norm feeding attention
	mlp       float64  // MLP block, without its input norm
	mlpNorm   float64  // the norm feeding the MLP (less the input it shares with attention)
	postNorms float64  // post-norms on the blocks' outputs
	fixed     float64  // saved whatever the tokens (layerAct.fixed)
}

// decoderLayer is the saved inventory of one pre-norm transformer layer
// (MODEL.md §4.3.1 HF bf16 flash, §4.3.2 eager, §4.3.3 AMP, §4.3.5 frozen,
// §4.3.4 fused, §8 MoE; DeepSeek MLA per its projections):
//
//	norms: fp32 input 4h each (+ normalised and output when training)
//	attention kernel: q, k, v, out in the compute dtype + fp32 logsumexp 4a
//	eager: + fp32 softmax 4a·s + its cast c·a·s per token, o_proj input
//	gated MLP: gate out, SiLU out, up out (+ down input when training)
//
// A set attention or MLP factor (actRegime.attnOver, mlpOver) replaces
// that block's part, norms included; the whole replacement is split over
// tensor-parallel ranks, as the estimator the factors come from splits it.
func decoderLayer(st *model.Stack, lt model.LayerType, r *actRegime) layerAct {
	var p layerSplit
	fillSplit(st, lt, r, &p)
	// Every term is a whole number of bytes (or a small dyadic fraction),
	// so the sums below are exact in any order.
	norms := p.attnNorm + p.mlpNorm + p.postNorms
	lin := p.attn.lin + p.mlp
	quad := p.attn.quad
	if r.attnOver > 0 || r.mlpOver > 0 {
		lin, norms = 0, 0
		if r.attnOver > 0 {
			lin += r.attnOver
		} else {
			lin += p.attn.lin
			norms += p.attnNorm + p.postNorms/2
		}
		if r.mlpOver > 0 {
			lin += r.mlpOver
		} else {
			lin += p.mlp
			norms += p.mlpNorm + p.postNorms/2
		}
	}
	// Tensor parallelism divides everything but the replicated norms and
	// their inputs; sequence parallelism divides those too.
	tp, ntp := 1.0, 1.0
	if r.tp > 1 {
		tp = r.tp // max(r.tp, 1); tp is a whole number of ranks
	}
	if r.sp {
		ntp = tp
	}
	return layerAct{lin: lin/tp + norms/ntp, quad: quad / tp, fixed: p.fixed / tp}
}

// denseFFN is the width of layer lt's dense feed-forward block: its own
// where the layers differ (Nemotron NAS), else the stack's.
func denseFFN(st *model.Stack, lt model.LayerType) int {
	if lt.FFN > 0 {
		return lt.FFN
	}
	return st.Intermediate
}

// fillSplit adds into p, a zero layerSplit, the parts of [decoderLayer]
// before tensor parallelism and overrides.
func fillSplit(st *model.Stack, lt model.LayerType, r *actRegime, p *layerSplit) {
	h := float64(st.Hidden)
	fl := &allGrad
	if r.noGradIn {
		f := r.flow(st)
		fl = &f
	}
	w := r.weights()
	// The attention norm reads the layer input; the MLP norm reads it too
	// with parallel residual, else the residual after attention.
	p.attnNorm = normSaves(st, r, h, !r.noGradIn, w.attnNorm, w.qkvIn)
	if st.ParallelBlock {
		p.mlpNorm = normSaves(st, r, h, !r.noGradIn, w.mlpNorm, w.mlpIn)
		// Attention and MLP read the same normalised input (GPT-NeoX,
		// parallel residual): two norms saving the same input tensor.
		if !r.noGradIn || (w.attnNorm && w.mlpNorm && (st.Norm == model.LayerNorm || r.fused)) {
			p.mlpNorm -= r.resid * h
		}
	} else {
		p.mlpNorm = normSaves(st, r, h, fl.mlpIn, w.mlpNorm, w.mlpIn)
	}
	if r.extraNorms > 0 {
		// Post-norms feed the residual add, not a Linear; each saves
		// only when its block's output requires grad.
		post := r.extraNorms * normAct(st, r, h, 0, false)
		switch {
		case fl.out && fl.mlpOut:
			p.postNorms = post
		case fl.out || fl.mlpOut:
			p.postNorms = post / 2
		}
	}
	q := float64(st.Heads) * float64(st.HeadDim)
	dense := float64(denseFFN(st, lt))
	f := dense
	if st.MoE != nil && (lt.MoE || f == 0) {
		// A trainable expert down projection reads one hidden state per
		// routed copy.
		f = float64(st.MoE.ExpertsPerToken * st.MoE.ExpertFFN)
	}
	if fl.attn {
		if lt.Attention != model.NoSelfAttention {
			p.attn = p.attn.add(selfAttnAct(st, r))
		}
		if lt.CrossAttention {
			p.attn = p.attn.add(crossAttnAct(st, r))
		}
		if w.oIn > 0 && !r.trainW && r.attn == trAttnEager && !r.selectiv {
			p.attn.lin += r.c * q // o_proj keeps its contiguous input copy
		}
	} else if w.oIn > 0 {
		// A trainable o_proj keeps its input; no kernel keeps it here.
		p.attn.lin += r.c * q
	}
	switch {
	case lt.NoFFN:
	case !fl.hid:
		// Nothing in the MLP requires grad before the down projection,
		// which keeps its input only when its weight trains.
		if w.downIn > 0 {
			p.mlp += r.c * f
		}
	case lt.MoE && st.MoE != nil:
		p.mlp += moeAct(st, r)
	default:
		p.mlp += mlpAct(st, r, dense)
	}
	if fl.hid && w.downIn > 0 && !r.trainW && !lt.NoFFN {
		p.mlp += r.c * f // a trainable down projection keeps its input
	}
	switch {
	case r.lora == nil:
	case loraFamily(r.variant):
		attn, mlp := loraAct(st, r)
		p.attn.lin += attn
		p.mlp += mlp
	default:
		attn, mlp, fixed := peftAct(st, r)
		p.attn.lin += attn
		p.mlp += mlp
		p.fixed += fixed
	}
	if r.bnbSaves {
		attn, mlp := bnbInputs(st, r)
		p.attn.lin += attn
		p.mlp += mlp
	}
	if lt.State != "" || lt.NoFFN || lt.Attention == model.NoSelfAttention && !lt.CrossAttention {
		// Recurrent mixers, and blocks without attention or FFN (Mamba
		// layers, Nemotron-H mixer-only layers, Nemotron NAS no-ops).
		hybridSplit(st, lt, r, fl, p)
	}
}

// bnbInputs is what bitsandbytes < 0.43.2 adds per layer (MODEL.md
// §15.3, bitsandbytes PR #1270), for the attention and the MLP block:
// MatMul4Bit stored its input A, so the attention-norm output, the
// MLP-norm output and the down-projection input stay alive
// (≈ (4 + 2f/h)·sbh in bf16), plus the o-proj input where it is a
// separate copy (litgpt). Inputs the adapters already keep are not
// counted twice.
func bnbInputs(st *model.Stack, r *actRegime) (attn, mlp float64) {
	h := float64(st.Hidden)
	f := float64(st.Intermediate)
	if st.MoE != nil && f == 0 {
		f = float64(st.MoE.ExpertFFN)
	}
	// MatMul4Bit keeps A only when an input needs grad (ctx.needs_input_grad):
	// in a layer whose input does not require grad, only the inputs
	// computed from an adapter's output.
	fl := r.flow(st)
	inAttn, inO, inMLP, inDown := fl.attnIn, fl.attn, fl.mlp, fl.hid
	if inAttn {
		attn = r.c * h
	}
	if r.sepOut && inO {
		attn += r.c * float64(st.Heads) * float64(st.HeadDim)
	}
	if inMLP {
		mlp += r.c * h
	}
	if inDown {
		mlp += r.c * f
	}
	if g := r.lora; g != nil && loraFamily(r.variant) && r.dropout == 0 && r.adapterB == r.c && !r.amp {
		// The adapters' shared inputs (counted by loraAct) are these tensors.
		if g.attnIn+g.qkvIn > 0 && inAttn {
			attn -= r.c * h
		}
		if g.mlpIn > 0 && inMLP {
			mlp -= r.c * h
		}
		if g.downIn > 0 && inDown {
			mlp -= r.c * f
		}
	}
	return attn, mlp
}

// selfAttnAct is what the attention block saves besides its input norm.
func selfAttnAct(st *model.Stack, r *actRegime) layerAct {
	if st.MLA != nil {
		return mlaAct(st, r)
	}
	heads := float64(st.Heads)
	q := heads * float64(st.HeadDim)
	kv := float64(st.KVHeads) * float64(st.HeadDim)
	kvSaved := kv
	if r.gqaWide {
		kvSaved = q
	}
	var a layerAct
	a.lin = r.c * (q + 2*kvSaved) // q (after RoPE), k, v
	if r.vView {
		a.lin += r.c * (q + kv) // the q and k parts of the qkv storage v views
	}
	if st.QKNorm {
		// q_norm / k_norm: fp32 copies of q and k (+ normalised when training).
		a.lin += 4 * (q + kv)
		if r.trainW {
			a.lin += r.c * (q + kv)
		}
	}
	switch {
	case r.attn == trAttnEager && !r.selectiv:
		// softmax(dtype=float32) output + its cast for the PV matmul
		// (MODEL.md §4.3.2); fp32 training keeps one fp32 tensor.
		a.quad = 4 * heads
		if r.c < 4 {
			a.quad += r.c * heads
		}
		if r.trainW {
			a.lin += r.c * q // transpose(1,2).contiguous() copy saved by o_proj
		}
	default:
		a.lin += r.c*q + 4*heads // kernel output (= o_proj input) + fp32 logsumexp
	}
	return a
}

// titanOpSaved is what torchtitan's op-level selective activation
// checkpointing keeps of one dense layer per token, besides the layer's
// input that the checkpoint itself holds (torchtitan
// torchtrain/parallelisms/parallelize_llama.py at 83c879f,
// no_recompute_list and _get_custom_policy; later
// torchtitan/models/llama3/infra/parallelize.py _save_list):
//
//   - aten.mm outputs, except every second one: the policy counts the mm
//     calls of each checkpointed block and saves the 1st, 3rd, 5th...
//     The layer's Linears run in the order q, k, v, o, then w1 (gate),
//     w3 (up), w2 (down), or fc1, fc2 for a plain MLP; a Linear with a
//     bias dispatches to addmm, which the policy neither counts nor
//     saves. For Llama that keeps q (heads·head_dim), v (kv width), the
//     gate output (FFN width) and the down output (h).
//   - the SDPA flash/efficient kernel's outputs: the attention output
//     (heads·head_dim) and its fp32 logsumexp per head. Eager attention
//     runs bmm and softmax, which are recomputed.
//   - c10d_functional.reduce_scatter_tensor outputs: with sequence
//     parallelism, those of the two row-parallel Linears (o and down).
//
// Compiled (compiled true), AOTAutograd's partitioner saves a cut
// between the forward inputs and what backward uses
// (torch/_functorch/partitioners.py min_cut_rematerialization_partition);
// the policy's tags ban recomputing a node but do not save what backward
// never reads. The outputs of the row-parallel Linears (o and down) and
// their reduce-scatters feed only the residual adds, whose backward
// needs no input, so compiled they are not kept.
//
// Everything else in the block is recomputed in backward. Under tensor
// parallelism the column-parallel outputs and the attention kernel are
// split over the ranks; a row-parallel mm output is the full hidden width
// (partial sums, reduced afterwards). The stored tensors are popped from
// the policy's cache as the block recomputes (torch/utils/checkpoint.py
// _CachedTorchDispatchMode.pop_from_storage).
func titanOpSaved(st *model.Stack, r *actRegime, compiled bool) float64 {
	h := float64(st.Hidden)
	heads := float64(st.Heads)
	q := heads * float64(st.HeadDim)
	kv := float64(st.KVHeads) * float64(st.HeadDim)
	f := float64(st.Intermediate)
	tp := max(r.tp, 1)
	type linear struct {
		width float64 // output width on a rank
		bias  bool
		row   bool // row-parallel: its output feeds the residual add
	}
	lins := [7]linear{{q / tp, st.AttnBias, false}, {kv / tp, st.AttnBias, false}, {kv / tp, st.AttnBias, false}, {h, st.OutBias, true}}
	n := 4
	if st.MLP == model.PlainMLP {
		lins[4], lins[5] = linear{f / tp, st.MLPBias, false}, linear{h, st.MLPBias, true}
		n = 6
	} else {
		lins[4], lins[5], lins[6] = linear{f / tp, st.MLPBias, false}, linear{f / tp, st.MLPBias, false}, linear{h, st.MLPBias, true}
		n = 7
	}
	saved, mm := 0.0, 0
	for _, l := range lins[:n] {
		if l.bias {
			continue // addmm: not in the policy's list
		}
		mm++
		if mm%2 == 1 && !(compiled && l.row) {
			saved += r.c * l.width
		}
	}
	if r.attn != trAttnEager {
		saved += (r.c*q + 4*heads) / tp
	}
	if r.sp && tp > 1 && !compiled {
		saved += 2 * r.c * h / tp
	}
	return saved
}

// crossAttnAct is an encoder-decoder cross-attention block: its norm, q,
// output and logsumexp per decoder token, plus k and v of the encoder
// memory (taken as as many tokens as the decoder's).
func crossAttnAct(st *model.Stack, r *actRegime) layerAct {
	h := float64(st.Hidden)
	q := float64(st.Heads) * float64(st.HeadDim)
	kv := float64(st.KVHeads) * float64(st.HeadDim)
	a := layerAct{lin: normAct(st, r, h, 1, r.trainW) + r.c*(2*q+2*kv) + 4*float64(st.Heads)}
	if r.attn == trAttnEager && !r.selectiv {
		a.lin -= 4 * float64(st.Heads)
		a.quad = (4 + r.c) * float64(st.Heads)
	}
	return a
}

// mlaAct is DeepSeek multi-head latent attention: latent norms on the
// q/kv compressions, then q, k (nope+rope), v and out per head saved by
// the kernel (HF pads v to the qk head dim for flash kernels).
func mlaAct(st *model.Stack, r *actRegime) layerAct {
	m := st.MLA
	heads := float64(st.Heads)
	dqk := float64(m.QKNopeDim + m.QKRopeDim)
	dv := float64(m.VHeadDim)
	if r.attn != trAttnEager {
		dv = max(dv, dqk)
	}
	var a layerAct
	if m.QLoRARank > 0 {
		a.lin += normAct(st, r, float64(m.QLoRARank), 1, r.trainW)
	}
	a.lin += normAct(st, r, float64(m.KVLoRARank), 1, r.trainW)
	a.lin += r.c * heads * (2*dqk + dv)
	if r.attn == trAttnEager && !r.selectiv {
		a.quad = (4 + r.c) * heads
		a.lin += r.c * heads * float64(m.VHeadDim)
	} else {
		a.lin += r.c*heads*dv + 4*heads
	}
	return a
}

// mlpAct is a dense FFN of width f (MODEL.md §4.3.7): unfused gated
// 3 tensors of width f (+ the down-projection input when training), fused
// SwiGLU 2 (+1), plain GeLU MLP 1 (+1).
func mlpAct(st *model.Stack, r *actRegime, f float64) float64 {
	n := 0.0
	switch {
	case st.MLP == model.PlainMLP:
		n = 1
	case r.fused:
		n = 2
	default:
		n = 3
	}
	if r.trainW {
		n++
	}
	return n * r.c * f
}

// moeAct is a mixture-of-experts FFN (MODEL.md §8): fp32 router
// probabilities and logits, and per routed token copy the expert input,
// the expert MLP and the weighted expert output; shared experts as a
// dense MLP.
func moeAct(st *model.Stack, r *actRegime) float64 {
	moe := st.MoE
	h := float64(st.Hidden)
	e, k := float64(moe.Experts), float64(moe.ExpertsPerToken)
	out := (4 + r.c) * e // softmax(dtype=float) output + router logits
	perCopy := mlpAct(st, r, float64(moe.ExpertFFN))
	if r.trainW {
		perCopy += 2 * r.c * h // gathered expert input + output scaled by the routing weight
	}
	out += k * perCopy
	if moe.SharedFFN > 0 {
		out += mlpAct(st, r, float64(moe.SharedFFN))
	} else if moe.SharedExperts > 0 {
		out += mlpAct(st, r, float64(moe.SharedExperts*moe.ExpertFFN))
	}
	return out
}

// loraAct is what the adapters of one layer add to the frozen inventory
// (MODEL.md §4.3.6, PEFT lora/layer.py Linear.forward), for the adapters
// of the attention block (q/k/v/o) and of the MLP: each adapted module
// saves the input of lora_A (shared with the base input when the adapter
// dtype equals the compute dtype and dropout is 0, else its own cast
// and/or dropout output + 1-byte mask), and the r-wide lora_A output.
// LoRA-FA trains only B, so lora_A's input is not saved (arXiv:2308.03303).
// DoRA keeps the base output and an fp32 LoRA output per module (§15.13).
//
// litgpt adapts q, k and v with one LoRAQKVLinear on its fused qkv Linear
// whatever the checkpoint's layout (lit_gpt/lora.py, litgpt/lora.py):
// one dropout on the shared input, and, unless q, k and v are all
// adapted, zero_pad scatters lora_B's output into the qkv width with
// index_copy, whose backward node keeps its source: the derivative calls
// expand_as(source) (pytorch/pytorch tools/autograd/derivatives.yaml,
// index_copy), so the generated IndexCopyBackward0 holds a SavedVariable
// source_, and lora_B's output stays alive: Σ adapted widths in the
// adapter dtype per token.
func loraAct(st *model.Stack, r *actRegime) (attn, mlp float64) {
	g := r.lora
	h := float64(st.Hidden)
	q := float64(st.Heads) * float64(st.HeadDim)
	kv := float64(st.KVHeads) * float64(st.HeadDim)
	f := float64(st.Intermediate)
	if st.MoE != nil && st.Intermediate == 0 {
		f = float64(st.MoE.ExpertFFN)
	}
	// Inputs of the q/k/v adapters: one per adapted module, one for a
	// fused qkv module, one for litgpt's LoRAQKVLinear.
	qkvIn := float64(g.attnIn + g.qkvIn)
	if r.litgptQKV && qkvIn > 0 {
		qkvIn = 1
		// zero_pad's saved source, when some of q, k, v are not adapted.
		if w := g.attnOut - float64(g.oIn)*h; w > 0 && w < q+2*kv {
			attn += r.adapterB * w
		}
	}
	// lora_A outputs saved by lora_B.
	attn += g.attnRank * r.adapterB
	mlp = (g.rankOut - g.attnRank) * r.adapterB
	if !r.loraFA {
		own := r.adapterB != r.c || r.amp // the adapter makes its own cast of x
		per, mask := 0.0, 0.0
		switch {
		case r.dropout > 0 && r.amp:
			per, mask = 2, 1 // autocast bf16 copy for lora_A + dropout mask
		case r.dropout > 0:
			per, mask = r.adapterB, 1 // dropout output in the adapter dtype + mask
		case r.amp:
			per = 2
		case own:
			per = r.adapterB
		}
		// Dropout keeps its mask only when its input requires grad; lora_A
		// keeps its input either way (its weight trains).
		fl := r.flow(st)
		maskOf := func(grad bool) float64 {
			if grad {
				return mask
			}
			return 0
		}
		if per > 0 {
			attn += (per+maskOf(fl.attnIn))*qkvIn*h + (per+maskOf(fl.attn))*float64(g.oIn)*q
			mlp += (per+maskOf(fl.mlp))*float64(g.mlpIn)*h + (per+maskOf(fl.hid))*float64(g.downIn)*f
		} else {
			// Shared inputs: the frozen inventory lacks the norm outputs and
			// the down-projection input; the attention output is kept by the
			// kernel when q, k or v require grad.
			if g.attnIn+g.qkvIn > 0 {
				attn += r.c * h
			}
			if g.oIn > 0 && !fl.attn {
				attn += r.c * q
			}
			if g.mlpIn > 0 {
				mlp += r.c * h
			}
			if g.downIn > 0 {
				mlp += r.c * f
			}
		}
	}
	if r.dora {
		attn += (2 + 4) * g.attnOut
		mlp += (2 + 4) * (g.outSum - g.attnOut)
	}
	return attn, mlp
}

// encoderPostLN is the BERT-style post-LN encoder layer with dropout 0.1
// (MODEL.md §15.12): fp32 34h + 8f + 9a·s bytes per token; under fp16 AMP
// 26h + 4f + 7a·s (fp32 LayerNorm inputs and scores); pure 16-bit half of
// the fp32 tensors. Flash/SDPA replaces the s² terms by the kernel's
// logsumexp. Set attention or MLP factors replace the blocks' parts.
func encoderPostLN(st *model.Stack, r *actRegime) layerAct {
	attn, mlp := splitPostLN(st, r)
	if r.attnOver > 0 {
		attn.lin = r.attnOver
	}
	if r.mlpOver > 0 {
		mlp = r.mlpOver
	}
	return layerAct{lin: attn.lin + mlp, quad: attn.quad}
}

// splitPostLN splits the post-LN encoder layer into its attention block
// and its feed-forward block. Per token, in fp32: attention saves the
// layer input shared by q/k/v 4h, q, k, v 12h, the context (dense input)
// 4h, the output dropout mask h and the LayerNorm input 4h (25h), plus
// the probabilities, their dropout mask and output 9a·s; the
// feed-forward block saves its input 4h, the intermediate output and the
// GeLU output 8f, a dropout mask h and the LayerNorm input 4h (9h + 8f).
// Under AMP each Linear keeps its own bf16 cast of its input: attention
// 3·2h + 6h + 2h + h + 4h = 19h + 7a·s, feed-forward 2h + 4f + h + 4h.
// Pure 16-bit halves the fp32 parts.
func splitPostLN(st *model.Stack, r *actRegime) (attn layerAct, mlp float64) {
	h, f, heads := float64(st.Hidden), float64(st.Intermediate), float64(st.Heads)
	switch {
	case r.amp:
		attn, mlp = layerAct{lin: 19 * h, quad: 7 * heads}, 7*h+4*f
	case r.c >= 4:
		attn, mlp = layerAct{lin: 25 * h, quad: 9 * heads}, 9*h+8*f
	default:
		attn, mlp = layerAct{lin: 12.5 * h, quad: 5 * heads}, 4.5*h+4*f
	}
	if r.attn != trAttnEager || r.selectiv {
		attn.quad = 0
		attn.lin += 4 * heads
	}
	return attn, mlp
}

// layerBackwardTransient is the extra memory while one layer runs its
// backward (MODEL.md §4.4, §5.1): FlashAttention's fp32 dq accumulator and
// dq/dk/dv (expanded to query width for GQA), gradients of the MLP's
// f-wide tensors and of the residual stream; eager attention adds the
// gradient of the probabilities and the fp32 gradient of the scores.
func layerBackwardTransient(st *model.Stack, r *actRegime) layerAct {
	h := float64(st.Hidden)
	heads := float64(st.Heads)
	q := heads * float64(st.HeadDim)
	kv := float64(st.KVHeads) * float64(st.HeadDim)
	f := float64(st.Intermediate)
	if st.MoE != nil {
		f = max(f, float64(st.MoE.ExpertFFN*st.MoE.ExpertsPerToken))
	}
	a := layerAct{lin: r.c * (2*f + 2*h)}
	switch {
	case r.attn == trAttnEager:
		a.lin += r.c * (q + 2*q)
		a.quad = (r.c + 4) * heads
	default:
		a.lin += 4*q + r.c*(q+2*kv)
		if kv < q {
			a.lin += 2 * r.c * q // dk/dv expanded before the group sum
		}
	}
	return a
}
