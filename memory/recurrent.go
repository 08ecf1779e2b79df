package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// Linear-attention and SSM layers (model.LayerType.State) keep no KV
// cache: each sequence holds a fixed-size state per layer, the last inputs
// of a causal depthwise conv1d and a recurrent (SSM) state, whatever its
// length. Its size depends on the engine:
//
//   - vLLM (vllm-project/vllm:vllm/model_executor/layers/mamba/mamba_utils.py
//     at 02d710837549a368073552333f66d714477415d2, MambaStateShapeCalculator
//     and MambaStateDtypeCalculator): conv (conv_kernel − 1) × conv_dim/tp
//     in the model dtype (mamba_cache_dtype "auto"), Mamba-2 first
//     replicating B and C groups so each rank holds whole groups
//     (extra_groups_for_head_shards); recurrent heads/tp × head_dim ×
//     state_size in mamba_ssm_cache_dtype, which vLLM sets from the
//     config for Qwen3.5 (mamba_ssm_dtype) and Nemotron-H
//     (mamba_ssm_cache_dtype, float32 when unset)
//     (vllm/model_executor/models/config.py
//     Qwen3_5ForConditionalGenerationConfig, NemotronHForCausalLMConfig);
//     lightning attention keeps only heads/tp × head_dim × head_dim in the
//     model dtype (linear_attention_state_shape / _dtype).
//   - transformers: the hybrid caches keep the whole conv window,
//     conv_dim × conv_kernel, in the model dtype
//     (HybridMambaAttentionDynamicCache in
//     src/transformers/models/bamba/modeling_bamba.py and the models that
//     copy it; Qwen3-Next's conv state is F.pad(mixed_qkv, (K − L, 0)),
//     modular_qwen3_next.py at 043bb8dde14aae1a56b84cd230737cf5d0877912);
//     the Mamba caches keep the SSM state in the model dtype, while the
//     gated-DeltaNet kernels return their final state in fp32
//     (torch_chunk_gated_delta_rule computes in float32 and returns
//     last_recurrent_state uncast; fla's chunk_gated_delta_rule likewise)
//     and MiniMax's lightning attention builds its kv state with
//     torch.zeros(b, h, d, e).to(torch.float32) (modeling_minimax_m1.py in
//     MiniMax-AI/MiniMax-M1 at 2abb4f45a9df4154b4bde024d51874bd127edcee).

// stateSpec is the per-sequence state of the recurrent layers of a range
// of layers on one GPU.
type stateSpec struct {
	// layers counts the layers keeping a state.
	layers int
	// conv and ssm are one layer's conv window and recurrent state, in
	// bytes per sequence.
	conv, ssm int64
	// formula describes one layer's state for the breakdown.
	formula string
}

// perSeq is the state of one sequence over the layers.
func (s stateSpec) perSeq() int64 { return units.MulInt(int64(s.layers), s.conv+s.ssm) }

// page is one layer's state of one sequence (vLLM's MambaSpec page
// before padding).
func (s stateSpec) page() int64 { return s.conv + s.ssm }

// buildStateSpec sizes the recurrent state of layers [lo, hi) of st on one
// of tp ranks for engine, with act the model's compute dtype.
func buildStateSpec(st *model.Stack, lo, hi int, act DType, tp int, engine string) (stateSpec, error) {
	r := st.State
	var spec stateSpec
	if r == nil {
		return spec, nil
	}
	for i := lo; i < hi && i < st.Layers; i++ {
		if layerType(st, i).State != "" {
			spec.layers++
		}
	}
	if spec.layers == 0 {
		return spec, nil
	}
	tp = max(tp, 1)
	convDim := r.ConvDim()
	if engine == engineVLLM && r.Kind == model.Mamba2 && r.Groups%tp != 0 {
		// extra_groups_for_head_shards: each rank gets whole groups.
		convDim += 2 * (tp - r.Groups) * r.StateDim
	}
	if convDim%tp != 0 || r.Heads%tp != 0 {
		return spec, FieldErrorf("tp", "{tp=%d} does not divide the %d state heads (and %d conv channels) of the %s layers", tp, r.Heads, convDim, r.Kind)
	}
	ab := act.BytesPerElement()
	window := r.ConvKernel
	ssmBytes := ab
	switch engine {
	case engineVLLM:
		window = max(r.ConvKernel-1, 0)
		if r.Kind != model.LightningAttention && r.SSMCacheDtype != "" {
			d, err := ParseDType(r.SSMCacheDtype)
			if err != nil {
				return spec, fmt.Errorf("mamba_ssm_cache_dtype of %s: %w", r.Kind, err)
			}
			ssmBytes = d.BytesPerElement()
		}
	default:
		if r.Kind == model.GatedDeltaNet || r.Kind == model.LightningAttention {
			ssmBytes = fp32Bytes
		}
	}
	convCh := convDim / tp
	heads := r.Heads / tp
	spec.conv = int64(units.FromFloat(float64(convCh) * float64(window) * ab))
	spec.ssm = int64(units.FromFloat(float64(heads) * float64(r.HeadDim) * float64(r.StateDim) * ssmBytes))
	spec.formula = fmt.Sprintf("conv %d ch × %d × %gB + state %d heads × %d × %d × %gB", convCh, window, ab, heads, r.HeadDim, r.StateDim, ssmBytes)
	if window == 0 || convCh == 0 {
		spec.formula = fmt.Sprintf("state %d heads × %d × %d × %gB", heads, r.HeadDim, r.StateDim, ssmBytes)
	}
	return spec, nil
}

