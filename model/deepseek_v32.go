package model

import "fmt"

// readDeepSeekV32 reads DeepSeek-V3.2 (model_type "deepseek_v32"): the
// DeepSeek-V3 layers (multi-head latent attention, leading dense layers,
// then MoE layers of routed and shared experts) plus, in every layer, the
// lightning indexer of DeepSeek sparse attention (DSA), which picks the
// index_topk cached tokens each query attends to
// (huggingface/transformers@01f8fa55d98fbd77fb6461c47ae14fc6206f2f87:
// src/transformers/models/deepseek_v32/modeling_deepseek_v32.py).
//
// Per layer, DeepseekV32Attention holds V3's MLA projections and
// DeepseekV32Indexer: wq_b Linear(q_lora_rank, index_n_heads ·
// index_head_dim), wk Linear(h, index_head_dim), k_norm LayerNorm
// (weight and bias), weights_proj Linear(h, index_n_heads); no biases.
// The experts are fused 3-D parameters as that file writes them
// (DeepseekV32Experts: gate_up_proj (E, 2f, h), down_proj (E, h, f)), the
// router a bare (E, h) weight; its e_score_correction_bias is a buffer.
// The num_nextn_predict_layers multi-token-prediction layer of the
// checkpoint is not built by transformers and is not counted.
//
// Defaults are DeepseekV32Config's
// (huggingface/transformers@008e574391258935f3ecc3035c882e73bbcac419:
// src/transformers/models/deepseek_v32/configuration_deepseek_v32.py).
func readDeepSeekV32(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 7168, layers: 61, heads: 128, inter: 18432, vocab: 129280, maxPos: 163840})
	readMLA(c, &s, 1536)
	if s.MLA.QLoRARank == 0 {
		// The indexer projects the query latent (wq_b reads q_lora_rank).
		c.fail("q_lora_rank", "a positive integer (the DSA indexer reads the query latent)", "null")
	}
	readIndexer(c, &s, 64)
	readDSAMoE(c, &s, moeDefaults{experts: 256, perToken: 8, expertFFN: 2048}, 3)
	m.Text = s
	buildDSA(b, &m.Text)
}

// readMLA reads the multi-head latent attention keys into s (q_lora_rank
// with the family's default, null meaning a direct q_proj).
func readMLA(c *config, s *Stack, qLoRA int) {
	mla := &MLA{
		QLoRARank:  c.count("q_lora_rank", qLoRA),
		KVLoRARank: c.dim("kv_lora_rank", 512),
		QKNopeDim:  c.dim("qk_nope_head_dim", 128),
		QKRopeDim:  c.dim("qk_rope_head_dim", 64),
		VHeadDim:   c.dim("v_head_dim", 128),
	}
	if c.lookupNull("q_lora_rank") {
		mla.QLoRARank = 0
	}
	s.MLA = mla
	s.HeadDim = mla.QKNopeDim + mla.QKRopeDim
	s.KVHeads = s.Heads // MLA expands the latent to every head
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias = s.AttnBias
}

// readIndexer reads the DSA indexer keys (index_n_heads with the family's
// default, index_head_dim 128, index_topk 2048), which must fit the
// rotary width the indexer splits off its heads.
func readIndexer(c *config, s *Stack, heads int) {
	mla := s.MLA
	mla.IndexerHeads = c.dim("index_n_heads", heads)
	mla.IndexerHeadDim = c.dim("index_head_dim", 128)
	mla.IndexerTopK = c.dim("index_topk", 2048)
	if mla.IndexerHeadDim < mla.QKRopeDim {
		c.fail("index_head_dim", fmt.Sprintf("at least qk_rope_head_dim (%d), which the indexer rotates", mla.QKRopeDim), mla.IndexerHeadDim)
	}
}

