package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// Attention implementations for inference.
const (
	inferEager = "eager"
	inferSDPA  = "sdpa"
	inferFlash = "flash"
)

// fp32Bytes is the width of the fp32 softmax and upcast logits.
const fp32Bytes = 4

// actShape is what a forward pass over one stack computes per GPU.
type actShape struct {
	st   *model.Stack
	tp   int
	ep   int
	attn string
	act  float64 // bytes per activation element (the compute dtype)
	// layers is the range of layers the GPU runs (its pipeline stage).
	lo, hi int
	// quiet computes the bytes only, leaving the formulas empty.
	quiet bool
	// hf is true for transformers' forward (inference), false for vLLM's
	// kernels (serving), where the implementations of a block differ.
	hf bool
}

// transient is one activation term with the formula that produced it.
type transient struct {
	bytes   units.Bytes
	formula string
}

// layerTransient is the largest set of intermediates alive at once inside
// one layer when n tokens of b sequences (b·s = n) attend to skv cached
// tokens, with no autograd (MODEL.md §7.4): the residual stream and the
// normed input (2·n·h), plus the larger of the attention block and the
// feed-forward block.
func (a actShape) layerTransient(b, s, skv int64) transient {
	n := units.MulInt(b, s)
	st := a.st
	resid := 2 * float64(n) * float64(st.Hidden) * a.act
	attn, attnF := a.attention(b, s, skv)
	if st.State != nil {
		attn, attnF = a.hybridMixer(n, attn, attnF)
	}
	ffn, ffnF := a.feedForward(n)
	peak, which := attn, attnF
	if ffn > attn {
		peak, which = ffn, ffnF
	}
	if a.quiet {
		return transient{bytes: units.FromFloat(resid + peak)}
	}
	return transient{
		bytes:   units.FromFloat(resid + peak),
		formula: fmt.Sprintf("residual + normed input 2·N·h·%gB (N = %d tokens) + max(attention, feed-forward) = %s", a.act, n, which),
	}
}

// attention is the attention block's intermediates: q, k, v and the
// output for a fused kernel (FlashAttention, SDPA, vLLM paged kernels:
// no s² tensor, arXiv:2205.14135), plus, for eager attention, the scores,
// their fp32 softmax and the cast-back probabilities, 8·a·s·s_kv bytes per
// sequence in bf16 (MODEL.md §7.4). MLA decompresses per-head K and V.
func (a actShape) attention(b, s, skv int64) (float64, string) {
	st := a.st
	tp := float64(max(a.tp, 1))
	n := float64(units.MulInt(b, s))
	heads := float64(st.Heads) / tp
	var width float64
	if mla := st.MLA; mla != nil {
		width = heads * float64(2*(mla.QKNopeDim+mla.QKRopeDim)+2*mla.VHeadDim)
	} else {
		kv := st.KVHeads
		if kv <= 0 {
			kv = st.Heads
		}
		d := float64(headDim(st))
		width = 2*heads*d + 2*max(float64(kv)/tp, 1)*d
	}
	bytes := n * width * a.act
	var f string
	if !a.quiet {
		f = fmt.Sprintf("attention q,k,v,out %s", units.FormatIEC(units.FromFloat(bytes)))
	}
	if idx, idxF := a.indexerScores(b, s, skv); idx > 0 {
		bytes += idx
		if !a.quiet {
			f += idxF
		}
	}
	if a.attn == inferEager {
		perElem := 2*a.act + fp32Bytes
		scores := float64(b) * heads * float64(s) * float64(skv) * perElem
		bytes += scores
		if a.quiet {
			return bytes, ""
		}
		f += fmt.Sprintf(" + eager scores b·a·s·s_kv·(%g+4+%g)B = %s", a.act, a.act, units.FormatIEC(units.FromFloat(scores)))
	}
	return bytes, f
}

