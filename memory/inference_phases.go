package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/units"
)

// textShape is the forward of the decoder layers this stage runs.
func (c phaseContext) textShape() actShape {
	in := c.in
	return actShape{st: &c.m.Text, tp: in.tp, ep: in.ep, attn: in.attn, act: in.act.BytesPerElement(), lo: c.r.lo, hi: c.r.hi}
}

// prefill is the first forward pass: the prompt (with its image tokens)
// through every layer, its KV cache written, then the logits.
func (c phaseContext) prefill() phaseParts {
	s := c.in.prefillTokens()
	act := c.forwardActivations(phasePrefill, s, s)
	return phaseParts{name: phasePrefill, parts: []Component{c.weightsRow(), c.kvRow(phasePrefill, s), act}}
}

// decode is the last generation step: the whole cache is filled, one new
// token per sequence attends to it (or, without a cache, the whole
// sequence is recomputed), and the cache grows by one position.
func (c phaseContext) decode() phaseParts {
	in := c.in
	t := in.tokens()
	parts := []Component{c.weightsRow(), c.kvRow(phaseDecode, t)}
	if in.noKV {
		parts = append(parts, c.forwardActivations(phaseDecode, t, t))
		return phaseParts{name: phaseDecode, parts: parts}
	}
	parts = append(parts, c.forwardActivations(phaseDecode, 1, t))
	if g := c.cacheGrowth(t); g.Bytes > 0 {
		parts = append(parts, g)
	}
	return phaseParts{name: phaseDecode, parts: parts}
}

// cacheGrowth is the transient copy made when the cache grows by one
// token: with the legacy tuple cache the whole previous cache stays alive
// while the new one is built (MODEL.md §15.2: decode peak ≈ W + 2·KV);
// HF's DynamicCache concatenates one layer at a time; vLLM writes into
// preallocated pages.
func (c phaseContext) cacheGrowth(tokens int64) Component {
	in := c.in
	switch {
	case in.engine != engineHF:
		return Component{}
	case in.legacyCache:
		b := units.Bytes(units.MulInt(int64(in.kvBytesPerSeq(c.kv, tokens)), in.batch))
		return Component{Name: "kv_cache_copy", Bytes: b, Level: "allocated", Phase: phaseDecode,
			Formula: "second copy of the whole cache while torch.cat rebuilds the tuple", Source: srcLegacyKV}
	}
	per := units.MulInt(c.kv.maxLayer, tokens)
	b := units.Bytes(units.MulInt(per, in.batch))
	return Component{Name: "kv_cache_growth", Bytes: b, Level: "allocated", Phase: phaseDecode,
		Formula: fmt.Sprintf("one layer's K/V copied by torch.cat: batch %d × %d tokens × %d B", in.batch, tokens, c.kv.maxLayer),
		Source:  "MODEL.md §7.2 (DynamicCache grows by concatenation)"}
}

// forwardActivations is the activation peak of a forward of s new tokens
// per sequence attending to skv tokens: the larger of one layer's
// transient (plus a dequantized weight copy for 4-bit kernels), the
// logits with the final hidden states, and the encoder pass of an
// encoder-decoder model.
func (c phaseContext) forwardActivations(phase string, s, skv int64) Component {
	in := c.in
	layer := c.textShape().layerTransient(in.batch, s, skv)
	dq, dqF := c.dequant(units.MulInt(in.batch, s))
	best, f := units.Add(layer.bytes, dq), "layer: "+layer.formula+dqF
	if c.last {
		if lg, lgF := c.logits(s, skv); lg > best {
			best, f = lg, lgF
		}
	}
	if c.first && in.encDec && phase == phasePrefill && c.m.Encoder != nil {
		enc := actShape{st: c.m.Encoder, tp: in.tp, attn: in.attn, act: in.act.BytesPerElement(), lo: 0, hi: c.m.Encoder.Layers}
		t := enc.layerTransient(in.batch, in.prompt, in.prompt)
		out := units.FromFloat(float64(units.MulInt(in.batch, in.prompt)) * float64(c.m.Encoder.Hidden) * in.act.BytesPerElement())
		if e := units.Add(t.bytes, out); e > best {
			best, f = e, "encoder layer: "+t.formula+" + encoder output"
		}
	}
	return Component{Name: "activations", Bytes: best, Level: "allocated", Phase: phase, Formula: f, Source: srcAct}
}

// logits is the output projection's result with the final hidden states
// of the step: every position's logits before transformers 4.45 (and when
// nothing is generated, as a plain forward returns them all), else only
// the last position's, upcast to fp32 by generate.
func (c phaseContext) logits(s, skv int64) (units.Bytes, string) {
	in := c.in
	st := &c.m.Text
	if st.Vocab <= 0 {
		return 0, ""
	}
	rows, upcast := in.batch, true
	switch {
	case in.fullLogits:
		rows = units.MulInt(in.batch, s)
	case in.gen == 0:
		rows, upcast = units.MulInt(in.batch, s), false
	}
	if in.noKV && in.fullLogits {
		rows = units.MulInt(in.batch, skv)
	}
	act := in.act.BytesPerElement()
	lg := logitsBytes(rows, st.Vocab, act, upcast)
	hidden := units.FromFloat(float64(units.MulInt(in.batch, s)) * float64(st.Hidden) * act)
	f := fmt.Sprintf("logits %d rows × vocab %d × (%gB", rows, st.Vocab, act)
	if upcast {
		f += " + 4B fp32 upcast"
	}
	f += fmt.Sprintf(") + final hidden states = %s", units.FormatIEC(units.Add(lg, hidden)))
	return units.Add(lg, hidden), f
}

// dequant is the weight copy a quantized Linear materialises for a
// batched matmul in HF: bitsandbytes 4-bit dequantizes to the storage
// dtype and casts to the compute dtype (bitsandbytes-foundation/
// bitsandbytes:bitsandbytes/autograd/_functions.py MatMul4Bit; single-token
// steps use the gemv kernel and skip it), GPTQ/AWQ kernels dequantize to
// fp16 for large batches (MODEL.md §6.2, §15.3).
func (c phaseContext) dequant(tokens int64) (units.Bytes, string) {
	in := c.in
	if in.engine != engineHF || c.w.maxLinear == 0 || tokens <= 1 {
		return 0, ""
	}
	var per float64
	switch in.plan.quant.Layout {
	case LayoutBnb4:
		per = in.plan.rest.BytesPerElement()
		if in.bnbCompute.Name != in.plan.rest.Name {
			per += in.bnbCompute.BytesPerElement()
		}
	case LayoutGPTQ, LayoutAWQ:
		per = 2
	default:
		return 0, ""
	}
	b := units.FromFloat(float64(c.w.maxLinear) * per)
	return b, fmt.Sprintf(" + dequantized copy of the largest quantized Linear %d×%d × %gB = %s",
		c.w.maxLinearOut, c.w.maxLinearIn, per, units.FormatIEC(b))
}
