package model

import "fmt"

// moeDefaults are a family's defaults for its MoE keys.
type moeDefaults struct {
	experts, perToken, expertFFN int
}

// readMoE reads the routed-expert keys shared by MoE families
// (num_local_experts / num_experts / n_routed_experts, num_experts_per_tok,
// moe_intermediate_size) and checks that they fit together.
func readMoE(c *config, d moeDefaults) *MoE {
	moe := &MoE{
		Experts:         c.intIn("num_local_experts", d.experts, 1, maxExperts),
		ExpertsPerToken: c.intIn("num_experts_per_tok", d.perToken, 1, maxExperts),
		ExpertFFN:       c.dim("moe_intermediate_size", d.expertFFN),
	}
	if moe.ExpertsPerToken > moe.Experts {
		c.fail("num_experts_per_tok", fmt.Sprintf("at most the number of experts (%d)", moe.Experts), moe.ExpertsPerToken)
	}
	return moe
}

// markMoELayers sets LayerTypes[i].MoE for the layers isMoE selects.
func markMoELayers(s *Stack, isMoE func(i int) bool) {
	for i := range s.LayerTypes {
		s.LayerTypes[i].MoE = isMoE(i)
	}
}

// sparseStep marks MoE layers the Qwen-MoE way: every
// decoder_sparse_step-th layer (1-based) except those in mlp_only_layers
// (Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer).
func sparseStep(c *config, s *Stack) {
	step := c.intIn("decoder_sparse_step", 1, 1, maxLayers)
	dense := map[int]bool{}
	for _, i := range c.ints("mlp_only_layers", 0, maxLayers) {
		dense[i] = true
	}
	markMoELayers(s, func(i int) bool { return !dense[i] && (i+1)%step == 0 })
}
