package model

// NormKind is the normalisation a stack uses.
type NormKind string

// Normalisation kinds.
const (
	RMSNorm   NormKind = "rmsnorm"
	LayerNorm NormKind = "layernorm"
)

// MLPKind says whether the feed-forward block is gated (SwiGLU/GeGLU: gate,
// up and down projections) or plain (up, activation, down).
type MLPKind string

// MLP kinds.
const (
	GatedMLP MLPKind = "gated"
	PlainMLP MLPKind = "plain"
)

// AttnKind is the kind of self-attention one layer runs.
type AttnKind string

// Attention kinds.
const (
	FullAttention    AttnKind = "full"    // attends to every earlier (or every) position
	SlidingAttention AttnKind = "sliding" // attends to the last SlidingWindow positions
	ChunkedAttention AttnKind = "chunked" // Llama-4 style local chunks of AttentionChunk
	NoSelfAttention  AttnKind = "none"    // e.g. an mllama cross-attention-only layer
)

// StateKind is the kind of recurrent sequence mixer a layer runs instead
// of (or beside) attention: linear attention or a state-space model. Such
// a layer keeps a fixed-size state per sequence (Stack.State) instead of a
// KV cache that grows with the tokens.
type StateKind string

// Recurrent mixer kinds.
const (
	// Mamba1 is the selective SSM of Mamba (arXiv:2312.00752): a causal
	// conv1d over d_inner channels and a d_inner × d_state state.
	Mamba1 StateKind = "mamba"
	// Mamba2 is the SSD layer of Mamba-2 (arXiv:2405.21060): a causal
	// conv1d over x, B and C and a heads × head_dim × d_state state.
	Mamba2 StateKind = "mamba2"
	// GatedDeltaNet is gated DeltaNet linear attention (arXiv:2412.06464,
	// Qwen3-Next, Qwen3.5): a causal conv1d over q, k and v and a
	// value-heads × head_v_dim × head_k_dim state.
	GatedDeltaNet StateKind = "gated_deltanet"
	// LightningAttention is MiniMax's linear attention (arXiv:2501.08313):
	// no conv, a heads × head_dim × head_dim state.
	LightningAttention StateKind = "lightning"
)

// Model is the architecture description every estimator reads. It is built
// from a Hugging Face config.json by [Parse] and carries both the shape of
// each stack and an exact inventory of its parameters.
type Model struct {
	// ID is the name the model was loaded by: a catalog id, a Hub id or a path.
	ID string `json:"model"`
	// Architecture is architectures[0] of config.json, e.g. "LlamaForCausalLM".
	Architecture string `json:"architecture"`
	// ModelType is config.json's model_type (of the top-level config).
	ModelType string `json:"model_type"`
	// TorchDtype is the checkpoint's torch_dtype / dtype ("bfloat16", ...), empty if unstated.
	TorchDtype string `json:"torch_dtype,omitempty"`

	// Text is the language model: the decoder of a decoder-only or
	// encoder-decoder model, or the encoder of an encoder-only model (BERT).
	Text Stack `json:"text"`
	// Encoder is the encoder of an encoder-decoder model (T5, BART); nil otherwise.
	Encoder *Stack `json:"encoder,omitempty"`
	// Vision is the vision tower of a VLM; nil otherwise.
	Vision *Vision `json:"vision,omitempty"`

	// Modules is the parameter inventory: every parameter tensor group of
	// the model, in module order. Parameter totals are sums over it.
	Modules []Module `json:"modules"`

	// Quant describes a pre-quantized checkpoint (quantization_config); nil if none.
	Quant *Quantization `json:"quantization,omitempty"`

	// NoLMHead is true for a checkpoint without an output head over the
	// vocabulary: a base model saved as such (architectures[0]
	// "Qwen3Model", "LlamaModel", "BertModel", ...), as embedding models
	// are. Such a model computes no vocabulary logits and no language-model
	// loss; Text.Vocab is still the size of its input embedding.
	NoLMHead bool `json:"no_lm_head,omitempty"`

	// Warnings are non-fatal notes made while reading the config (defaults
	// filled in, generic reading of an unknown model_type, ...).
	Warnings []string `json:"warnings,omitempty"`
}

