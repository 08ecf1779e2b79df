package model

import "fmt"

// readGLMMoEDSA reads GLM-5 (model_type "glm_moe_dsa"): DeepSeek-V3.2
// layers — multi-head latent attention with a DSA indexer, leading dense
// layers, fused routed experts and a shared expert — whose indexer may be
// shared: a layer whose indexer_types entry is "shared" builds no indexer
// and reuses the previous layer's top-k selection
// (huggingface/transformers@01f8fa55d98fbd77fb6461c47ae14fc6206f2f87:
// src/transformers/models/glm_moe_dsa/modular_glm_moe_dsa.py,
// GlmMoeDsaAttention). The indexer_types default follows GlmMoeDsaConfig:
// index_topk_pattern ("F"/"S" per layer) when given, else "full" where
// max(i - index_skip_topk_offset + 1, 0) % index_topk_freq == 0
// (defaults 2 and 1: every layer). The checkpoint's multi-token-prediction
// layer (num_nextn_predict_layers) is not built by transformers and is not
// counted.
func readGLMMoEDSA(c *config, m *Model, b *builder) {
	s := readStack(c, dims{hidden: 6144, layers: 78, heads: 64, inter: 12288, vocab: 154880, maxPos: 202752})
	readMLA(c, &s, 2048)
	// GlmMoeDsaConfig's own MLA widths differ from DeepSeek's defaults.
	s.MLA.QKNopeDim = c.dim("qk_nope_head_dim", 192)
	s.MLA.VHeadDim = c.dim("v_head_dim", 256)
	s.HeadDim = s.MLA.QKNopeDim + s.MLA.QKRopeDim
	if s.MLA.QLoRARank == 0 {
		c.fail("q_lora_rank", "a positive integer (the DSA indexer reads the query latent)", "null")
	}
	readIndexer(c, &s, 32)
	s.MLA.IndexerLayers = indexerLayers(c, s.Layers)
	readDSAMoE(c, &s, moeDefaults{experts: 256, perToken: 8, expertFFN: 2048}, 3)
	m.Text = s
	buildDSA(b, &m.Text)
}

// indexerLayers reads which layers run their own indexer: indexer_types
// ("full" / "shared"), else index_topk_pattern, else the
// index_topk_freq / index_skip_topk_offset schedule. nil means every
// layer. A first layer without its own indexer has no selection to reuse
// and is refused.
func indexerLayers(c *config, n int) []bool {
	out := make([]bool, n)
	key := "indexer_types"
	switch {
	case c.has("indexer_types"):
		kinds := c.strs("indexer_types")
		if len(kinds) != n {
			c.fail(key, fmt.Sprintf("%d entries (num_hidden_layers)", n), len(kinds))
			return nil
		}
		for i, k := range kinds {
			switch k {
			case "full":
				out[i] = true
			case "shared":
			default:
				c.fail(fmt.Sprintf("indexer_types[%d]", i), `"full" or "shared"`, k)
				return nil
			}
		}
	case c.has("index_topk_pattern"):
		key = "index_topk_pattern"
		p := c.str(key, "")
		if len(p) != n {
			c.fail(key, fmt.Sprintf("%d letters F or S (num_hidden_layers)", n), len(p))
			return nil
		}
		for i, r := range p {
			switch r {
			case 'F':
				out[i] = true
			case 'S':
			default:
				c.fail(key, `letters "F" (full) or "S" (shared)`, p)
				return nil
			}
		}
	default:
		freq := max(c.intIn("index_topk_freq", 1, 0, maxLayers), 1)
		offset := c.intIn("index_skip_topk_offset", 2, 0, maxLayers)
		all := true
		for i := range out {
			out[i] = max(i-offset+1, 0)%freq == 0
			all = all && out[i]
		}
		if all {
			return nil
		}
	}
	if n > 0 && !out[0] {
		c.fail(key, "a first layer that runs its own indexer (a shared layer reuses the previous one's)", "shared")
	}
	return out
}