// stateRow is the recurrent state of batch sequences: a row of the
// inference breakdown for a model with linear-attention or SSM layers.
func (c phaseContext) stateRow(phase string) (Component, bool) {
	s := c.state
	if s.layers == 0 || c.in.noKV || c.in.encoderOnly {
		return Component{}, false
	}
	b := units.Bytes(units.MulInt(s.perSeq(), c.in.batch))
	r := Component{Name: "recurrent_state", Bytes: b, Level: "allocated", Phase: phase}
	if !c.in.quiet {
		r.Formula = fmt.Sprintf("batch %d × %d recurrent layers × (%s), independent of the sequence length", c.in.batch, s.layers, s.formula)
		r.Source = srcState
	}
	return r, true
}

// srcState cites the state sizes.
const srcState = "vllm-project/vllm:vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator; " +
	"transformers hybrid caches (modeling_bamba.py HybridMambaAttentionDynamicCache, modular_qwen3_next.py)"

// checkRecurrent refuses training jobs the recurrent layers make
// unknowable, and says what a hybrid training estimate assumes.
func (s *setup) checkRecurrent() error {
	r := s.m.Text.State
	if r == nil {
		return nil
	}
	switch r.Kind {
	case model.LightningAttention:
		// MiniMaxM1LightningAttention.forward calls its inference path only
		// when not training and returns nothing otherwise.
		return fmt.Errorf("%s: training is not modelled: the lightning-attention layers have no training path in the model's code (modeling_minimax_m1.py)", s.m.ID)
	case model.Mamba1:
		return fmt.Errorf("%s: training activations of Mamba-1 layers are not modelled", s.m.ID)
	}
	if s.method == MethodLoRA || s.method == MethodQLoRA {
		s.warn(fmt.Sprintf("%s mixes attention and %s layers: adapter activations are counted alike in every layer, from the projections the targets match in the stack", s.m.ID, r.Kind))
	}
	return nil
}

// hybridSplit corrects a layer's activation parts for its hybrid kind:
// a recurrent mixer saves what its kernels keep for backward instead of
// (or besides) attention; a layer without an MLP saves nothing for one; a
// layer that is only an MLP (Nemotron-H's "-" and "E" blocks) has one
// norm, the MLP's.
func hybridSplit(st *model.Stack, lt model.LayerType, r *actRegime, fl *gradFlow, p *layerSplit) {
	if lt.Attention == model.NoSelfAttention && !lt.CrossAttention {
		p.attn = layerAct{}
		if lt.State == "" {
			p.attnNorm = 0
		}
	}
	if lt.State != "" && fl.attn {
		p.attn.lin += recurrentAct(st, r)
	}
	if lt.NoFFN {
		p.mlp, p.mlpNorm = 0, 0
	}
}

// recurrentAct is what one token leaves saved for backward in a
// recurrent mixer, in bytes before tensor parallelism, with c the bytes of
// a compute-dtype element (the mixer's input is its norm's output, counted
// with the norm):
//
//   - Mamba-2 trains through mamba_split_conv1d_scan_combined
//     (state-spaces/mamba:mamba_ssm/ops/triton/ssd_combined.py,
//     MambaSplitConv1dScanCombinedFn.forward save_for_backward: zxbcdt,
//     out_x, rstd and weights), which the Mamba-2, Bamba, Nemotron-H and
//     GraniteMoeHybrid modeling files call when training: the in_proj
//     output z, x, B, C, dt (2·d_inner + 2·groups·d_state + heads), the
//     scan output before the gated norm (d_inner) and the norm's rstd per
//     group in fp32;
//   - gated DeltaNet (Qwen3-Next, Qwen3.5) calls fla's
//     chunk_gated_delta_rule (fla-org/flash-linear-attention:
//     fla/ops/gated_delta_rule/chunk.py ChunkGatedDeltaRuleFunction saves
//     q, q_rstd, k, k_rstd, v, g, beta and A): q and k repeated to the value
//     heads (value_heads·head_k_dim each), v, the fp32 cumulated gate g and
//     the l2-norm rstd of q and k (value_heads each), beta (value_heads) and
//     the chunk's WY matrix A (value_heads × 64); around it causal_conv1d
//     keeps its input (conv_dim), the gated RMSNorm its input and gate z
//     (value_heads·head_v_dim each), and out_proj its input (the same
//     width); softplus keeps its fp32 input a (value_heads).
func recurrentAct(st *model.Stack, r *actRegime) float64 {
	s := st.State
	c := r.c
	inner, conv, heads := float64(s.Heads*s.HeadDim), float64(s.ConvDim()), float64(s.Heads)
	switch s.Kind {
	case model.Mamba2:
		return c*(2*inner+2*float64(s.Groups*s.StateDim)+heads) + c*inner + fp32Bytes*float64(s.Groups)
	case model.GatedDeltaNet:
		qk := 2 * heads * float64(s.StateDim)
		return c*(conv+qk+inner+heads+heads*gdnChunk+3*inner) + fp32Bytes*4*heads
	}
	return 0
}

// gdnChunk is the chunk length of fla's gated-DeltaNet kernels (BT = 64
// in chunk_gated_delta_rule_fwd), the last dimension of the saved A.
const gdnChunk = 64