// Stack is one transformer stack: its dimensions and per-layer structure.
type Stack struct {
	// Layers is the number of transformer layers.
	Layers int `json:"num_hidden_layers"`
	// Hidden is the residual-stream width h.
	Hidden int `json:"hidden_size"`
	// Heads is the number of query heads a.
	Heads int `json:"num_attention_heads"`
	// KVHeads is the number of key/value heads k (k = a without GQA/MQA;
	// for MLA, the number of heads the latent is expanded to).
	KVHeads int `json:"num_key_value_heads"`
	// HeadDim is the width of one query/key head (MLA: nope + rope dims);
	// it need not be Hidden/Heads (Gemma, Qwen3).
	HeadDim int `json:"head_dim"`
	// Intermediate is the dense FFN width (width of one branch when gated).
	Intermediate int `json:"intermediate_size"`
	// Vocab is the vocabulary size; 0 for stacks without an embedding (vision).
	Vocab int `json:"vocab_size"`
	// MaxPositions is max_position_embeddings, 0 when unstated.
	MaxPositions int `json:"max_position_embeddings,omitempty"`
	// SlidingWindow is the window of SlidingAttention layers, in tokens.
	SlidingWindow int `json:"sliding_window,omitempty"`
	// AttentionChunk is the chunk size of chunked-attention layers (Llama 4).
	AttentionChunk int `json:"attention_chunk_size,omitempty"`

	// TiedEmbeddings is true when the output head shares the input
	// embedding matrix (no separate lm_head parameters).
	TiedEmbeddings bool `json:"tie_word_embeddings"`
	// Norm is the normalisation the layers use.
	Norm NormKind `json:"norm"`
	// MLP says whether the dense FFN is gated.
	MLP MLPKind `json:"mlp"`
	// Activation is the FFN activation as named in config.json.
	Activation string `json:"hidden_act,omitempty"`
	// Causal is true for decoders (causal self-attention), false for encoders.
	Causal bool `json:"causal"`
	// ParallelBlock is true when attention and MLP read the same input
	// (GPT-J, GPT-NeoX parallel residual, Falcon, Phi-2).
	ParallelBlock bool `json:"parallel_block,omitempty"`
	// QKNorm is true when queries and keys are normalised (Qwen3, Gemma 3, OLMoE).
	QKNorm bool `json:"qk_norm,omitempty"`
	// AttnBias is true when the q/k/v projections have biases.
	AttnBias bool `json:"attention_bias,omitempty"`
	// OutBias is true when the attention output projection has a bias.
	OutBias bool `json:"o_proj_bias,omitempty"`
	// MLPBias is true when the FFN projections have biases.
	MLPBias bool `json:"mlp_bias,omitempty"`

	// LayerTypes has one entry per layer (len == Layers).
	LayerTypes []LayerType `json:"layer_types"`

	// MoE describes the mixture-of-experts layers; nil for dense stacks.
	MoE *MoE `json:"moe,omitempty"`
	// MLA describes multi-head latent attention; nil for standard attention.
	MLA *MLA `json:"mla,omitempty"`
	// State describes the per-sequence state of the recurrent layers
	// (LayerType.State); nil when the stack has none.
	State *RecurrentState `json:"recurrent_state,omitempty"`
}

// LayerType is the structure of one layer of a stack.
type LayerType struct {
	Attention AttnKind `json:"attention"`
	// CrossAttention is true when the layer also attends to another stream
	// (encoder-decoder decoders, mllama cross-attention layers).
	CrossAttention bool `json:"cross_attention,omitempty"`
	// MoE is true when the layer's FFN is a mixture of experts.
	MoE bool `json:"moe,omitempty"`
	// NoPE is true when the layer applies no rotary position embedding
	// (SmolLM3's no_rope_layers, the global layers of Cohere2 and
	// EXAONE 4). It changes no size; it is reported as the layer reads.
	NoPE bool `json:"nope,omitempty"`
	// FFN is the width of this layer's dense feed-forward block (one
	// branch when gated) when the layers of a stack differ (the Nemotron
	// NAS models' per-layer ffn_mult); 0 means Stack.Intermediate.
	FFN int `json:"ffn_width,omitempty"`
	// NoFFN is true when the layer has no feed-forward block at all (a
	// Mamba block, a Nemotron-H mixer-only layer, a Nemotron NAS "no_op"
	// FFN).
	NoFFN bool `json:"no_ffn,omitempty"`
	// KVHeads and HeadDim override the stack's num_key_value_heads and
	// head_dim for this layer's attention (Gemma 4's full-attention
	// layers); 0 keeps the stack's.
	KVHeads int `json:"num_key_value_heads,omitempty"`
	HeadDim int `json:"head_dim,omitempty"`
	// SharedKV is true when the layer attends with the keys and values of
	// an earlier layer and caches none of its own (Gemma 4's
	// num_kv_shared_layers).
	SharedKV bool `json:"shared_kv,omitempty"`
	// State is the layer's recurrent mixer (linear attention or an SSM),
	// which keeps a fixed-size state per sequence described by
	// Stack.State; "" for none. A Mamba layer has Attention
	// NoSelfAttention; a Falcon-H1 layer runs both.
	State StateKind `json:"state,omitempty"`
}

