package model

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// devCount is one record of testdata/param-counts-dev.json.
type devCount struct {
	Model      string `json:"model"`
	Total      int64  `json:"total_params"`
	Precision  string `json:"precision"`
	CountBasis string `json:"count_basis"`
	AltCounts  []struct {
		Value int64  `json:"value"`
		Basis string `json:"basis"`
	} `json:"alt_counts"`
}

func readDevCounts(t *testing.T) []devCount {
	t.Helper()
	data, err := os.ReadFile("testdata/param-counts-dev.json")
	if err != nil {
		t.Fatalf("read dev counts: %v", err)
	}
	var recs []devCount
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatalf("decode dev counts: %v", err)
	}
	if len(recs) < 30 {
		t.Fatalf("only %d dev counts", len(recs))
	}
	return recs
}

// checkpointExtra explains, per model, why a published count whose basis
// is the elements stored in the checkpoint differs from the unique
// nn.Parameter count: expected = ours + extra(m). Models absent here must
// match exactly.
var checkpointExtra = map[string]struct {
	why   string
	extra func(m *Model) int64
}{
	"tiiuae/falcon-40b": {
		why: "pytorch_model.bin stores lm_head.weight as well as the word embeddings it is tied to",
		extra: func(m *Model) int64 {
			return int64(m.Text.Vocab) * int64(m.Text.Hidden)
		},
	},
	"mistralai/Mixtral-8x22B-v0.1": {
		why: "the count is from the Instruct repo, whose vocabulary is 32768 instead of 32000 (embedding and lm_head)",
		extra: func(m *Model) int64 {
			return 2 * int64(32768-m.Text.Vocab) * int64(m.Text.Hidden)
		},
	},
}

func TestDevParamCounts(t *testing.T) {
	models := catalogModels(t)
	for _, rec := range readDevCounts(t) {
		t.Run(rec.Model, func(t *testing.T) {
			m, ok := models[rec.Model]
			if !ok {
				t.Fatalf("%s is not in the catalog", rec.Model)
			}
			got := m.TotalParams()
			want := rec.Total
			if x, ok := checkpointExtra[rec.Model]; ok {
				got += x.extra(m)
				t.Logf("adding %d: %s", x.extra(m), x.why)
			}
			if digits, ok := strings.CutPrefix(rec.Precision, "rounded:"); ok {
				n, err := strconv.Atoi(digits)
				if err != nil {
					t.Fatalf("precision %q", rec.Precision)
				}
				if r := roundSig(got, n); r != want {
					t.Errorf("TotalParams = %d, rounds to %d at %d digits, want %d", got, r, n, want)
				}
				return
			}
			if got != want {
				t.Errorf("TotalParams = %d, want %d (%s); diff %d", got, want, rec.CountBasis, got-want)
			}
		})
	}
}

// roundSig rounds v to n significant decimal digits.
func roundSig(v int64, n int) int64 {
	p := math.Pow(10, math.Floor(math.Log10(float64(v)))-float64(n-1))
	return int64(math.Round(float64(v)/p) * p)
}

// TestDevAltCounts checks the alternative counts published for the same
// checkpoints (elements stored in the files), each derived from our
// unique-parameter count plus the stored tensors transformers does not
// hold as parameters.
func TestDevAltCounts(t *testing.T) {
	models := catalogModels(t)
	alt := map[string]struct {
		why   string
		extra func(m *Model) int64
	}{
		"openai-community/gpt2":        {"each layer stores its attn.bias causal mask buffer, n_positions²", causalMaskBuffers},
		"openai-community/gpt2-medium": {"each layer stores its attn.bias causal mask buffer, n_positions²", causalMaskBuffers},
		"EleutherAI/pythia-70m":        {"each layer stores attention.bias (max_positions²) and rotary inv_freq (rotary_dim/2)", neoxBuffers},
		"EleutherAI/pythia-410m":       {"each layer stores attention.bias (max_positions²) and rotary inv_freq (rotary_dim/2)", neoxBuffers},
		"EleutherAI/pythia-1b":         {"each layer stores attention.bias (max_positions²) and rotary inv_freq (rotary_dim/2)", neoxBuffers},
		"EleutherAI/pythia-12b":        {"each layer stores attention.bias (max_positions²) and rotary inv_freq (rotary_dim/2)", neoxBuffers},
		"meta-llama/Llama-2-7b-hf": {"each layer stores the rotary inv_freq buffer, head_dim/2", func(m *Model) int64 {
			return int64(m.Text.Layers) * int64(m.Text.HeadDim/2)
		}},
		"Qwen/Qwen3-0.6B": {"the repo stores lm_head.weight although it is tied to embed_tokens", func(m *Model) int64 {
			return int64(m.Text.Vocab) * int64(m.Text.Hidden)
		}},
		"deepseek-ai/DeepSeek-V3": {"the checkpoint adds the MTP layer (one MoE layer, enorm, hnorm, " +
			"eh_proj, shared_head norm, and its own embed_tokens and head copies), the routers' " +
			"e_score_correction_bias and one FP8 weight_scale_inv per 128×128 block of every " +
			"quantized Linear (all layer Linears except the router and eh_proj)", deepSeekV3Stored},
		"openai/gpt-oss-120b": {"MXFP4 stores one U8 scale per 32 expert weights (biases excluded)", func(m *Model) int64 {
			var w int64
			for _, mod := range m.Modules {
				if mod.Expert {
					w += int64(mod.In) * int64(mod.Out) * int64(mod.Instances)
				}
			}
			return w / 32
		}},
	}
	for id, x := range alt {
		t.Run(id, func(t *testing.T) {
			m := models[id]
			var rec *devCount
			for _, r := range readDevCounts(t) {
				if r.Model == id {
					rec = &r
				}
			}
			var want int64
			for _, a := range rec.AltCounts {
				if want == 0 && strings.HasPrefix(a.Basis, "elements stored") {
					want = a.Value
				}
			}
			if m == nil || want == 0 {
				t.Fatalf("%s: no model or no checkpoint-elements count", id)
			}
			if got := m.TotalParams() + x.extra(m); got != want {
				t.Errorf("ours + %s = %d, want %d (diff %d)", x.why, got, want, got-want)
			}
		})
	}
}

