package memory

import (
	"github.com/gpumem/gpumem/model"
)

// Hand-built models for the inference tests: the shapes of real configs,
// with a parameter inventory laid out as the model package describes it.

// denseShape describes a Llama-style decoder for testModel.
type denseShape struct {
	id             string
	layers, hidden int
	heads, kvHeads int
	headDim, ffn   int
	vocab, maxPos  int
	tied           bool
	window         int              // sliding window, 0 for none
	types          []model.AttnKind // per-layer attention, nil = all full
	moe            *model.MoE
	mla            *model.MLA
	quant          *model.Quantization
	torchDtype     string
	plainMLP       bool
}

// linear appends a Linear group covering all layers.
func linearGroup(mods []model.Module, name, comp string, layers, in, out, perLayer int, expert bool) []model.Module {
	each := int64(in) * int64(out)
	inst := layers * perLayer
	return append(mods, model.Module{Name: name, Component: comp, Stack: "text", Instances: inst, Each: each,
		Params: each * int64(inst), In: in, Out: out, Expert: expert, Layer: 0, Layers: layers})
}

// testModel builds a model.Model with a full parameter inventory.
func testModel(d denseShape) *model.Model {
	if d.headDim == 0 {
		d.headDim = d.hidden / d.heads
	}
	st := model.Stack{Layers: d.layers, Hidden: d.hidden, Heads: d.heads, KVHeads: d.kvHeads, HeadDim: d.headDim,
		Intermediate: d.ffn, Vocab: d.vocab, MaxPositions: d.maxPos, SlidingWindow: d.window, TiedEmbeddings: d.tied,
		Norm: model.RMSNorm, MLP: model.GatedMLP, Causal: true, MoE: d.moe, MLA: d.mla}
	if d.plainMLP {
		st.MLP = model.PlainMLP
	}
	for i := 0; i < d.layers; i++ {
		lt := model.LayerType{Attention: model.FullAttention}
		if d.types != nil {
			lt.Attention = d.types[i%len(d.types)]
		}
		if d.moe != nil && i >= d.moe.DenseLayers {
			lt.MoE = true
		}
		st.LayerTypes = append(st.LayerTypes, lt)
	}
	m := &model.Model{ID: d.id, Architecture: "TestForCausalLM", ModelType: "test", Text: st, Quant: d.quant, TorchDtype: d.torchDtype}
	h, L := d.hidden, d.layers
	mods := []model.Module{{Name: "model.embed_tokens", Component: "embedding", Stack: "text", Instances: 1,
		Each: int64(d.vocab) * int64(h), Params: int64(d.vocab) * int64(h), Layer: -1}}
	if d.mla != nil {
		a, ml := d.heads, d.mla
		mods = linearGroup(mods, "model.layers.*.self_attn.q_proj", "attention", L, h, a*(ml.QKNopeDim+ml.QKRopeDim), 1, false)
		mods = linearGroup(mods, "model.layers.*.self_attn.kv_a_proj_with_mqa", "attention", L, h, ml.KVLoRARank+ml.QKRopeDim, 1, false)
		mods = linearGroup(mods, "model.layers.*.self_attn.kv_b_proj", "attention", L, ml.KVLoRARank, a*(ml.QKNopeDim+ml.VHeadDim), 1, false)
		mods = linearGroup(mods, "model.layers.*.self_attn.o_proj", "attention", L, a*ml.VHeadDim, h, 1, false)
	} else {
		q, kv := d.heads*d.headDim, d.kvHeads*d.headDim
		mods = linearGroup(mods, "model.layers.*.self_attn.q_proj", "attention", L, h, q, 1, false)
		mods = linearGroup(mods, "model.layers.*.self_attn.k_proj", "attention", L, h, kv, 1, false)
		mods = linearGroup(mods, "model.layers.*.self_attn.v_proj", "attention", L, h, kv, 1, false)
		mods = linearGroup(mods, "model.layers.*.self_attn.o_proj", "attention", L, q, h, 1, false)
	}
	if d.moe != nil {
		e := d.moe
		mods = linearGroup(mods, "model.layers.*.mlp.gate", "router", L, h, e.Experts, 1, false)
		mods = linearGroup(mods, "model.layers.*.mlp.experts.*.gate_proj", "experts", L, h, e.ExpertFFN, e.Experts, true)
		mods = linearGroup(mods, "model.layers.*.mlp.experts.*.up_proj", "experts", L, h, e.ExpertFFN, e.Experts, true)
		mods = linearGroup(mods, "model.layers.*.mlp.experts.*.down_proj", "experts", L, e.ExpertFFN, h, e.Experts, true)
	} else if d.plainMLP {
		mods = linearGroup(mods, "model.layers.*.mlp.fc1", "mlp", L, h, d.ffn, 1, false)
		mods = linearGroup(mods, "model.layers.*.mlp.fc2", "mlp", L, d.ffn, h, 1, false)
	} else {
		mods = linearGroup(mods, "model.layers.*.mlp.gate_proj", "mlp", L, h, d.ffn, 1, false)
		mods = linearGroup(mods, "model.layers.*.mlp.up_proj", "mlp", L, h, d.ffn, 1, false)
		mods = linearGroup(mods, "model.layers.*.mlp.down_proj", "mlp", L, d.ffn, h, 1, false)
	}
	mods = append(mods,
		model.Module{Name: "model.layers.*.input_layernorm", Component: "norm", Stack: "text", Instances: L, Each: int64(h), Params: int64(h * L), Layer: 0, Layers: L},
		model.Module{Name: "model.layers.*.post_attention_layernorm", Component: "norm", Stack: "text", Instances: L, Each: int64(h), Params: int64(h * L), Layer: 0, Layers: L},
		model.Module{Name: "model.norm", Component: "final_norm", Stack: "text", Instances: 1, Each: int64(h), Params: int64(h), Layer: -1})
	if !d.tied {
		mods = append(mods, model.Module{Name: "lm_head", Component: "lm_head", Stack: "text", Instances: 1,
			Each: int64(d.vocab) * int64(h), Params: int64(d.vocab) * int64(h), In: h, Out: d.vocab, Layer: -1})
	}
	m.Modules = mods
	return m
}

