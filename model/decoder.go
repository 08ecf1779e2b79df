package model

import "fmt"

// dims are the defaults a family's configuration class gives to keys a
// config.json may leave out; 0 makes a key required.
type dims struct {
	hidden, layers, heads, kvHeads, headDim, inter, vocab, maxPos int
	tied                                                          bool
	act                                                           string
}

// readStack reads the dimensions every transformer stack has, filling
// absent keys from d, and checks that they fit together.
func readStack(c *config, d dims) Stack {
	noteDefaults(c, d)
	var s Stack
	s.Hidden = c.dim("hidden_size", d.hidden)
	s.Layers = c.layers("num_hidden_layers", d.layers)
	s.Heads = c.dim("num_attention_heads", d.heads)
	kv := d.kvHeads
	if kv == 0 {
		kv = s.Heads // every *Config sets num_key_value_heads = num_attention_heads when unset
	}
	s.KVHeads = c.dim("num_key_value_heads", kv)
	hd := d.headDim
	if hd == 0 && s.Heads > 0 {
		hd = s.Hidden / s.Heads
		if !c.has("head_dim") && s.Hidden%s.Heads != 0 {
			c.fail("num_attention_heads", fmt.Sprintf("a divisor of hidden_size (%d) when head_dim is unset", s.Hidden), s.Heads)
		}
	}
	s.HeadDim = c.dim("head_dim", max(hd, 1))
	s.Intermediate = c.dim("intermediate_size", d.inter)
	s.Vocab = c.dim("vocab_size", d.vocab)
	s.MaxPositions = c.intIn("max_position_embeddings", d.maxPos, 0, maxPositions)
	s.TiedEmbeddings = c.boolean("tie_word_embeddings", d.tied)
	act := d.act
	if act == "" {
		act = "silu"
	}
	s.Activation = c.str("hidden_act", c.str("hidden_activation", act))
	s.Norm, s.MLP, s.Causal = RMSNorm, GatedMLP, true
	if s.KVHeads > 0 && s.Heads > 0 && (s.KVHeads > s.Heads || s.Heads%s.KVHeads != 0) {
		c.fail("num_key_value_heads", fmt.Sprintf("a divisor of num_attention_heads (%d)", s.Heads), s.KVHeads)
	}
	s.LayerTypes = uniformLayers(s.Layers, FullAttention)
	return s
}

// noteDefaults warns about the core dimensions c leaves to the family's
// defaults (a sparse text_config, say): the counts then rest on them.
func noteDefaults(c *config, d dims) {
	for _, k := range []struct {
		key string
		def int
	}{{"hidden_size", d.hidden}, {"num_hidden_layers", d.layers}, {"num_attention_heads", d.heads},
		{"intermediate_size", d.inter}, {"vocab_size", d.vocab}} {
		if k.def > 1 && !c.has(k.key) {
			c.warnf("%s%s not set: using the architecture's default %d", c.prefix, k.key, k.def)
		}
	}
}

// uniformLayers returns n layers of one attention kind.
func uniformLayers(n int, kind AttnKind) []LayerType {
	lt := make([]LayerType, n)
	for i := range lt {
		lt[i].Attention = kind
	}
	return lt
}

// readLayerTypes applies config.json's layer_types list (transformers ≥
// 4.54 writes it for hybrid models) to s, if present.
func readLayerTypes(c *config, s *Stack) {
	names := c.strs("layer_types")
	if names == nil {
		return
	}
	if len(names) != s.Layers {
		c.fail("layer_types", fmt.Sprintf("%d entries (num_hidden_layers)", s.Layers), len(names))
		return
	}
	for i, n := range names {
		switch n {
		case "full_attention":
			s.LayerTypes[i].Attention = FullAttention
		case "sliding_attention":
			s.LayerTypes[i].Attention = SlidingAttention
		case "chunked_attention":
			s.LayerTypes[i].Attention = ChunkedAttention
		default:
			c.fail(fmt.Sprintf("layer_types[%d]", i), `"full_attention", "sliding_attention" or "chunked_attention"`, n)
			return
		}
	}
}

// slidingAll marks every layer sliding when the config sets a sliding
// window (Mistral), reading sliding_window with the given default.
func slidingAll(c *config, s *Stack, def int) {
	s.SlidingWindow = c.count("sliding_window", def)
	if s.SlidingWindow > 0 && (s.MaxPositions == 0 || s.SlidingWindow < s.MaxPositions) {
		s.LayerTypes = uniformLayers(s.Layers, SlidingAttention)
	}
}

// attnOpts says how a family's self-attention block is built.
type attnOpts struct {
	qkvBias, oBias bool
	// qNorm and kNorm are the widths of RMSNorms on queries and keys: the
	// head dim for per-head norms (Qwen3, Gemma3), the projection width for
	// OLMoE's full-width norms; 0 when absent.
	qNorm, kNorm int
	// fused is true for one qkv_proj Linear (Phi-3).
	fused bool
	// sinks adds a learned per-head attention sink (gpt-oss).
	sinks bool
	// perHeadNorms makes q_layernorm/k_layernorm one LayerNorm (no bias)
	// per head, as StableLM's StableLmLayerNormPerHead.
	perHeadNorms bool
}

