package model

// readDeepSeek reads DeepSeek-V2 and -V3 (and R1): multi-head latent
// attention and MoE layers after the first first_k_dense_replace dense
// ones (modeling_deepseek_v2.py / modeling_deepseek_v3.py).
//
// MLA per layer (DeepseekV3Attention): q_a_proj Linear(h, q_lora_rank),
// q_a_layernorm, q_b_proj Linear(q_lora_rank, heads·(nope+rope)) — or one
// q_proj when q_lora_rank is null (V2-Lite) — kv_a_proj_with_mqa
// Linear(h, kv_lora_rank + rope), kv_a_layernorm, kv_b_proj
// Linear(kv_lora_rank, heads·(nope + v)), o_proj Linear(heads·v, h).
//
// The num_nextn_predict_layers multi-token-prediction layer stored in the
// V3 checkpoint is not instantiated by transformers and is not counted
// (MODEL.md §1.4). V3's router e_score_correction_bias is a buffer in
// transformers' DeepseekV3TopkRouter and is not counted either.
func readDeepSeek(c *config, m *Model, b *builder) {
	v3 := m.ModelType == "deepseek_v3" || m.Architecture == "DeepseekV3ForCausalLM"
	d := dims{hidden: 4096, layers: 30, heads: 32, inter: 11008, vocab: 102400, maxPos: 2048} // DeepseekV2Config
	md := moeDefaults{experts: 0, perToken: 0, expertFFN: 1407}
	if v3 { // DeepseekV3Config
		d = dims{hidden: 7168, layers: 61, heads: 128, inter: 18432, vocab: 129280, maxPos: 4096}
		md = moeDefaults{experts: 256, perToken: 8, expertFFN: 2048}
	}
	s := readStack(c, d)
	readMLA(c, &s, 1536) // an explicit null q_lora_rank: q is projected directly
	if c.has("n_routed_experts") || md.experts > 0 {
		if md.perToken == 0 && !c.has("num_experts_per_tok") {
			c.fail("num_experts_per_tok", "a positive integer", nil)
		}
		s.MoE = readMoE(c, md)
		s.MoE.SharedExperts = c.count("n_shared_experts", boolInt(v3))
		s.MoE.SharedFFN = s.MoE.SharedExperts * s.MoE.ExpertFFN
		s.MoE.DenseLayers = c.intIn("first_k_dense_replace", boolInt(v3)*3, 0, maxLayers)
		freq := c.intIn("moe_layer_freq", 1, 1, maxLayers)
		markMoELayers(&s, func(i int) bool { return i >= s.MoE.DenseLayers && i%freq == 0 })
	}
	m.Text = s
	buildDeepSeek(b, &m.Text)
}

// lookupNull reports whether key is present with a JSON null value.
func (c *config) lookupNull(key string) bool {
	v, ok := c.m[key]
	return ok && v == nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// buildDeepSeek adds the DeepSeek inventory for s.
func buildDeepSeek(b *builder, s *Stack) {
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embed_tokens", s.Vocab, s.Hidden)
	for _, r := range moeRuns(s) {
		g := b.layers(StackText, "model.layers", r.first, r.n)
		g.norm(CompNorm, "input_layernorm", s.Hidden, false)
		mlaAttention(g.sub("self_attn."), s)
		g.norm(CompNorm, "post_attention_layernorm", s.Hidden, false)
		mlp := g.sub("mlp.")
		if !r.moe {
			gatedMLP(mlp, CompMLP, s.Hidden, s.Intermediate, false)
			continue
		}
		mlp.linear(CompRouter, "gate", "gate", s.Hidden, s.MoE.Experts, false)
		gatedExperts(mlp, s.MoE.Experts, s.Hidden, s.MoE.ExpertFFN)
		if s.MoE.SharedFFN > 0 {
			gatedMLP(mlp.sub("shared_experts."), CompSharedExperts, s.Hidden, s.MoE.SharedFFN, false)
		}
	}
	top.norm(CompFinalNorm, "model.norm", s.Hidden, false)
	lmHead(b, s, "lm_head", false)
}

// mlaAttention adds the latent-attention projections of one layer.
func mlaAttention(a group, s *Stack) {
	m, bias := s.MLA, s.AttnBias
	qk := m.QKNopeDim + m.QKRopeDim
	if m.QLoRARank > 0 {
		a.linear(CompAttention, "q_a_proj", "q_a_proj", s.Hidden, m.QLoRARank, bias)
		a.norm(CompNorm, "q_a_layernorm", m.QLoRARank, false)
		a.linear(CompAttention, "q_b_proj", "q_b_proj", m.QLoRARank, s.Heads*qk, false)
	} else {
		a.linear(CompAttention, "q_proj", "q_proj", s.Hidden, s.Heads*qk, false)
	}
	a.linear(CompAttention, "kv_a_proj_with_mqa", "kv_a_proj_with_mqa", s.Hidden, m.KVLoRARank+m.QKRopeDim, bias)
	a.norm(CompNorm, "kv_a_layernorm", m.KVLoRARank, false)
	a.linear(CompAttention, "kv_b_proj", "kv_b_proj", m.KVLoRARank, s.Heads*(m.QKNopeDim+m.VHeadDim), false)
	a.linear(CompAttention, "o_proj", "o_proj", s.Heads*m.VHeadDim, s.Hidden, bias)
}
