package model

import (
	"os"
	"path/filepath"
	"testing"
)

// familyConfig parses a release config.json from testdata/families (its
// source is recorded in testdata/families/SOURCES.md).
func familyConfig(t testing.TB, name string) *Model {
	t.Helper()
	path := filepath.Join("testdata", "families", name+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	m, err := ParseFile(path, data)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return m
}

// familyCount is a published parameter count of a release and how it
// relates to the unique nn.Parameters transformers builds.
type familyCount struct {
	config string // file in testdata/families, without .json
	want   int64  // the published count
	source string // where the count is published
	// stored explains a published count of the elements stored in the
	// checkpoint: want = TotalParams + stored(m). nil: want is the unique
	// parameter count itself.
	stored func(m *Model) int64
	why    string
}

// hubTotalSrc is the source of most counts below: the Hugging Face Hub API's
// safetensors.total for the repository, as collected in
// AlexsJones/llmfit@5bdc9df:llmfit-core/data/hf_models.json
// (parameters_raw, scraped from the Hub's model info; see
// scripts/scrape_hf_models.py there).
const hubTotalSrc = "Hub safetensors total (AlexsJones/llmfit@5bdc9df:llmfit-core/data/hf_models.json)"

func TestFamilyPublishedCounts(t *testing.T) {
	tests := []familyCount{
		{config: "deepseek-ai__DeepSeek-V3.2", want: 685396921376, source: hubTotalSrc + ", deepseek-ai/DeepSeek-V3.2",
			stored: deepSeekV32Stored,
			why: "the FP8 checkpoint adds the MTP layer (a MoE layer with its indexer, enorm, hnorm, eh_proj, " +
				"shared_head.norm and its own embed_tokens and head copies), the routers' e_score_correction_bias " +
				"and one weight_scale_inv per 128×128 block of every FP8 Linear (all layer Linears but the router " +
				"and the indexer's bf16 weights_proj)"},
		{config: "zai-org__GLM-5", want: 753864139008, source: hubTotalSrc + ", zai-org/GLM-5 (bf16)",
			stored: glm5Stored,
			why: "the checkpoint adds the MTP layer (layer 78: a MoE layer with its indexer, enorm, hnorm, eh_proj " +
				"and shared_head.norm; no embedding or head copy) and the routers' e_score_correction_bias buffers"},
		{config: "MiniMaxAI__MiniMax-M2.5", want: 228703644928, source: hubTotalSrc + ", MiniMaxAI/MiniMax-M2.5 (FP8)",
			stored: miniMaxStored,
			why: "the FP8 checkpoint adds the routers' e_score_correction_bias and one weight_scale_inv per " +
				"128×128 block of every attention and expert Linear"},
		{config: "nvidia__Llama-3_3-Nemotron-Super-49B-v1", want: 49867145216, source: hubTotalSrc + ", nvidia/Llama-3_3-Nemotron-Super-49B-v1"},
		{config: "HuggingFaceTB__SmolLM3-3B", want: 3075098624, source: hubTotalSrc + ", HuggingFaceTB/SmolLM3-3B (tied: one embedding matrix)"},
		{config: "allenai__OLMo-2-1124-7B", want: 7298617344, source: hubTotalSrc + ", allenai/OLMo-2-1124-7B-Instruct (same shapes)"},
		{config: "allenai__OLMo-2-1124-13B", want: 13716198400, source: hubTotalSrc + ", allenai/OLMo-2-1124-13B-Instruct (same shapes)"},
		{config: "allenai__OLMo-2-0325-32B", want: 32234279936, source: hubTotalSrc + ", allenai/OLMo-2-0325-32B-Instruct (same shapes)"},
		{config: "bigcode__starcoder2-7b", want: 7173923840, source: hubTotalSrc + ", bigcode/starcoder2-7b"},
		{config: "CohereLabs__aya-23-8B", want: 8028033024, source: hubTotalSrc + ", CohereLabs/aya-23-8B (tied)"},
		{config: "zai-org__GLM-4.7", want: 358337791296, source: hubTotalSrc + ", zai-org/GLM-4.7",
			stored: glm4Stored, why: glm4Why},
		{config: "PrimeIntellect__INTELLECT-3-Base", want: 110468824832, source: hubTotalSrc + ", zai-org/GLM-4.5-Air (same shapes)",
			stored: glm4Stored, why: glm4Why},
		{config: "darkc0de__4.3test2", want: 36151104512, source: "Hub safetensors totals of the Seed-OSS-36B-Instruct MLX conversions " +
			"(lmstudio-community/Seed-OSS-36B-Instruct-MLX-{4,5,6,8}bit, all 36,151,104,512, in " + hubTotalSrc + "), " +
			"which count the q/k/v biases and norms an architecture estimate leaves out; the model card says 36B"},
		{config: "T-Systems-onsite__cross-en-de-roberta-sentence-transformer", want: 278044162,
			source: hubTotalSrc + ", T-Systems-onsite/cross-en-de-roberta-sentence-transformer (XLMRobertaModel, base size)",
			stored: func(m *Model) int64 { return int64(m.Text.MaxPositions) },
			why: "the checkpoint stores the embeddings.position_ids buffer (max_position_embeddings int64 ids), " +
				"as older RoBERTa saves do; newer saves of the same shapes (danielheinz/e5-base-sts-en-de, TechWolf/JobBERT-v3) " +
				"list 278,043,648, the parameters alone"},
		{config: "estrogen__ModernBERT-base-sbert-initialized", want: 149014272,
			source: hubTotalSrc + ", ibm-granite/granite-embedding-english-r2 and IAMJB/RadEvalModernBERT (ModernBertModel of ModernBERT-base shapes; layer 0 has no attn_norm)"},
		{config: "NewEden-Forge__Science-Expert-R1", want: 8053338176, source: hubTotalSrc + ", swiss-ai/Apertus-8B-2509 (same shapes; " +
			"2 xIELU parameters per layer: without them the count would be 64 short)"},
	}
	for _, tt := range tests {
		t.Run(tt.config, func(t *testing.T) {
			m := familyConfig(t, tt.config)
			checkInvariants(t, m)
			got := m.TotalParams()
			if tt.stored != nil {
				extra := tt.stored(m)
				t.Logf("adding %d stored elements: %s", extra, tt.why)
				got += extra
			}
			if got != tt.want {
				t.Errorf("TotalParams (+ stored) = %d, want %d (%s); diff %d", got, tt.want, tt.source, got-tt.want)
			}
		})
	}
}

// fp8Scales is the number of weight_scale_inv elements a block-FP8
// checkpoint stores for the Linears keep selects: one per 128×128 block,
// per instance, plus mtp copies of each layer module of the last layer.
func fp8Scales(m *Model, keep func(mod Module) bool, mtpCopies bool) int64 {
	blocks := func(n int) int64 { return int64((n + 127) / 128) }
	var n int64
	for _, mod := range m.Modules {
		if mod.Kind != KindLinear || mod.Layer < 0 || !keep(mod) {
			continue
		}
		per := blocks(mod.In) * blocks(mod.Out)
		n += per * int64(mod.Instances)
		if mtpCopies && mod.Layer+mod.Layers == m.Text.Layers {
			n += per * int64(mod.Instances/mod.Layers)
		}
	}
	return n
}

// mtpLayer is the elements of a DeepSeek-style MTP layer: a copy of the
// last layer plus enorm, hnorm and shared_head.norm (3h) and eh_proj
// Linear(2h, h).
func mtpLayer(m *Model) int64 {
	h := int64(m.Text.Hidden)
	return m.LayerParams(StackText, m.Text.Layers-1) + 3*h + 2*h*h
}

func deepSeekV32Stored(m *Model) int64 {
	s := m.Text
	v, h := int64(s.Vocab), int64(s.Hidden)
	routers := int64(s.Layers-s.MoE.DenseLayers+1) * int64(s.MoE.Experts)
	scales := fp8Scales(m, func(mod Module) bool {
		return mod.Component != CompRouter && mod.Short != "weights_proj"
	}, true)
	return mtpLayer(m) + 2*v*h + routers + scales
}

func glm5Stored(m *Model) int64 {
	s := m.Text
	return mtpLayer(m) + int64(s.Layers-s.MoE.DenseLayers+1)*int64(s.MoE.Experts)
}

func miniMaxStored(m *Model) int64 {
	s := m.Text
	routers := int64(s.Layers) * int64(s.MoE.Experts)
	return routers + fp8Scales(m, func(mod Module) bool { return mod.Component != CompRouter }, false)
}

// TestHunyuanA13BCount checks Hunyuan-A13B (the remote-code "hunyuan"
// schema its repository ships) against the totals its README publishes,
// "80 billion parameters with 13 billion active"
// (Tencent-Hunyuan/Hunyuan-A13B@2798f3c8b6a69e0ce93950b0d2417203cf950fa0:
// README.md), to the digits published.
func TestHunyuanA13BCount(t *testing.T) {
	m := familyConfig(t, "tencent__Hunyuan-A13B-Instruct")
	checkInvariants(t, m)
	if got := roundSig(m.TotalParams(), 1); got != 80e9 {
		t.Errorf("TotalParams %d rounds to %d, want 80 billion", m.TotalParams(), got)
	}
	if got := roundSig(m.ActiveParams(), 2); got != 13e9 {
		t.Errorf("ActiveParams %d rounds to %d, want 13 billion", m.ActiveParams(), got)
	}
	if e := m.Text.MoE; e.Experts != 64 || e.ExpertsPerToken != 8 || e.SharedFFN != 3072 || !m.Text.QKNorm {
		t.Errorf("MoE %+v, q/k norms %v; want 64 experts, top-8, one shared MLP of 3072, q/k norms", *e, m.Text.QKNorm)
	}
}

const glm4Why = "the checkpoint adds the MTP layer (layer num_hidden_layers: a MoE layer with enorm, hnorm, eh_proj, " +
	"shared_head.norm and its own embed_tokens and shared_head.head copies) and the routers' e_score_correction_bias buffers"

func glm4Stored(m *Model) int64 {
	s := m.Text
	v, h := int64(s.Vocab), int64(s.Hidden)
	return mtpLayer(m) + 2*v*h + int64(s.Layers-s.MoE.DenseLayers+1)*int64(s.MoE.Experts)
}
