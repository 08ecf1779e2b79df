package memory

import (
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// rowInfo holds each allocated row's lifetime, symbolic formula and source.
// With Job.Explain the formula is replaced by one with the inputs filled in.
var rowInfo = [numRows]struct{ name, phase, formula, source string }{
	rowWeights: {"weights", "persistent", "Σ modules params × bytes(dtype); quantized Linears: packed data + block constants",
		"MODEL.md §2.1, §6.2; bitsandbytes functional.py quantize_4bit (block 64, double quant 256)"},
	rowAdapters: {"adapter_weights", "persistent", "Σ adapter tensors × bytes(adapter dtype): LoRA r·(in+out) per module (+out DoRA), other PEFT methods their layer's tensors, frozen shared ones (LoRA-FA A, VeRA A/B) included",
		"LoRA arXiv:2106.09685; PEFT autocast_adapter_dtype (MODEL.md §6.1); huggingface/peft src/peft/tuners/*/layer.py @v0.18.0"},
	rowMaster: {"master_weights", "persistent", "trainable params × 4 B (fp32 master copy)",
		"ZeRO arXiv:1910.02054 §3.1; Megatron-LM distributed optimizer table (MODEL.md §2.1)"},
	rowGrads: {"gradients", "backward", "trainable params × bytes(grad dtype), alive per phase (accumulation, torch1, set_to_none)",
		"MODEL.md §2.1, §11, §15.4"},
	rowOptim: {"optimizer_states", "persistent", "Σ trainable tensors × optimizer state per tensor",
		"torch.optim state init; bitsandbytes Optimizer2State; MODEL.md §2.4"},
	rowCast: {"autocast_weight_cache", "forward", "2 B × Linear weight params (autocast weight-cast cache)",
		"MODEL.md §2.2, §15.9 [measured]"},
	rowRounding: {"allocator_rounding", "persistent", "weights' blocks beyond their bytes (512 B rounding, segment remainders of 1 MiB or less kept unsplit) + roundup_power2_divisions rounding of gradients, optimizer states and master weights",
		"pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp round_size, get_allocation_size, should_split, alloc_found_block (MODEL.md §10)"},
	rowActs: {"activations", "forward", "recording layers × per-token inventory × tokens (or checkpoints + one recomputed layer)",
		"MODEL.md §4.3 (HF inventories), §5.1 (checkpointing), §8 (MoE), §15.12 (post-LN encoders)"},
	rowVision: {"vision_activations", "forward", "vision layers × inventory × images × patches (+ projector input)",
		"MODEL.md §9"},
	rowEncoder: {"encoder_activations", "forward", "encoder layers × inventory × source tokens (encoder-decoder models)",
		"MODEL.md §4.3 applied to the encoder stack"},
	rowOut: {"output_activations", "forward", "final norm + lm_head input (+ int64 ids) × tokens",
		"MODEL.md §4.6"},
	rowMask: {"attention_mask", "forward", "b × s² × bytes(compute) (4-D causal/padding mask)",
		"MODEL.md §5.1"},
	rowLoss: {"loss", "loss", "logits + fp32 cross-entropy intermediates (×N·V)",
		"huggingface/transformers loss_utils.py ForCausalLMLoss; MODEL.md §4.6, §15.8"},
	rowBwd: {"backward_transient", "backward", "one layer's backward: flash dq accumulator, dq/dk/dv, MLP and residual grads",
		"Dao-AILab/flash-attention flash_api.cpp mha_bwd; MODEL.md §4.4, §5.1"},
	rowStep: {"optimizer_step", "step", "optimizer step intermediates (foreach: +1× states-dtype params; fused: 0; for-loop: largest tensor)",
		"torch.optim docstrings (foreach); MODEL.md §2.3, §15.6"},
	rowComm: {"comm_buffers", "forward", "engine buffers: DDP buckets, ZeRO reduce/prefetch buckets and gathered params, FSDP unsharded units and unit gradients",
		"MODEL.md §3.3 (DeepSpeed), §3.5/§3.6 (FSDP), §3.7 (DDP)"},
	rowDequant: {"dequant_workspace", "forward", "dequant_buffers × largest quantized Linear × bytes(compute)",
		"MODEL.md §6.2 (dequantization for the matmul), §15.3"},
}

// explain fills each allocated component's formula with the job's inputs.
func (s *setup) explain(t *trainParts, comps []Component) {
	for i := range comps {
		c := &comps[i]
		if c.Level != "allocated" {
			continue
		}
		if v, ok := s.formulaFor(t, c.Name); ok {
			c.Formula = v + " [" + strings.TrimSpace(c.Formula) + "]"
		}
	}
}

// formulaFor is the explained formula of the allocated row name; only
// the rows shown are formatted.
func (s *setup) formulaFor(t *trainParts, name string) (string, bool) {
	gib := func(v float64) string { return units.FormatIEC(units.FromFloat(v)) }
	st, a, p := &t.st, &t.act, &t.p
	N := s.tokens
	switch name {
	case "weights":
		return fmt.Sprintf("%d params; dtype %s%s", p.total, s.weight.Name,
			cond(s.weight.Quantized, fmt.Sprintf(" (Linears quantized, double quant %v, rest %s)", s.double, cond(s.kbitFP32, "fp32", s.compute.Name)), "")), true
	case "adapter_weights":
		return fmt.Sprintf("%.0f adapter params × %v B (%s), %s%s", p.adapters, s.adapter.BytesPerElement(), s.adapter.Name, s.peftNote(),
			cond(s.frozenAdapterParams() > 0, fmt.Sprintf(", + %.0f frozen adapter params", s.frozenAdapterParams()), "")), true
	case "master_weights":
		return fmt.Sprintf("%.0f trainable params × 4 B", p.trainable-p.adapters), true
	case "gradients":
		return fmt.Sprintf("%.0f trainable params → %s total; grad accum %d%s%s", p.trainable, gib(st.grads), s.accum,
			cond(s.torch1, ", torch1 keeps grads", ""), cond(s.optInBwd, ", optimizer in backward: one tensor at a time", "")), true
	case "optimizer_states":
		return fmt.Sprintf("%s over %.0f trainable params (%s, %s states)%s", s.opt.info.Name, p.trainable, gib(st.optim.states), s.opt.info.StateDtype,
			cond(s.adapterStateBytes(p.adapters) > 0, fmt.Sprintf(", incl. AdaLoRA's RankAllocator %s", gib(s.adapterStateBytes(p.adapters))), "")), true
	case "autocast_weight_cache":
		return fmt.Sprintf("2 B × Linear weights of recording layers = %s (lm_head %s)", gib(st.castCache), gib(st.castHead)), true
	case "activations":
		return fmt.Sprintf("%d recording layers, %.0f tokens (batch %d × seq %d): %.1f B/token/layer + %.1f B/token/key/layer (eager)%s × scale %.3g; checkpoints %d × %s; one layer %s%s%s",
			a.nrec, N, s.batch, s.seqTotal, a.perTok.lin/float64(max(a.nrec, 1)), a.perTok.quad/float64(max(a.nrec, 1)),
			cond(a.perTok.fixed > 0, fmt.Sprintf(" + %s/layer whatever the tokens (adapter weight-sized tensors)", gib(a.perTok.fixed/float64(max(a.nrec, 1)))), ""),
			s.c[cActivationScale], a.nckpt, gib(a.ckpt), gib(a.layer), s.actOverrideNote(), s.float8Note()), true
	case "vision_activations":
		return fmt.Sprintf("%d images, vision tower trains: %v", s.images, s.trainable.vision || s.lora.vision), true
	case "encoder_activations":
		return fmt.Sprintf("%d encoder layers over %.0f source tokens", encLayers(s), N), true
	case "output_activations":
		return fmt.Sprintf("final norm + lm_head input + ids over %.0f tokens", N), true
	case "attention_mask":
		return fmt.Sprintf("%d × %d² × %v B", s.batch, s.seqTotal, s.compute.BytesPerElement()), true
	case "loss":
		return fmt.Sprintf("%s over N=%.0f tokens, V=%d: peak %s, held in backward %s%s", lossName[s.loss], N, s.m.Text.Vocab,
			gib(t.loss.peak), gib(t.loss.held), cond(t.loss.chunk > 0, fmt.Sprintf(", chunk %.0f tokens", t.loss.chunk), "")), true
	case "backward_transient":
		return fmt.Sprintf("one layer's backward over %.0f tokens = %s", N, gib(a.trans)), true
	case "optimizer_step":
		return fmt.Sprintf("%s (%s): %s", s.opt.info.Name, s.opt.info.Impl, gib(st.optim.transient)), true
	case "comm_buffers":
		return fmt.Sprintf("engine %s, zero %d over %.0f ranks, tp %d pp %d cp %d ep %d", cond(s.dist.engine == "", "none", s.dist.engine), s.dist.zero, s.dist.nd, s.dist.tp, s.dist.pp, s.dist.cp, s.dist.ep), true
	case "allocator_rounding":
		f := &t.alloc
		return fmt.Sprintf("weights' blocks %s beyond their bytes%s; divisions rounding: states and master %s, all gradients %s (allocator %s)",
			gib(f.absorbed), cond(f.derived, "", " (not derived: sharded or split weights)"), gib(f.states), gib(f.grads), allocConfText(&s.alloc)), true
	case "dequant_workspace":
		return fmt.Sprintf("%.3g × %.0f elements × %v B", s.c[cDequantWorkspaceFactor], p.maxLinear, s.compute.BytesPerElement()), true
	}
	return "", false
}

// actOverrideNote names the activation factors that replace derived
// parts of the inventory ("" when none does).
func (s *setup) actOverrideNote() string {
	var parts []string
	attn, mlp := s.actOverrides(&s.m.Text, s.compute.BytesPerElement())
	if attn > 0 {
		id := cAttnActFactorFA
		if s.attn == trAttnEager {
			id = cAttnActFactorNoFA
		}
		parts = append(parts, fmt.Sprintf("attention part = %s %.4g × hidden × %v B", constantTable[id].Name, s.c[id], s.compute.BytesPerElement()))
	}
	if mlp > 0 {
		parts = append(parts, fmt.Sprintf("MLP part = mlp_act_factor %.4g × hidden × %v B", s.c[cMLPActFactor], s.compute.BytesPerElement()))
	}
	if r := s.ckptRetention(); r > 0 {
		parts = append(parts, fmt.Sprintf("checkpointing keeps grad_ckpt_reduction %.4g × the activations", r))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

// lossName names the loss implementations for explanations.
var lossName = [...]string{
	lossHF:              "HF logits.float() + cross_entropy (12·N·V at backward start)",
	lossLitGPTChunked:   "litgpt 128-token chunked lm_head + chunked CE",
	lossLiger:           "Liger fused linear cross-entropy",
	lossChunked:         "torchtune chunked CE (eager)",
	lossChunkedCompiled: "torchtune chunked CE (compiled)",
	lossNone:            "classification head (no vocabulary logits)",
}

// cond returns a when ok, else b.
func cond(ok bool, a, b string) string {
	if ok {
		return a
	}
	return b
}

// encLayers is the encoder depth (0 without an encoder).
func encLayers(s *setup) int {
	if s.m.Encoder == nil {
		return 0
	}
	return s.m.Encoder.Layers
}
