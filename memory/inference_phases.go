package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/units"
)

// textShape is the forward of the decoder layers this stage runs.
func (c phaseContext) textShape() actShape {
	in := c.in
	return actShape{st: &c.m.Text, tp: in.tp, ep: in.ep, attn: in.attn, act: in.act.BytesPerElement(), lo: c.r.lo, hi: c.r.hi, quiet: in.quiet, hf: true}
}

// prefill is the first forward pass: the prompt (with its image tokens)
// through every layer, its KV cache written, then the logits.
func (c phaseContext) prefill() phaseParts {
	s := c.in.prefillTokens()
	act := c.forwardActivations(phasePrefill, s, s)
	parts := append(c.persistent(), c.kvRow(phasePrefill, s))
	if st, ok := c.stateRow(phasePrefill); ok {
		parts = append(parts, st)
	}
	return phaseParts{name: phasePrefill, parts: append(parts, act)}
}

// decode is the last generation step (there is one when at least two
// tokens are generated): the cache holds every token but the last
// generated one, the newest token per sequence attends to it (or, without
// a cache, the whole sequence is recomputed), and the cache grows by one
// position.
func (c phaseContext) decode() phaseParts {
	in := c.in
	t := in.cachedTokens()
	parts := append(c.persistent(), c.kvRow(phaseDecode, t))
	if st, ok := c.stateRow(phaseDecode); ok {
		parts = append(parts, st)
	}
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
	if in.quiet {
		return Component{Name: "kv_cache_growth", Bytes: b, Level: "allocated", Phase: phaseDecode}
	}
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
	best, f := units.Add(layer.bytes, dq), ""
	if !in.quiet {
		f = "layer: " + layer.formula + dqF
	}
	if c.last {
		if lg, lgF := c.logits(s, skv); lg > best {
			best, f = lg, lgF
		}
	}
	if c.first && in.encDec && phase == phasePrefill && c.m.Encoder != nil {
		enc := actShape{st: c.m.Encoder, tp: in.tp, attn: in.attn, act: in.act.BytesPerElement(), lo: 0, hi: c.m.Encoder.Layers, quiet: in.quiet}
		t := enc.layerTransient(in.batch, in.prompt, in.prompt)
		out := units.FromFloat(float64(units.MulInt(in.batch, in.prompt)) * float64(c.m.Encoder.Hidden) * in.act.BytesPerElement())
		if e := units.Add(t.bytes, out); e > best {
			best, f = e, ""
			if !in.quiet {
				f = "encoder layer: " + t.formula + " + encoder output"
			}
		}
	}
	if in.quiet {
		return Component{Name: "activations", Bytes: best, Level: "allocated", Phase: phase}
	}
	return Component{Name: "activations", Bytes: best, Level: "allocated", Phase: phase, Formula: f, Source: srcAct}
}

// logits is the output projection's result with the final hidden states
// of the step: every position's logits before transformers 4.45 (and when
// nothing is generated, as a plain forward returns them all), else only
// the last position's, upcast to fp32 by generate. A model without an LM
// head (an embedding model) ends at its final hidden states.
func (c phaseContext) logits(s, skv int64) (units.Bytes, string) {
	in := c.in
	st := &c.m.Text
	if st.Vocab <= 0 {
		return 0, ""
	}
	if c.m.NoLMHead {
		hidden := units.FromFloat(float64(units.MulInt(in.batch, s)) * float64(st.Hidden) * in.act.BytesPerElement())
		if in.quiet {
			return hidden, ""
		}
		return hidden, fmt.Sprintf("no LM head (%s): final hidden states %d rows × %d = %s", c.m.Architecture, units.MulInt(in.batch, s), st.Hidden, units.FormatIEC(hidden))
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
	if in.quiet {
		return units.Add(lg, hidden), ""
	}
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
// steps use the gemv kernel and skip it), AWQ GEMM kernels dequantize to
// fp16 for large batches (MODEL.md §6.2, §15.3). GPTQ's exllama kernels
// dequantize into a preallocated buffer instead (see quantBuffers).
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
	case LayoutAWQ:
		per = 2
	default:
		return 0, ""
	}
	b := units.FromFloat(float64(c.w.maxLinear) * per)
	if in.quiet {
		return b, ""
	}
	return b, fmt.Sprintf(" + dequantized copy of the largest quantized Linear %d×%d × %gB = %s",
		c.w.maxLinearOut, c.w.maxLinearIn, per, units.FormatIEC(b))
}

// exllamaMaxInputLen is AutoGPTQ's default max_input_length of the exllama
// scratch state (AutoGPTQ/AutoGPTQ:auto_gptq/modeling/_utils.py
// autogptq_post_init, max_input_length=2048 unless set).
const exllamaMaxInputLen = 2048

// quantBuffers are the scratch buffers GPTQ's exllama kernels allocate
// once per device when the model is loaded in HF: temp_dq, one fp16 copy
// of the largest quantized weight (qweight.numel()·8 elements), and
// temp_state, max_input_length × max(in, out) fp16 elements
// (AutoGPTQ/AutoGPTQ:auto_gptq/modeling/_utils.py autogptq_post_init).
func (c phaseContext) quantBuffers() Component {
	if c.in.engine != engineHF || c.in.plan.quant.Layout != LayoutGPTQ || c.w.maxLinear == 0 {
		return Component{}
	}
	dq := units.MulInt(c.w.maxLinear, 2)
	state := units.MulInt(int64(exllamaMaxInputLen)*int64(max(c.w.maxLinearIn, c.w.maxLinearOut)), 2)
	if c.in.quiet {
		return Component{Name: "quant_buffers", Bytes: units.Add(units.Bytes(dq), units.Bytes(state)), Level: "allocated", Phase: "persistent"}
	}
	return Component{Name: "quant_buffers", Bytes: units.Add(units.Bytes(dq), units.Bytes(state)), Level: "allocated", Phase: "persistent",
		Formula: fmt.Sprintf("exllama temp_dq %d×%d × 2B + temp_state %d × %d × 2B", c.w.maxLinearOut, c.w.maxLinearIn, exllamaMaxInputLen, max(c.w.maxLinearIn, c.w.maxLinearOut)),
		Source:  "AutoGPTQ/AutoGPTQ:auto_gptq/modeling/_utils.py autogptq_post_init (exllama scratch buffers)"}
}

// persistent are the rows alive in every phase: weights and any
// quantization scratch buffers.
func (c phaseContext) persistent() []Component {
	parts := []Component{c.weightsRow()}
	if b := c.quantBuffers(); b.Bytes > 0 {
		parts = append(parts, b)
	}
	return parts
}