func causalMaskBuffers(m *Model) int64 {
	return int64(m.Text.Layers) * int64(m.Text.MaxPositions) * int64(m.Text.MaxPositions)
}

// neoxBuffers are GPT-NeoX's stored buffers; Pythia uses rotary_pct 0.25.
func neoxBuffers(m *Model) int64 {
	rotary := int64(float64(m.Text.HeadDim) * 0.25)
	return int64(m.Text.Layers) * (int64(m.Text.MaxPositions)*int64(m.Text.MaxPositions) + rotary/2)
}

// TestVerifiedTotals checks the totals MODEL.md §1.4 verified by hand.
func TestVerifiedTotals(t *testing.T) {
	tests := []struct {
		id                 string
		total, active, tol float64 // billions
	}{
		{"deepseek-ai/DeepSeek-V3", 671.0, 37.5, 0.1},
		{"Qwen/Qwen3-30B-A3B", 30.5, 3.35, 0.05},
		{"mistralai/Mixtral-8x7B-v0.1", 46.7, 12.9, 0.05},
		{"openai/gpt-oss-120b", 116.8, 5.7, 0.1},
		{"openai/gpt-oss-20b", 20.9, 4.2, 0.05},
		{"meta-llama/Llama-2-7b-hf", 6.738, 6.738, 0.0005},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			m, err := Lookup(tt.id)
			if err != nil {
				t.Fatal(err)
			}
			total, active := float64(m.TotalParams())/1e9, float64(m.ActiveParams())/1e9
			if math.Abs(total-tt.total) > tt.tol || math.Abs(active-tt.active) > tt.tol {
				t.Errorf("total %.3fB active %.3fB, want %.3fB / %.3fB (±%.3f)", total, active, tt.total, tt.active, tt.tol)
			}
		})
	}
}

// TestGPTOSSActiveWithoutEmbeddings checks MODEL.md's 5.1B active
// parameters of gpt-oss-120b when the embedding is left out.
func TestGPTOSSActiveWithoutEmbeddings(t *testing.T) {
	m, err := Lookup("gpt-oss-120b")
	if err != nil {
		t.Fatal(err)
	}
	var emb int64
	for _, c := range m.ByComponent() {
		if c.Component == CompEmbedding {
			emb = c.Params
		}
	}
	if got := float64(m.ActiveParams()-emb) / 1e9; math.Abs(got-5.1) > 0.05 {
		t.Errorf("active without embeddings = %.3fB, want 5.1B", got)
	}
}

// deepSeekV3Stored is what DeepSeek-V3's safetensors hold beyond the
// parameters transformers instantiates (see TestDevAltCounts).
func deepSeekV3Stored(m *Model) int64 {
	s := m.Text
	h, v := int64(s.Hidden), int64(s.Vocab)
	last := s.Layers - 1
	mtp := m.LayerParams(StackText, last) + 3*h + 2*h*h + 2*v*h
	routers := int64(s.Layers-s.MoE.DenseLayers+1) * int64(s.MoE.Experts)
	blocks := func(n int) int64 { return int64((n + 127) / 128) }
	var scales int64
	for _, mod := range m.Modules {
		if mod.Kind != KindLinear || mod.Layer < 0 || mod.Component == CompRouter {
			continue
		}
		per := blocks(mod.In) * blocks(mod.Out)
		scales += per * int64(mod.Instances)
		if mod.Layer+mod.Layers == s.Layers { // the MTP layer copies the last layer
			scales += per * int64(mod.Instances/mod.Layers)
		}
	}
	return mtp + routers + scales
}

// TestPublishedVLMCounts checks VLMs outside the dev set against counts
// published with the Hugging Face Hub's safetensors totals (equal to
// model.parameters() for these checkpoints: nothing tied, no buffers
// stored).
func TestPublishedVLMCounts(t *testing.T) {
	tests := []struct {
		id   string
		want int64
	}{
		{"Qwen/Qwen3-VL-8B-Instruct", 8767123696},
		{"microsoft/Phi-3.5-vision-instruct", 4146621440},
		// The base Llama-3.2-11B-Vision: 10,642,941,475 as the Hub's
		// safetensors total (AlexsJones/llmfit@5bdc9df:
		// llmfit-core/data/hf_models.json). Its 448-px tiles have 1025
		// positions each; the Instruct release's 560-px tiles (1601
		// positions) make its 10,670,220,835.
		{"meta-llama/Llama-3.2-11B-Vision", 10642941475},
	}
	for _, tt := range tests {
		if got := mustLookup(t, tt.id).TotalParams(); got != tt.want {
			t.Errorf("%s: TotalParams = %d, want %d (diff %d)", tt.id, got, tt.want, got-tt.want)
		}
	}
}