// indexerScores is the transient of transformers' DSA lightning indexer
// (DeepSeek-V3.2, GLM-5), which scores every query against every cached
// key with all its heads in fp32 before picking the top-k:
// scores = relu(q.float() @ k.float()) holds [b, s, index_n_heads, s_kv]
// fp32 twice while relu runs, then index_scores [b, s, s_kv] fp32
// (huggingface/transformers@01f8fa55d98fbd77fb6461c47ae14fc6206f2f87:
// src/transformers/models/deepseek_v32/modeling_deepseek_v32.py,
// DeepseekV32Indexer.forward). vLLM's indexer kernels score in fp8
// blocks and keep no such tensor; they are not counted here.
func (a actShape) indexerScores(b, s, skv int64) (float64, string) {
	mla := a.st.MLA
	if !a.hf || mla == nil || mla.IndexerHeads <= 0 {
		return 0, ""
	}
	rows := float64(b) * float64(s) * float64(skv)
	bytes := rows * (2*float64(mla.IndexerHeads) + 1) * fp32Bytes
	return bytes, fmt.Sprintf(" + DSA indexer scores b·s·s_kv·(2·%d heads + 1)·4B = %s", mla.IndexerHeads, units.FormatIEC(units.FromFloat(bytes)))
}

// feedForward is the feed-forward block's intermediates for n tokens,
// the largest over the layer kinds the GPU runs:
//   - gated MLP: act(gate), up and their product, 3·n·f (HF
//     down(act(gate(x))·up(x)); vLLM gate_up [n, 2f] + SiluAndMul [n, f]);
//   - plain MLP: fc1 output and activation output, 2·n·f;
//   - MoE: vLLM fused_moe's intermediate caches [n, k, 2f], [n·k, f] and
//     [n, k, h], n·k·(3f + h) (vllm-project/vllm:vllm/model_executor/
//     layers/fused_moe/fused_moe.py), or the shared experts if larger.
func (a actShape) feedForward(n int64) (float64, string) {
	st := a.st
	tp := float64(max(a.tp, 1))
	hasDense, moe := false, false
	dense := 0 // the widest dense FFN the GPU runs (per layer in Nemotron NAS models)
	for i := a.lo; i < a.hi && i < st.Layers; i++ {
		switch lt := layerType(st, i); {
		case lt.NoFFN:
		case lt.MoE && st.MoE != nil:
			moe = true
		default:
			hasDense = true
			dense = max(dense, denseFFN(st, lt))
		}
	}
	if a.hi <= a.lo {
		hasDense, dense = true, st.Intermediate
	}
	var best float64
	f := "feed-forward 0"
	if hasDense && dense > 0 {
		width, name := 2.0, "plain MLP 2·N·f"
		if st.MLP == model.GatedMLP {
			width, name = 3, "gated MLP 3·N·f"
		}
		best = width * float64(n) * float64(dense) / tp * a.act
		f = ""
		if !a.quiet {
			f = fmt.Sprintf("%s·%gB (f/tp = %g) = %s", name, a.act, float64(dense)/tp, units.FormatIEC(units.FromFloat(best)))
		}
	}
	if moe {
		e := st.MoE
		ef := float64(e.ExpertFFN)
		if a.ep <= 1 {
			ef /= tp
		}
		routed := float64(n) * float64(e.ExpertsPerToken) * (3*ef + float64(st.Hidden)) * a.act
		if a.ep > 1 {
			// With expert parallelism each rank runs its share of the
			// routed token copies (balanced routing; MODEL.md §8 notes
			// that dropless routing can be imbalanced).
			routed /= float64(a.ep)
		}
		shared := 3 * float64(n) * float64(e.SharedFFN) / tp * a.act
		if m := max(routed, shared); m > best {
			best = m
			if a.quiet {
				return best, ""
			}
			f = fmt.Sprintf("MoE fused_moe caches N·k·(3f_moe + h)·%gB (k = %d, f_moe = %g) = %s", a.act, e.ExpertsPerToken, ef, units.FormatIEC(units.FromFloat(m)))
		}
	}
	return best, f
}

