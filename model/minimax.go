package model

import "fmt"

// readMiniMaxM1 reads MiniMax-M1 (MiniMaxM1ForCausalLM, remote code). Its
// layers are lightning attention (attn_type_list 0) or softmax attention
// (1), each followed by a Mixtral-style mixture of experts; the layout
// follows modeling_minimax_m1.py in MiniMax-AI/MiniMax-M1 at
// 2abb4f45a9df4154b4bde024d51874bd127edcee, whose
// model.safetensors.index.json lists the same tensors:
//
//   - lightning layers: self_attn.qkv_proj (h → 3·heads·head_dim),
//     self_attn.output_gate (h → heads·head_dim), self_attn.norm (an
//     RMSNorm over heads·head_dim) and self_attn.out_proj, no biases;
//   - softmax layers: q/k/v/o projections with num_key_value_heads;
//   - every layer: input_layernorm, post_attention_layernorm and
//     block_sparse_moe (gate, experts.*.w1/w2/w3 of intermediate_size), plus
//     shared_mlp and a coefficient Linear(h, 1) when shared_intermediate_size
//     is set.
func readMiniMaxM1(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 4096, layers: 32, heads: 32, kvHeads: 8, inter: 14336, vocab: 32000, maxPos: 4096 * 32})
	kinds := c.ints("attn_type_list", 0, 1)
	switch {
	case kinds == nil && c.err() == nil:
		c.fail("attn_type_list", "one entry per layer: 0 for lightning attention, 1 for softmax attention", nil)
		return
	case len(kinds) != s.Layers && c.err() == nil:
		c.fail("attn_type_list", fmt.Sprintf("one entry per layer, %d as num_hidden_layers says", s.Layers), len(kinds))
		return
	}
	for i, k := range kinds {
		s.LayerTypes[i] = LayerType{Attention: FullAttention, MoE: true}
		if k == 0 {
			s.LayerTypes[i] = LayerType{Attention: NoSelfAttention, State: LightningAttention, MoE: true}
		}
	}
	s.MoE = readMoE(c, moeDefaults{experts: 8, perToken: 2, expertFFN: s.Intermediate})
	s.MoE.ExpertFFN = s.Intermediate
	shared := c.count("shared_intermediate_size", 0)
	if shared > 0 {
		// MiniMaxM1MLP takes config.intermediate_size, not the shared width.
		s.MoE.SharedExperts, s.MoE.SharedFFN = 1, s.Intermediate
	}
	if recurrentLayers(&s) > 0 {
		s.State = &RecurrentState{Kind: LightningAttention, Heads: s.Heads, HeadDim: s.HeadDim, StateDim: s.HeadDim}
	}
	m.Text = s
	st := &m.Text
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embed_tokens", st.Vocab, st.Hidden)
	for _, r := range kindRuns(st) {
		g := b.layers(StackText, "model.layers", r.first, r.n)
		a := g.sub("self_attn.")
		inner := st.Heads * st.HeadDim
		if r.lt.State != "" {
			a.linear(CompRecurrent, "qkv_proj", "qkv_proj", st.Hidden, 3*inner, false)
			a.linear(CompRecurrent, "output_gate", "output_gate", st.Hidden, inner, false)
			a.norm(CompRecurrent, "norm", inner, false)
			a.linear(CompRecurrent, "out_proj", "out_proj", inner, st.Hidden, false)
		} else {
			selfAttention(g, st, attnOpts{})
		}
		g.norm(CompNorm, "input_layernorm", st.Hidden, false)
		g.norm(CompNorm, "post_attention_layernorm", st.Hidden, false)
		moe := g.sub("block_sparse_moe.")
		moe.linear(CompRouter, "gate", "gate", st.Hidden, st.MoE.Experts, false)
		x := moe.sub("experts.*.")
		x.experts(CompExperts, "w1", "w1", st.MoE.Experts, st.Hidden, st.MoE.ExpertFFN, false)
		x.experts(CompExperts, "w2", "w2", st.MoE.Experts, st.MoE.ExpertFFN, st.Hidden, false)
		x.experts(CompExperts, "w3", "w3", st.MoE.Experts, st.Hidden, st.MoE.ExpertFFN, false)
		if shared > 0 {
			gatedMLP(g.sub("shared_mlp."), CompSharedExperts, st.Hidden, st.Intermediate, false)
			g.linear(CompRouter, "coefficient", "coefficient", st.Hidden, 1, false)
		}
	}
	top.norm(CompFinalNorm, "model.norm", st.Hidden, false)
	lmHead(b, st, "lm_head", false)
}
