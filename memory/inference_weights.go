package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// stageRange is the half-open range of decoder layers one pipeline stage runs.
type stageRange struct{ lo, hi int }

// stageRanges splits layers over pp stages the way vLLM does: an equal
// share each, the remainder given one by one to the stages before the last
// (the last stage already holds the final norm and lm_head)
// (vllm-project/vllm:vllm/distributed/utils.py get_pp_indices).
func stageRanges(layers, pp int) []stageRange {
	pp = max(pp, 1)
	parts := make([]int, pp)
	for i := range parts {
		parts[i] = layers / pp
	}
	for i := 2; i < layers%pp+2 && i <= pp; i++ {
		parts[pp-i]++
	}
	out := make([]stageRange, pp)
	lo := 0
	for i, n := range parts {
		out[i] = stageRange{lo, lo + n}
		lo += n
	}
	return out
}

// stageWeights is the weight memory of one GPU (one TP/EP rank of one
// pipeline stage).
type stageWeights struct {
	total     units.Bytes
	quantized units.Bytes // bytes of tensors in the quantized format
	// maxLinear is the element count of the largest quantized Linear
	// weight on the GPU: the size of one dequantized copy.
	maxLinear int64
	// maxLinearIn and maxLinearOut are that Linear's input and output widths.
	maxLinearIn, maxLinearOut int
}

// shardDivisor is how many GPUs share one module: routed experts are
// split over expert-parallel ranks (or, without EP, each expert over the
// tensor-parallel ranks, as vLLM's FusedMoE does), norms and routers are
// replicated, everything else is tensor-parallel
// (vllm-project/vllm:vllm/model_executor/layers/{linear.py,
// vocab_parallel_embedding.py, fused_moe/layer.py}).
func shardDivisor(mod model.Module, tp, ep int) int64 {
	switch {
	case mod.Expert && ep > 1:
		return int64(ep)
	case mod.Component == "norm" || mod.Component == "final_norm" || mod.Component == "router":
		return 1
	}
	return int64(max(tp, 1))
}

// weightsForStage sums the weights one GPU of stage s holds. Modules of
// the decoder layers are spread evenly over the layers they cover; the
// embedding, vision tower, projector and encoder live on the first stage,
// the final norm and lm_head on the last, and with tied embeddings and
// more than one stage the last stage holds its own copy of the embedding
// as lm_head (vLLM loads it on both ranks).
func weightsForStage(m *model.Model, p weightPlan, stages []stageRange, s, tp, ep int) stageWeights {
	var w stageWeights
	first, last := s == 0, s == len(stages)-1
	r := stages[s]
	var largestEmbed units.Bytes
	for _, mod := range m.Modules {
		b := p.moduleBytes(mod)
		div := shardDivisor(mod, tp, ep)
		share := b
		switch {
		case mod.Stack == "text" && mod.Layer >= 0:
			n := max(mod.Layers, 1)
			lo, hi := max(mod.Layer, r.lo), min(mod.Layer+n, r.hi)
			if hi <= lo {
				continue
			}
			share = units.FromFloat(float64(b) * float64(hi-lo) / float64(n))
		case mod.Component == "lm_head" || mod.Component == "final_norm":
			if !last {
				continue
			}
		default:
			if !first {
				if last && mod.Component == "embedding" && mod.Stack == "text" {
					largestEmbed = max(largestEmbed, b)
				}
				continue
			}
			if mod.Component == "embedding" && mod.Stack == "text" {
				largestEmbed = max(largestEmbed, b)
			}
		}
		share = units.FromFloat(float64(share) / float64(div))
		w.total = units.Add(w.total, share)
		if p.quantizes(mod) {
			w.quantized = units.Add(w.quantized, share)
			if n := units.MulInt(int64(mod.In), int64(mod.Out)) / div; n > w.maxLinear {
				w.maxLinear, w.maxLinearIn, w.maxLinearOut = n, mod.In, mod.Out
			}
		}
	}
	if last && len(stages) > 1 && m.Text.TiedEmbeddings {
		w.total = units.Add(w.total, units.FromFloat(float64(largestEmbed)/float64(max(tp, 1))))
	}
	return w
}

// weightsFormula describes the weights row of the breakdown.
func weightsFormula(p weightPlan, w stageWeights, tp, pp, ep int) string {
	s := fmt.Sprintf("quantized Linear weights %s as %s + other tensors %s as %s",
		units.FormatIEC(w.quantized), p.quant.Name, units.FormatIEC(w.total-w.quantized), p.rest.Name)
	if !p.quant.Quantized() && p.quant.Name == p.rest.Name {
		s = fmt.Sprintf("all parameters as %s (%g B each)", p.rest.Name, p.rest.BytesPerElement())
	}
	if p.gguf != nil {
		s = fmt.Sprintf("weights %s in llama-quantize's %s mix (%s)", units.FormatIEC(w.total), p.quant.Name, p.gguf.summary)
	}
	if tp > 1 || pp > 1 || ep > 1 {
		s += fmt.Sprintf("; per GPU with tp %d, pp %d, ep %d (norms and routers replicated)", max(tp, 1), max(pp, 1), max(ep, 1))
	}
	return s
}

// inferenceParamTotals returns the total parameter count and the count used per
// token (routed experts scaled by experts_per_tok / num_experts).
func inferenceParamTotals(m *model.Model) (total, active int64) {
	var expert int64
	for _, mod := range m.Modules {
		total += mod.Params
		if mod.Expert {
			expert += mod.Params
		}
	}
	active = total
	if moe := m.Text.MoE; moe != nil && moe.Experts > 0 && expert > 0 {
		active = total - expert + int64(float64(expert)*float64(moe.ExpertsPerToken)/float64(moe.Experts))
	}
	return total, active
}