// readDSAMoE reads the MoE keys of DeepseekV32Config-style configs: the
// routed and shared experts, and which layers are MoE — mlp_layer_types
// ("dense" / "sparse" per layer) when given, else every layer from
// first_k_dense_replace on.
func readDSAMoE(c *config, s *Stack, md moeDefaults, dense int) {
	s.MoE = readMoE(c, md)
	s.MoE.SharedExperts = c.count("n_shared_experts", 1)
	s.MoE.SharedFFN = s.MoE.SharedExperts * s.MoE.ExpertFFN
	s.MoE.DenseLayers = c.intIn("first_k_dense_replace", dense, 0, maxLayers)
	kinds := c.strs("mlp_layer_types")
	if kinds == nil {
		markMoELayers(s, func(i int) bool { return i >= s.MoE.DenseLayers })
		return
	}
	if len(kinds) != s.Layers {
		c.fail("mlp_layer_types", fmt.Sprintf("%d entries (num_hidden_layers)", s.Layers), len(kinds))
		return
	}
	for i, k := range kinds {
		switch k {
		case "dense":
		case "sparse":
			s.LayerTypes[i].MoE = true
		default:
			c.fail(fmt.Sprintf("mlp_layer_types[%d]", i), `"dense" or "sparse"`, k)
			return
		}
	}
	s.MoE.DenseLayers = 0
	for s.MoE.DenseLayers < s.Layers && !s.LayerTypes[s.MoE.DenseLayers].MoE {
		s.MoE.DenseLayers++
	}
}

// buildDSA adds the inventory of a DeepSeek-V3.2-style decoder: MLA with
// an indexer on the layers that run one, dense or fused-expert MoE FFNs.
func buildDSA(b *builder, s *Stack) {
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embed_tokens", s.Vocab, s.Hidden)
	runs := runsBy(s.Layers, func(i int) bool { return s.LayerTypes[i].MoE })
	for _, r := range runs {
		for _, ir := range splitRun(r, func(i int) bool { return s.MLA.HasIndexer(i) }) {
			g := b.layers(StackText, "model.layers", ir.first, ir.n)
			g.norm(CompNorm, "input_layernorm", s.Hidden, false)
			a := g.sub("self_attn.")
			mlaAttention(a, s)
			if ir.moe {
				dsaIndexer(a.sub("indexer."), s)
			}
			g.norm(CompNorm, "post_attention_layernorm", s.Hidden, false)
			mlp := g.sub("mlp.")
			if !r.moe {
				gatedMLP(mlp, CompMLP, s.Hidden, s.Intermediate, false)
				continue
			}
			mlp.linear(CompRouter, "gate", "gate", s.Hidden, s.MoE.Experts, false)
			fusedGatedExperts(mlp, s.MoE.Experts, s.Hidden, s.MoE.ExpertFFN)
			if s.MoE.SharedFFN > 0 {
				gatedMLP(mlp.sub("shared_experts."), CompSharedExperts, s.Hidden, s.MoE.SharedFFN, false)
			}
		}
	}
	top.norm(CompFinalNorm, "model.norm", s.Hidden, false)
	lmHead(b, s, "lm_head", false)
}

// splitRun splits a run of layers further by f; the parts carry f's value
// in their moe field.
func splitRun(r layerRun, f func(i int) bool) []layerRun {
	parts := runsBy(r.n, func(i int) bool { return f(r.first + i) })
	for i := range parts {
		parts[i].first += r.first
	}
	return parts
}

// dsaIndexer adds one DeepseekV32Indexer: wq_b, wk, k_norm (a LayerNorm
// with bias) and weights_proj, none with a bias.
func dsaIndexer(g group, s *Stack) {
	m := s.MLA
	g.linear(CompAttention, "wq_b", "wq_b", m.QLoRARank, m.IndexerHeads*m.IndexerHeadDim, false)
	g.linear(CompAttention, "wk", "wk", s.Hidden, m.IndexerHeadDim, false)
	g.norm(CompNorm, "k_norm", m.IndexerHeadDim, true)
	g.linear(CompAttention, "weights_proj", "weights_proj", s.Hidden, m.IndexerHeads, false)
}

// fusedGatedExperts adds e routed SwiGLU experts stored as two 3-D
// parameters, gate_up_proj (E, 2f, h) and down_proj (E, h, f), as
// transformers 5 writes every MoE family (e.g. DeepseekV32Experts).
func fusedGatedExperts(g group, e, h, f int) {
	x := g.sub("experts.")
	x.experts(CompExperts, "gate_up_proj", "gate_up_proj", e, h, 2*f, false)
	x.experts(CompExperts, "down_proj", "down_proj", e, f, h, false)
}
