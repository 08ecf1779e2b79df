package model

// Nemotron-H is a stack of single-mixer blocks: each layer is an RMSNorm
// and one of a Mamba-2 mixer ("M"), attention ("*"), a squared-ReLU MLP
// ("-") or a mixture of experts ("E"). The module layout follows
// huggingface/transformers at 008d9e9577b0eb0149aa6bb0c44da582b10e0b6e
// (src/transformers/models/nemotron_h/modular_nemotron_h.py) and the
// config keys configuration_nemotron_h.py at
// 13923c63d59f73faebae79b2ee3fafc7e3a35201.

// nemotronHKinds name Nemotron-H's blocks in hybrid_override_pattern and in
// layers_block_type (old and new spellings).
var nemotronHKinds = kindNames{
	"M": {State: Mamba2, NoFFN: true}, "mamba": {State: Mamba2, NoFFN: true}, "linear_attention": {State: Mamba2, NoFFN: true},
	"*": {Attention: FullAttention, NoFFN: true}, "attention": {Attention: FullAttention, NoFFN: true}, "full_attention": {Attention: FullAttention, NoFFN: true},
	"-": {}, "mlp": {},
	"E": {MoE: true}, "moe": {MoE: true},
}

// nemotronHSSMDtype is the recurrent-state dtype vLLM gives Nemotron-H
// when its config states none (vllm-project/vllm:
// vllm/model_executor/models/config.py NemotronHForCausalLMConfig
// DEFAULT_MAMBA_SSM_CACHE_DTYPE: "Only float32 is known to have no
// accuracy issues by default").
const nemotronHSSMDtype = "float32"

// readNemotronH reads NemotronHForCausalLM. The layer count is the length
// of hybrid_override_pattern (or layers_block_type); a num_hidden_layers
// that disagrees is refused. Routed experts are plain up/down MLPs
// (NemotronHExperts), optionally in a latent space (moe_latent_size with
// fc1/fc2_latent_proj); the router keeps e_score_correction_bias as a
// buffer, not a parameter. Multi-token-prediction weights (mtp.*) are not
// loaded by transformers and not counted. The output head is never tied
// (NemotronHForCausalLM._tied_weights_keys is empty).
func readNemotronH(c *config, m *Model, b *builder) {
	lts := layerPattern(c, "hybrid_override_pattern", nemotronHKinds)
	if lts == nil && c.err() == nil {
		lts = layerKindList(c, "layers_block_type", nemotronHKinds)
	}
	if lts == nil {
		if c.err() == nil {
			c.fail("hybrid_override_pattern", "the layer pattern (or layers_block_type)", nil)
		}
		return
	}
	hd := c.dim("attention_head_dim", 128)
	s := readStack(c, dims{hidden: 4096, layers: len(lts), heads: 32, kvHeads: 8, headDim: hd, inter: 21504, vocab: 131072, maxPos: 4096, act: "relu2"})
	s.Layers, s.LayerTypes = len(lts), lts
	s.MLP = PlainMLP
	s.Activation = c.str("mlp_hidden_act", "relu2")
	s.MLPBias = c.boolean("mlp_bias", false)
	s.AttnBias = c.boolean("attention_bias", false)
	s.OutBias = s.AttnBias
	if s.TiedEmbeddings {
		c.warnf("tie_word_embeddings is true, but NemotronHForCausalLM never ties its output head: counted untied")
		s.TiedEmbeddings = false
	}
	r := &RecurrentState{Kind: Mamba2,
		Heads:      c.dim("mamba_num_heads", 128),
		HeadDim:    c.dim("mamba_head_dim", 64),
		StateDim:   c.dim("ssm_state_size", 128),
		Groups:     c.dim("n_groups", c.dim("mamba_n_groups", 8)),
		ConvKernel: c.dim("conv_kernel", c.dim("mamba_d_conv", 4)),
	}
	checkRecurrent(c, r, "mamba_num_heads", "n_groups")
	r.SSMCacheDtype = c.str("mamba_ssm_cache_dtype", nemotronHSSMDtype)
	if recurrentLayers(&s) > 0 {
		s.State = r
	}
	var latent int
	if hasMoELayer(&s) {
		s.MoE = readMoE(c, moeDefaults{experts: 8, perToken: 2, expertFFN: 7688})
		s.MoE.SharedFFN = c.count("moe_shared_expert_intermediate_size", 7688)
		if s.MoE.SharedFFN > 0 {
			s.MoE.SharedExperts = 1
		}
		latent = c.count("moe_latent_size", 0)
	}
	m.Text = s
	buildNemotronH(c, &m.Text, b, latent)
}