// Shapes of real configs (config.json values).
var (
	llama2_7b  = denseShape{id: "meta-llama/Llama-2-7b-hf", layers: 32, hidden: 4096, heads: 32, kvHeads: 32, ffn: 11008, vocab: 32000, maxPos: 4096}
	llama2_13b = denseShape{id: "meta-llama/Llama-2-13b-hf", layers: 40, hidden: 5120, heads: 40, kvHeads: 40, ffn: 13824, vocab: 32000, maxPos: 4096}
	llama31_8b = denseShape{id: "meta-llama/Llama-3.1-8B", layers: 32, hidden: 4096, heads: 32, kvHeads: 8, ffn: 14336, vocab: 128256, maxPos: 131072}
	qwen25_7b  = denseShape{id: "Qwen/Qwen2.5-7B", layers: 28, hidden: 3584, heads: 28, kvHeads: 4, ffn: 18944, vocab: 152064, maxPos: 131072}
	mistral7b  = denseShape{id: "mistralai/Mistral-7B-v0.1", layers: 32, hidden: 4096, heads: 32, kvHeads: 8, ffn: 14336, vocab: 32000, maxPos: 32768,
		window: 4096, types: []model.AttnKind{model.SlidingAttention}}
	gemma2_9b = denseShape{id: "google/gemma-2-9b", layers: 42, hidden: 3584, heads: 16, kvHeads: 8, headDim: 256, ffn: 14336, vocab: 256000, maxPos: 8192,
		tied: true, window: 4096, types: []model.AttnKind{model.SlidingAttention, model.FullAttention}}
	deepseekV3 = denseShape{id: "deepseek-ai/DeepSeek-V3", layers: 61, hidden: 7168, heads: 128, kvHeads: 128, headDim: 192, ffn: 18432, vocab: 129280, maxPos: 163840,
		mla: &model.MLA{QLoRARank: 0, KVLoRARank: 512, QKNopeDim: 128, QKRopeDim: 64, VHeadDim: 128},
		moe: &model.MoE{Experts: 256, ExpertsPerToken: 8, ExpertFFN: 2048, DenseLayers: 3}}
)
