package memory

import "math"

// lossTerms is the output layer + cross-entropy memory in the phases of a
// step, in bytes (MODEL.md §4.6, §15.8).
type lossTerms struct {
	peak  float64 // largest while the loss runs forward and its backward starts
	held  float64 // still alive while the layers run backward (and at step)
	chunk float64 // tokens per chunk for chunked variants (for explain)
	// persist is alive in every phase, the next step's forward included
	// (a reference the training loop keeps until it is reassigned).
	persist float64
}

// litgptChunk is litgpt's lm_head_chunk_size and chunked_cross_entropy
// chunk (litgpt finetune scripts, 2023-2024).
const litgptChunk = 128

// torchtuneChunks is CEWithChunkedOutputLoss's default number of chunks
// (pytorch/torchtune:torchtune/modules/loss/ce_chunked_output_loss.py).
const torchtuneChunks = 8

// lossMemory computes the loss terms for N tokens and vocabulary V.
func (s *setup) lossMemory() lossTerms {
	V := float64(s.m.Text.Vocab)
	N := s.tokens
	NV := N * V
	c := s.compute.BytesPerElement()
	h := float64(s.m.Text.Hidden)
	switch s.loss {
	case lossNone:
		return lossTerms{}
	case lossLitGPTChunked:
		// litgpt's lm_head runs in 128-position chunks (finetune scripts:
		// model(input_ids, lm_head_chunk_size=128)), and Lightning Fabric
		// converts the floating outputs of the module to the default
		// dtype, fp32, on their way out (lightning/fabric/wrappers.py
		// _FabricModule.forward → Precision.convert_output; plugins/
		// precision/half.py for bf16-true, amp.py for mixed): the chunks
		// the loss reads, and that the training loop's logits list keeps
		// through backward and the step, are fp32 (4·N·V; the c·N·V
		// chunks freed after the copy). chunked_cross_entropy (lit_gpt/
		// utils.py) runs F.cross_entropy per chunk, whose log_softmax
		// saves its fp32 output (4·N·V over the chunks). In backward the
		// NllLoss and LogSoftmax nodes of every chunk run before any
		// chunk's fp32→c cast (autograd runs the highest sequence number
		// first, and the casts were recorded before the loss), so the
		// fp32 gradients of the logits (4·N·V) pile up as the saved
		// log-probs are released chunk by chunk, plus one chunk's nll and
		// log-softmax gradients: 8·N·V + 8·ch·V.
		ch := math.Min(float64(litgptChunk*s.batch), N)
		return lossTerms{peak: 8*NV + 8*ch*V, held: 4 * NV, chunk: ch}
	case lossLiger:
		// Liger FLCE: chunk = next_pow2(ceil(N / ceil(V/h))) tokens; per
		// chunk logits in the input dtype; grad_input (N×h) and, when the
		// head trains, grad_weight (V×h) computed in forward and held
		// (linkedin/Liger-Kernel:src/liger_kernel/ops/fused_linear_cross_entropy.py).
		inc := math.Ceil(V / math.Max(h, 1))
		ch := math.Min(nextPow2(math.Ceil(N/math.Max(inc, 1))), N)
		held := c*N*h + 4*N
		if s.method == MethodFull || s.trainable.fraction(s.lmHead()) > 0 {
			held += s.weight.BytesPerElement() * V * h
		}
		return lossTerms{peak: held + c*ch*V, held: c * N * h, chunk: ch}
	case lossChunked:
		// torchtune eager chunked CE: bf16 logits of all chunks, fp32
		// log-probs of every chunk saved, one chunk upcast at a time
		// (≈ 6.5·N·V forward, MODEL.md §15.8); recipes del logits
		// before backward.
		ch := N / torchtuneChunks
		fwd := c*NV + 4*NV + 4*ch*V
		bwd := 4*NV + (4+4+c)*ch*V
		return lossTerms{peak: math.Max(fwd, bwd), chunk: ch}
	case lossChunkedCompiled:
		// compiled chunked CE: ≈ 2·N·V (bf16 logits of all chunks) plus
		// one chunk's fp32 work (MODEL.md §15.8).
		ch := N / torchtuneChunks
		return lossTerms{peak: c*NV + (4+4)*ch*V, chunk: ch}
	}
	// HF ForCausalLMLoss (huggingface/transformers:src/transformers/loss/
	// loss_utils.py): logits (compute dtype), .float() copy, log_softmax
	// output saved (4NV); the backward start holds the saved log-probs,
	// the gradient of the log-probs and the fp32 gradient of the logits
	// (12NV, MODEL.md §4.6). The Trainer drops outputs.logits before backward.
	up := 4 * NV
	if c >= 4 {
		up = 0
	}
	fwd := c*NV + up + 4*NV
	bwd := 12 * NV
	if s.m.ModelType == "gemma2" {
		// Final logit soft-capping, cap·tanh(logits/cap): tanh keeps its
		// output (c·N·V) until its backward, after the CE's
		// (huggingface/transformers:src/transformers/models/gemma2/modeling_gemma2.py).
		fwd += c * NV
		bwd += c * NV
	}
	if s.titanLogits {
		// torchtitan (early 2024): the model returns logits.float() and
		// the loop keeps pred until the next step reassigns it, so the fp32
		// logits (4·N·V) outlive the loss; later releases del pred before
		// backward ("need to free to before bwd to avoid peaking memory",
		// pytorch/torchtitan train.py). The bf16 logits are not kept: the
		// cast saves nothing for backward.
		fwd = 4*NV + 4*NV
		bwd = 12*NV + 4*NV
		return lossTerms{peak: math.Max(fwd, bwd), held: 4 * NV, persist: 4 * NV}
	}
	return lossTerms{peak: math.Max(fwd, bwd)}
}

// nextPow2 is the smallest power of two >= x (x >= 1).
func nextPow2(x float64) float64 {
	if x <= 1 {
		return 1
	}
	return math.Exp2(math.Ceil(math.Log2(x)))
}