// hasMoELayer reports whether any layer of s is a mixture of experts.
func hasMoELayer(s *Stack) bool {
	for _, lt := range s.LayerTypes {
		if lt.MoE {
			return true
		}
	}
	return false
}

// buildNemotronH adds model.embeddings, per layer norm and mixer, then
// model.norm_f and lm_head.
func buildNemotronH(c *config, s *Stack, b *builder, latent int) {
	top := b.top(StackText)
	top.embedding(CompEmbedding, "model.embeddings", s.Vocab, s.Hidden)
	bias := c.boolean("use_bias", false)
	convBias := c.boolean("use_conv_bias", c.boolean("mamba_conv_bias", true))
	for _, r := range kindRuns(s) {
		g := b.layers(StackText, "model.layers", r.first, r.n)
		g.norm(CompNorm, "norm", s.Hidden, false)
		x := g.sub("mixer.")
		switch {
		case r.lt.State != "":
			mamba2Mixer(x, s.Hidden, s.State, bias, convBias, true)
		case r.lt.Attention == FullAttention:
			q, kv := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
			x.linear(CompAttention, "q_proj", "q_proj", s.Hidden, q, s.AttnBias)
			x.linear(CompAttention, "k_proj", "k_proj", s.Hidden, kv, s.AttnBias)
			x.linear(CompAttention, "v_proj", "v_proj", s.Hidden, kv, s.AttnBias)
			x.linear(CompAttention, "o_proj", "o_proj", q, s.Hidden, s.AttnBias)
		case r.lt.MoE:
			nemotronHMoE(x, s, latent)
		default:
			plainMLP(x, "up_proj", "down_proj", s.Hidden, s.Intermediate, s.MLPBias)
		}
	}
	top.norm(CompFinalNorm, "model.norm_f", s.Hidden, false)
	lmHead(b, s, "lm_head", false)
}

// nemotronHMoE adds NemotronHMoE: the router gate (weight only),
// routed experts with up_proj and down_proj in the latent space when
// moe_latent_size is set, the latent projections, and one shared expert.
func nemotronHMoE(x group, s *Stack, latent int) {
	moe := s.MoE
	x.linear(CompRouter, "gate", "gate", s.Hidden, moe.Experts, false)
	in := s.Hidden
	if latent > 0 {
		in = latent
		x.linear(CompMLP, "fc1_latent_proj", "fc1_latent_proj", s.Hidden, latent, s.MLPBias)
		x.linear(CompMLP, "fc2_latent_proj", "fc2_latent_proj", latent, s.Hidden, s.MLPBias)
	}
	e := x.sub("experts.")
	e.experts(CompExperts, "up_proj", "up_proj", moe.Experts, in, moe.ExpertFFN, false)
	e.experts(CompExperts, "down_proj", "down_proj", moe.Experts, moe.ExpertFFN, in, false)
	if moe.SharedFFN > 0 {
		sh := x.sub("shared_experts.")
		sh.linear(CompSharedExperts, "up_proj", "up_proj", s.Hidden, moe.SharedFFN, s.MLPBias)
		sh.linear(CompSharedExperts, "down_proj", "down_proj", moe.SharedFFN, s.Hidden, s.MLPBias)
	}
}
