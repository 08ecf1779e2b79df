package memory

import (
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/model"
)

// torchao float8 training (Job.Float8): convert_to_float8_training swaps
// the Linears for Float8Linear (torchao/float8/float8_linear.py @v0.13.0),
// whose matmul_with_hp_or_float8_args saves the high-precision input and
// weight for backward (ctx.save_for_backward(input_hp, weight_hp_t)) and
// casts them to float8 (one byte per element, with fp32 scales) inside
// each matmul, forward and backward: the saved activations are a bf16
// Linear's, and each matmul adds short-lived float8 copies. With
// enable_fsdp_float8_all_gather (tensorwise scaling only), FSDP2
// all-gathers the weights already cast to float8
// (fsdp_utils.py WeightWithDynamicFloat8CastTensor fsdp_pre_all_gather),
// so a gathered unit holds one byte per Linear weight.

// Float8 recipes (torchao/float8/config.py Float8LinearRecipeName).
const (
	float8Tensorwise      = "tensorwise"
	float8Rowwise         = "rowwise"
	float8RowwiseGWHP     = "rowwise_with_gw_hp"
	float8MinCapability   = 89 // SM 8.9 (Ada, Hopper and later): torchtitan's Float8LinearConverter check
	float8AlignedElements = 16 // torchtitan skips Linears with a dim not divisible by 16
)

// resolveFloat8 reads Float8 and Float8AllGather.
func (s *setup) resolveFloat8() error {
	j := s.job
	r := strings.ReplaceAll(fold(j.Float8), "-", "_")
	switch r {
	case "", "none", "false":
		if j.Float8AllGather {
			s.warn("enable_fsdp_float8_all_gather without float8: no Linear is float8, nothing changes")
		}
		return nil
	case "true", float8Tensorwise, "all_tensorwise":
		r = float8Tensorwise
	case float8Rowwise, "all_axiswise", "axiswise":
		r = float8Rowwise
	case float8RowwiseGWHP, "lw_axiswise_with_gw_hp":
		r = float8RowwiseGWHP
	default:
		return FieldErrorf("float8", "{float8}: unknown recipe %q (want tensorwise, rowwise or rowwise_with_gw_hp)", j.Float8)
	}
	if c := j.GPUComputeCapability; c > 0 && c < float8MinCapability {
		return FieldErrorf("float8", "{float8=%s}: float8 matmuls need compute capability 8.9 or later (torchtitan's Float8LinearConverter); %s has %d.%d", r, cond(j.GPU == "", "the GPU", j.GPU), c/10, c%10)
	}
	if s.method == MethodQLoRA || s.weight.Quantized {
		return FieldErrorf("float8", "{float8=%s}: float8 training converts the trainable high-precision Linears; a quantized base is not modelled with it", r)
	}
	s.float8 = r
	if j.Float8AllGather {
		if r != float8Tensorwise {
			return FieldErrorf("enable_fsdp_float8_all_gather", "{enable_fsdp_float8_all_gather} with {float8=%s}: torchao all-gathers float8 weights with tensorwise scaling only (Float8LinearConfig.__post_init__)", r)
		}
		if !s.isFSDP() || s.dist.zero < 2 {
			s.warn("enable_fsdp_float8_all_gather without FSDP sharding: no all-gather to shrink")
		} else {
			s.float8Gather = true
		}
	}
	return nil
}

// float8Linear reports whether the float8 converter swaps mod: a Linear
// inside the layers with both dims divisible by 16 (torchtitan's filter;
// the output head is left in high precision).
func (s *setup) float8Linear(mod *model.Module) bool {
	return s.float8 != "" && mod.In > 0 && mod.Out > 0 && mod.Layer >= 0 && mod.Component != compLMHead &&
		mod.In%float8AlignedElements == 0 && mod.Out%float8AlignedElements == 0
}

// float8Transient is what one layer's backward adds under float8
// training: the float8 copies its largest matmul makes (the gradient of
// the output and the input, for the weight's gradient, and the weight,
// for the input's), one byte per element, beside the high-precision
// tensors; rowwise_with_gw_hp keeps the weight gradient's matmul in high
// precision, without the input's copy.
func (s *setup) float8Transient(n float64) float64 {
	if s.float8 == "" {
		return 0
	}
	st := &s.m.Text
	h, f := float64(st.Hidden), float64(st.Intermediate)
	if st.MoE != nil && f == 0 {
		f = float64(st.MoE.ExpertFFN)
	}
	tp := float64(max(s.dist.tp, 1))
	in := n * f / tp // the down projection's input
	if s.float8 == float8RowwiseGWHP {
		in = 0
	}
	return n*h + in + h*f/tp
}

// float8Note names the float8 settings for the activation formula.
func (s *setup) float8Note() string {
	if s.float8 == "" {
		return ""
	}
	return fmt.Sprintf("; float8 %s (saves the bf16 input and weight; float8 copies per matmul)%s", s.float8, cond(s.float8Gather, ", float8 all-gather", ""))
}