// selfAttention adds q/k/v/o projections (and norms) under "self_attn.".
func selfAttention(g group, s *Stack, o attnOpts) {
	a := g.sub("self_attn.")
	q, kv := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	if o.fused {
		a.linear(CompAttention, "qkv_proj", "qkv_proj", s.Hidden, q+2*kv, o.qkvBias)
	} else {
		a.linear(CompAttention, "q_proj", "q_proj", s.Hidden, q, o.qkvBias)
		a.linear(CompAttention, "k_proj", "k_proj", s.Hidden, kv, o.qkvBias)
		a.linear(CompAttention, "v_proj", "v_proj", s.Hidden, kv, o.qkvBias)
	}
	a.linear(CompAttention, "o_proj", "o_proj", q, s.Hidden, o.oBias)
	if o.qNorm > 0 {
		a.norm(CompNorm, "q_norm", o.qNorm, false)
	}
	if o.kNorm > 0 {
		a.norm(CompNorm, "k_norm", o.kNorm, false)
	}
	if o.perHeadNorms {
		a.norm(CompNorm, "q_layernorm", s.Heads*s.HeadDim, false)
		a.norm(CompNorm, "k_layernorm", s.KVHeads*s.HeadDim, false)
	}
	if o.sinks {
		a.param(CompAttention, KindParam, "sinks", int64(s.Heads))
	}
}

// gatedMLP adds gate/up/down projections of width f under g's prefix.
func gatedMLP(g group, comp string, h, f int, bias bool) {
	g.linear(comp, "gate_proj", "gate_proj", h, f, bias)
	g.linear(comp, "up_proj", "up_proj", h, f, bias)
	g.linear(comp, "down_proj", "down_proj", f, h, bias)
}

// gatedExperts adds e routed SwiGLU experts of width f under g's prefix
// ("experts.*.gate_proj", ...).
func gatedExperts(g group, e, h, f int) {
	x := g.sub("experts.*.")
	x.experts(CompExperts, "gate_proj", "gate_proj", e, h, f, false)
	x.experts(CompExperts, "up_proj", "up_proj", e, h, f, false)
	x.experts(CompExperts, "down_proj", "down_proj", e, f, h, false)
}

// decoderSpec describes a Llama-style decoder: embed_tokens, layers of
// norm + self_attn + norm + mlp, a final norm and lm_head.
type decoderSpec struct {
	base string // module prefix of the decoder, e.g. "model"
	head string // name of the output projection, e.g. "lm_head"
	attn attnOpts
	// sandwich adds Gemma2/3's pre_feedforward_layernorm and
	// post_feedforward_layernorm (four norms per layer).
	sandwich bool
	mlpBias  bool
	// normBias makes the layer and final norms LayerNorms with bias.
	normBias bool
	// noPostNorm drops post_attention_layernorm (parallel residual blocks).
	noPostNorm bool
	// mlp builds the FFN of a run of layers (g names the layer; moe says
	// whether they are MoE layers); nil means a dense gated "mlp." of
	// width s.Intermediate.
	mlp func(g group, moe bool)
}

// buildDecoder adds the modules of a Llama-style decoder for stack s.
func buildDecoder(b *builder, s *Stack, d decoderSpec) {
	top := b.top(StackText)
	top.embedding(CompEmbedding, d.base+".embed_tokens", s.Vocab, s.Hidden)
	for _, r := range moeRuns(s) {
		g := b.layers(StackText, d.base+".layers", r.first, r.n)
		g.norm(CompNorm, "input_layernorm", s.Hidden, d.normBias)
		selfAttention(g, s, d.attn)
		if !d.noPostNorm {
			g.norm(CompNorm, "post_attention_layernorm", s.Hidden, d.normBias)
		}
		if d.sandwich {
			g.norm(CompNorm, "pre_feedforward_layernorm", s.Hidden, false)
			g.norm(CompNorm, "post_feedforward_layernorm", s.Hidden, false)
		}
		if d.mlp != nil {
			d.mlp(g, r.moe)
		} else {
			gatedMLP(g.sub("mlp."), CompMLP, s.Hidden, s.Intermediate, d.mlpBias)
		}
	}
	top.norm(CompFinalNorm, d.base+".norm", s.Hidden, d.normBias)
	lmHead(b, s, d.head, false)
}

// lmHead adds the output projection unless it is tied to the input
// embedding (then PyTorch holds one tensor, counted once).
func lmHead(b *builder, s *Stack, name string, bias bool) {
	if s.TiedEmbeddings {
		return
	}
	b.top(StackText).linear(CompLMHead, name, "lm_head", s.Hidden, s.Vocab, bias)
}

// layerRun is a run of consecutive layers with the same FFN kind.
type layerRun struct {
	first, n int
	moe      bool
}

// moeRuns splits s's layers into runs of dense and MoE layers.
func moeRuns(s *Stack) []layerRun {
	return runsBy(s.Layers, func(i int) bool { return s.LayerTypes[i].MoE })
}

// runsBy splits [0, n) into maximal runs with the same value of f.
func runsBy(n int, f func(i int) bool) []layerRun {
	var out []layerRun
	for i := 0; i < n; i++ {
		v := f(i)
		if len(out) > 0 && out[len(out)-1].moe == v {
			out[len(out)-1].n++
			continue
		}
		out = append(out, layerRun{first: i, n: 1, moe: v})
	}
	return out
}