// RecurrentState is the fixed-size state one sequence keeps in each
// recurrent layer: the last ConvKernel−1 inputs of a causal depthwise
// conv1d over ConvDim() channels, and a Heads × HeadDim × StateDim
// recurrent (SSM) state. The shapes follow
// vllm-project/vllm:vllm/model_executor/layers/mamba/mamba_utils.py
// MambaStateShapeCalculator (at 02d710837549a368073552333f66d714477415d2):
//
//   - Mamba-1: conv d_inner × (K−1), state d_inner × d_state (Heads = d_inner, HeadDim = 1);
//   - Mamba-2: conv (d_inner + 2·n_groups·d_state) × (K−1), state heads × head_dim × d_state;
//   - gated DeltaNet: conv (2·key_heads·head_k_dim + value_heads·head_v_dim) × (K−1),
//     state value_heads × head_v_dim × head_k_dim;
//   - lightning attention: no conv, state heads × head_dim × head_dim.
type RecurrentState struct {
	// Kind is the mixer the state belongs to.
	Kind StateKind `json:"kind"`
	// Heads, HeadDim and StateDim give the recurrent state of one layer:
	// Heads × HeadDim × StateDim elements per sequence.
	Heads    int `json:"num_heads"`
	HeadDim  int `json:"head_dim"`
	StateDim int `json:"state_size"`
	// Groups is Mamba-2's n_groups (B and C are shared within a group) or
	// DeltaNet's number of key heads; 0 for Mamba-1 and lightning attention.
	Groups int `json:"n_groups,omitempty"`
	// ConvKernel is the causal conv1d's kernel width; 0 without a conv.
	ConvKernel int `json:"conv_kernel,omitempty"`
	// SSMCacheDtype is the recurrent state's dtype the checkpoint's
	// config asks serving engines for (mamba_ssm_cache_dtype, e.g.
	// "float32"); empty when unstated.
	SSMCacheDtype string `json:"mamba_ssm_cache_dtype,omitempty"`
}

// ConvDim is the number of channels of the causal conv1d whose last
// ConvKernel−1 inputs the state keeps (0 without a conv): heads·head_dim
// plus B and C (Mamba-2) or q and k (DeltaNet) of 2·groups·state_size.
func (r *RecurrentState) ConvDim() int {
	if r == nil || r.ConvKernel == 0 {
		return 0
	}
	return r.Heads*r.HeadDim + 2*r.Groups*r.StateDim
}

// MoE describes the mixture-of-experts FFN layers of a stack.
type MoE struct {
	// Experts is the number of routed experts per MoE layer.
	Experts int `json:"num_experts"`
	// ExpertsPerToken is the number of routed experts each token uses (top-k).
	ExpertsPerToken int `json:"num_experts_per_tok"`
	// ExpertFFN is the FFN width of one routed expert (one branch when gated).
	ExpertFFN int `json:"moe_intermediate_size"`
	// SharedExperts is the number of always-active shared experts.
	SharedExperts int `json:"n_shared_experts,omitempty"`
	// SharedFFN is the width of all shared experts together.
	SharedFFN int `json:"shared_expert_intermediate_size,omitempty"`
	// DenseLayers is the number of leading dense layers (DeepSeek first_k_dense_replace).
	DenseLayers int `json:"first_k_dense_replace,omitempty"`
	// RouterBias is true when the router Linear has a bias (gpt-oss).
	RouterBias bool `json:"router_bias,omitempty"`
}

// MLA describes DeepSeek multi-head latent attention.
type MLA struct {
	// QLoRARank is the rank of the query down-projection; 0 when q is
	// projected directly (DeepSeek-V2-Lite).
	QLoRARank int `json:"q_lora_rank"`
	// KVLoRARank is the width of the compressed KV latent (what the KV cache holds).
	KVLoRARank int `json:"kv_lora_rank"`
	// QKNopeDim is the per-head query/key width without rotary embedding.
	QKNopeDim int `json:"qk_nope_head_dim"`
	// QKRopeDim is the per-head rotary width (the decoupled key is shared by all heads).
	QKRopeDim int `json:"qk_rope_head_dim"`
	// VHeadDim is the per-head value width.
	VHeadDim int `json:"v_head_dim"`
	// IndexerHeads, IndexerHeadDim and IndexerTopK describe the lightning
	// indexer of DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): it
	// scores every cached token with IndexerHeads query heads against one
	// cached key of IndexerHeadDim per token, and the layer attends to the
	// IndexerTopK best. All 0 for dense MLA.
	IndexerHeads   int `json:"index_n_heads,omitempty"`
	IndexerHeadDim int `json:"index_head_dim,omitempty"`
	IndexerTopK    int `json:"index_topk,omitempty"`
	// IndexerLayers marks the layers that run their own indexer (and cache
	// its keys); nil means every layer does. GLM-5's "shared" layers reuse
	// the previous layer's selection.
	IndexerLayers []bool `json:"indexer_layers,omitempty"`
}

