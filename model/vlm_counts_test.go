package model

import (
	"os"
	"path/filepath"
	"testing"
)

// vlmRelease is a released VLM checkpoint and its published parameter
// count: the Hugging Face Hub's safetensors total unless why says
// otherwise.
type vlmRelease struct {
	id   string // catalog id, or the file under testdata/vlm
	want int64
	src  string // where the count is published
	why  string // how the published figure relates to PyTorch's unique parameters
	// stored is what the published figure counts beyond the unique
	// parameters (nil: nothing).
	stored func(m *Model) int64
}

// tiedCopy is a checkpoint that stores lm_head.weight although it is tied
// to the input embedding: the Hub total counts the vocab × width matrix
// twice, PyTorch once.
func tiedCopy(m *Model) int64 { return int64(m.Text.Vocab) * int64(m.Text.Hidden) }

// hubTotal is the conversion for a plain bf16 checkpoint: the Hub's
// safetensors total counts every stored element, and these checkpoints
// store each parameter once (no tied copies, no buffers, no quantization
// scales), so it equals the sum of p.numel() over model.parameters().
const hubTotal = "Hub safetensors total = unique parameters (bf16, nothing tied or stored twice)"

// llmfit is the public snapshot of Hub safetensors totals these counts
// come from.
const llmfit = "AlexsJones/llmfit@5bdc9df:llmfit-core/data/hf_models.json parameters_raw"

// vlmReleases are the release counts the VLM readers must reproduce.
var vlmReleases = []vlmRelease{
	{"Qwen/Qwen3-VL-30B-A3B-Instruct", 31_070_754_032,
		llmfit + " of Qwen/Qwen3-VL-30B-A3B-Thinking (the same architecture and config dimensions as -Instruct)", hubTotal, nil},
	{"Qwen__Qwen3-VL-235B-A22B-Instruct.json", 235_670_022_896, llmfit + " of Qwen/Qwen3-VL-235B-A22B-Instruct", hubTotal, nil},
	{"mistralai/Mistral-Small-3.1-24B-Instruct-2503", 24_011_361_280,
		"keras-hub's Mistral 3 presets (mistral_small_3.1_24b_*_2503_en \"params\")",
		"keras-hub counts its port's weights, which hold each tensor of the checkpoint once (lm_head untied)", nil},
	{"OpenGVLab/InternVL3-1B", 938_193_024, llmfit + " of OpenGVLab/InternVL3-1B", hubTotal, nil},
	{"google/gemma-4-26B-A4B", 26_544_131_376, llmfit + " of google/gemma-4-26B-A4B",
		"the release stores lm_head.weight beside the embed_tokens it is tied to", tiedCopy},
	{"google/gemma-4-26B-A4B", 25_805_933_872, llmfit + " of TrevorJS/gemma-4-26B-A4B-it-uncensored, a bf16 re-save of the -it release",
		"save_pretrained stores the tied embedding once", nil},
	{"nvidia__Gemma-4-31B-IT-NVFP4.json", 32_682_372_656, llmfit + " of google/gemma-4-31B-it; the config is NVIDIA's NVFP4 quantization of that release, with the same architecture keys",
		"the release stores lm_head.weight beside the embed_tokens it is tied to", tiedCopy},
}

// TestVLMReleaseCounts checks each VLM reader against published counts of
// real releases, read from their real config.json.
func TestVLMReleaseCounts(t *testing.T) {
	for _, r := range vlmReleases {
		t.Run(r.id, func(t *testing.T) {
			m := releaseModel(t, r.id)
			got := m.TotalParams()
			if r.stored != nil {
				got += r.stored(m)
			}
			if got != r.want {
				t.Errorf("TotalParams (+ stored copies) = %d, want %d (diff %d); source: %s; %s", got, r.want, got-r.want, r.src, r.why)
			}
			if m.Vision == nil || m.Vision.Tower == "" || m.Vision.TokensPerImage <= 0 {
				t.Errorf("vision %+v: want a named tower with tokens per image", m.Vision)
			}
			if len(m.Warnings) > 0 {
				t.Errorf("a release config read with warnings %q", m.Warnings)
			}
		})
	}
}

// releaseModel reads a catalog model, or a file of testdata/vlm.
func releaseModel(t *testing.T, id string) *Model {
	t.Helper()
	if filepath.Ext(id) != ".json" {
		return mustLookup(t, id)
	}
	data, err := os.ReadFile(filepath.Join("testdata", "vlm", id))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseFile(id, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