// hybridMixer is the sequence mixer's peak over the layers of a hybrid
// stack the GPU runs: the attention block (attn) when some layer attends,
// and the recurrent mixer's intermediates when some layer has one. A
// recurrent mixer holds, for n tokens, its input projection's output, the
// causal conv1d's output over conv_dim channels and the scan's output
// before the output projection, in the compute dtype and split over tp
// ranks: Mamba-2 in_proj (d_inner + conv_dim + heads), DeltaNet's q, k, v,
// z, b and a (conv_dim + value + 2·value heads), lightning attention's qkv
// and output gate (4·d_inner), Mamba's x and z (2·d_inner) and x_proj
// (2·d_state) (the projections of model.RecurrentState's mixers; their
// fused kernels, mamba_ssm's mamba_chunk_scan_combined and fla's
// chunk_gated_delta_rule, work chunk by chunk and add no n² term).
func (a actShape) hybridMixer(n int64, attn float64, attnF string) (float64, string) {
	st := a.st
	hasAttn, hasState := false, false
	for i := a.lo; i < a.hi && i < st.Layers; i++ {
		lt := layerType(st, i)
		hasAttn = hasAttn || lt.Attention != model.NoSelfAttention || lt.CrossAttention
		hasState = hasState || lt.State != ""
	}
	best, f := 0.0, "no sequence mixer"
	if hasAttn {
		best, f = attn, attnF
	}
	if !hasState {
		return best, f
	}
	r := st.State
	inner, conv := float64(r.Heads*r.HeadDim), float64(r.ConvDim())
	var proj float64
	switch r.Kind {
	case model.Mamba2:
		proj = inner + conv + float64(r.Heads)
	case model.GatedDeltaNet:
		proj = conv + inner + 2*float64(r.Heads)
	case model.LightningAttention:
		proj = 4 * inner
	default: // Mamba-1
		proj = 2*inner + 2*float64(r.StateDim)
	}
	rec := float64(n) * (proj + conv + inner) / float64(max(a.tp, 1)) * a.act
	if rec > best {
		best = rec
		if !a.quiet {
			f = fmt.Sprintf("%s mixer: in_proj %g + conv %g + scan output %g per token/tp × %gB = %s",
				r.Kind, proj, conv, inner, a.act, units.FormatIEC(units.FromFloat(rec)))
		}
	}
	return best, f
}

// logitsBytes is the logits of rows positions over the vocabulary (split
// over tp ranks before the gather) in the compute dtype plus their fp32
// upcast when upcast is set: HF generate takes
// outputs.logits[:, -1, :].float() (huggingface/transformers:
// src/transformers/generation/utils.py), and before transformers 4.45
// Llama-style models upcast the logits of every position.
func logitsBytes(rows int64, vocab int, act float64, upcast bool) units.Bytes {
	per := act
	if upcast {
		per += fp32Bytes
	}
	return units.FromFloat(float64(rows) * float64(vocab) * per)
}

// visionTransient is the vision tower's forward over the images of a
// batch: each tile of an image is one sequence of patch tokens through a
// pre-LN ViT (MODEL.md §9: use the §4/§7.4 shapes with s = patches per
// tile and b = images × tiles), plus the features handed to the language
// model. img is the shape of one image (model.Vision.Image).
func visionTransient(v *model.Vision, img model.ImageShape, images int64, attn string, act float64, textHidden int, llmTokens int64) transient {
	seqs, perSeq := images*int64(max(img.Tiles, 1)), int64(img.Patches)
	if perSeq <= 0 {
		perSeq = int64(max(v.TokensPerImage, 1))
	}
	shape := actShape{st: &v.Stack, tp: 1, attn: attn, act: act, lo: 0, hi: v.Layers}
	layer := shape.layerTransient(seqs, perSeq, perSeq)
	features := units.FromFloat(float64(llmTokens) * float64(textHidden) * act)
	seqText := fmt.Sprintf("%d images × %d patches", images, perSeq)
	if img.Tiles > 1 {
		seqText = fmt.Sprintf("%d images × %d tiles of %d patches", images, img.Tiles, perSeq)
	}
	return transient{
		bytes: units.Add(layer.bytes, features),
		formula: fmt.Sprintf("one vision layer over %s: %s; + image features %d tokens × h %d × %gB",
			seqText, layer.formula, llmTokens, textHidden, act),
	}
}