// HasIndexer reports whether layer i runs its own DSA indexer (and caches
// its keys).
func (m *MLA) HasIndexer(i int) bool {
	if m == nil || m.IndexerHeads == 0 {
		return false
	}
	return m.IndexerLayers == nil || (i < len(m.IndexerLayers) && m.IndexerLayers[i])
}

// Vision is the vision tower of a VLM and how images become LLM tokens.
type Vision struct {
	Stack
	ImageSize int `json:"image_size"`
	PatchSize int `json:"patch_size"`
	// SpatialMerge is the side of the square of patches merged into one LLM
	// token (Qwen2-VL: 2); 1 when patches map to tokens one to one.
	SpatialMerge int `json:"spatial_merge_size,omitempty"`
	// TemporalPatch is the number of frames an image is repeated into (Qwen2-VL: 2).
	TemporalPatch int `json:"temporal_patch_size,omitempty"`
	// TokensPerImage is the number of LLM tokens one image at the
	// processor's default size becomes (Image(0).Tokens).
	TokensPerImage int `json:"tokens_per_image"`

	// Tower names the tower: its vision_config model_type, or the
	// family's tower when the wrapper fixes it.
	Tower string `json:"tower,omitempty"`
	// Resize is ResizeFixed (empty) or ResizeNative; tiled towers set Tiling.
	Resize string `json:"resize,omitempty"`
	// MaxImageSize caps the side of a ResizeNative image; 0 when uncapped.
	MaxImageSize int `json:"max_image_size,omitempty"`
	// Tiling says how an image is cut into ImageSize tiles; nil when the
	// tower sees the whole image.
	Tiling *Tiling `json:"tiling,omitempty"`
	// ImageTokens, TileTokens and RowTokens are the special tokens the
	// processor adds per image (start/end markers), per tile and per row
	// of merged patches (Pixtral's [IMG_BREAK]).
	ImageTokens int `json:"image_special_tokens,omitempty"`
	TileTokens  int `json:"tile_special_tokens,omitempty"`
	RowTokens   int `json:"row_special_tokens,omitempty"`
}

// Module is one group of identical parameter tensors: one module kind
// repeated over layers (and experts). Instances copies of Each parameters.
type Module struct {
	// Name is the dotted module path with "*" for the repeated index, e.g.
	// "model.layers.*.self_attn.q_proj".
	Name string `json:"name"`
	// Params is the total over all instances.
	Params int64 `json:"params"`
	// Component groups modules for tables: embedding, attention, mlp,
	// experts, shared_experts, router, norm, final_norm, lm_head, vision,
	// projector, other.
	Component string `json:"component"`
	// Stack is "text", "encoder", "vision" or "projector".
	Stack string `json:"stack"`
	// Instances is how many copies exist (layers × experts per layer).
	Instances int `json:"instances"`
	// Each is the parameter count of one instance (weight + bias).
	Each int64 `json:"each"`
	// In and Out are the feature sizes of a Linear; both 0 otherwise.
	In  int `json:"in_features,omitempty"`
	Out int `json:"out_features,omitempty"`
	// Bias is true when the Linear has a bias (included in Each).
	Bias bool `json:"bias,omitempty"`
	// Expert is true for routed expert weights (inactive for most tokens).
	Expert bool `json:"expert,omitempty"`
	// Experts is the number of routed experts per layer the group spans
	// (Instances = Layers × Experts); 0 for non-expert modules.
	Experts int `json:"experts,omitempty"`
	// Kind is what the tensors are: "linear", "embedding", "norm", "conv"
	// or "param" (a bare parameter such as attention sinks or a gate).
	Kind string `json:"kind"`
	// Short is the canonical PEFT-style name of a Linear ("q_proj",
	// "gate_proj", "qkv_proj", "c_attn", ...) that --lora-target-modules
	// matches against; empty for other kinds.
	Short string `json:"short,omitempty"`
	// Layer is the first layer index this group covers, or -1 for
	// modules outside the layers; Layers is how many consecutive layers.
	Layer  int `json:"layer"`
	Layers int `json:"layers,omitempty"`
}

// Quantization is the quantization_config of a pre-quantized checkpoint.
type Quantization struct {
	// Method is quant_method: "gptq", "awq", "bitsandbytes", "fp8", "mxfp4", ...
	Method string `json:"quant_method"`
	// Bits is the weight width in bits (4, 8).
	Bits int `json:"bits,omitempty"`
	// GroupSize is the number of weights sharing one scale (GPTQ/AWQ), or
	// the block edge for block-scaled fp8 (DeepSeek: 128).
	GroupSize int `json:"group_size,omitempty"`
	// SkipModules lists modules kept unquantized (modules_to_not_convert).
	SkipModules []string `json:"modules_to_not_convert,omitempty"`
	// Raw holds any other keys as read.
	Raw map[string]any `json:"raw,omitempty"`
}
