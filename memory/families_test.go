package memory

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// variant parses the catalog config of name with keys replaced, as the
// model package's tests vary one key of a release config.
func variant(t *testing.T, name string, set map[string]any) *model.Model {
	t.Helper()
	data, err := model.CatalogConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		m[k] = v
	}
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	mod, err := model.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	mod.ID = name + " (varied)"
	return mod
}

// TestKVCacheDSA checks the KV cache of DeepSeek sparse attention by hand
// from the modeling sources: every layer caches its MLA latent and, where
// it runs an indexer, the indexer's key.
//   - vLLM: (kv_lora_rank 512 + qk_rope_head_dim 64) × dtype bytes, plus
//     the indexer's 128 fp8 values and one fp32 scale = 132 B whatever
//     the KV dtype (deepseek_v2.py Indexer: DeepseekV32IndexerCache of
//     head_dim + head_dim // 128 · 4, uint8).
//   - transformers: 128 heads × (qk_nope 128 + qk_rope 64 + v 128) × 2 B
//     of expanded K and V, plus the indexer key, index_head_dim 128 × 2 B.
func TestKVCacheDSA(t *testing.T) {
	v32 := catalogModel(t, "deepseek-ai/DeepSeek-V3.2")
	glm := catalogModel(t, "zai-org/GLM-5")
	sharedGLM := variant(t, "zai-org/GLM-5", map[string]any{"index_topk_freq": 2}) // 40 indexer layers of 78
	tests := []struct {
		name   string
		st     *model.Stack
		dtype  DType
		engine string
		want   int64
	}{
		{"V3.2 vLLM bf16", &v32.Text, BF16, engineVLLM, 61 * ((512+64)*2 + 132)},
		{"V3.2 vLLM fp8", &v32.Text, FP8, engineVLLM, 61 * ((512 + 64) + 132)},
		{"V3.2 transformers", &v32.Text, BF16, engineHF, 61 * (128*(128+64+128)*2 + 128*2)},
		{"GLM-5 vLLM", &glm.Text, BF16, engineVLLM, 78 * ((512+64)*2 + 132)},
		{"GLM-5 shared indexers", &sharedGLM.Text, BF16, engineVLLM, 78*(512+64)*2 + 40*132},
		{"GLM-5 transformers", &glm.Text, BF16, engineHF, 78 * (64*(192+64+256)*2 + 128*2)},
	}
	for _, tt := range tests {
		spec, err := buildKVSpec(tt.st, 0, tt.st.Layers, tt.dtype, 1, tt.engine)
		if err != nil {
			t.Fatal(err)
		}
		if got := spec.perToken(); got != tt.want {
			t.Errorf("%s: %d B per token, want %d", tt.name, got, tt.want)
		}
		if !strings.Contains(spec.formula, "indexer keys") {
			t.Errorf("%s: formula %q does not name the indexer cache", tt.name, spec.formula)
		}
	}
	// Serving counts the indexer in every page: the pool holds fewer
	// tokens per byte than the latent alone would.
	job := Job{Mode: Serving, GPUMemory: 141 * units.GiB, TP: 8, MaxModelLen: 32768}
	r := mustEstimate(t, v32, job)
	if got := r.Serving.KVBytesPerToken; got != 61*((512+64)*2+132) {
		t.Errorf("serving KV bytes per token %d, want %d", got, 61*((512+64)*2+132))
	}
}

// nemotronSuper reads Llama-3_3-Nemotron-Super-49B-v1's release config
// from the model package's testdata (it is not in the catalog, whose
// publisher guesses would take its "Llama-3_3" for Meta's).
func nemotronSuper(t *testing.T) *model.Model {
	t.Helper()
	m, err := model.Load("../model/testdata/families/nvidia__Llama-3_3-Nemotron-Super-49B-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestKVCacheNemotronNAS checks that no-op attention blocks cache nothing:
// 49 of Nemotron-Super-49B's 80 blocks attend, each with 8 KV heads of 128.
func TestKVCacheNemotronNAS(t *testing.T) {
	m := nemotronSuper(t)
	spec, err := buildKVSpec(&m.Text, 0, m.Text.Layers, BF16, 1, engineVLLM)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := spec.perToken(), int64(49*2*8*128*2); got != want || spec.layers != 49 {
		t.Errorf("%d B per token over %d layers, want %d over 49", got, spec.layers, want)
	}
}

// TestNemotronNASBlockActivations checks that a layer's activations
// follow its own block: a narrower FFN saves less, a no-op FFN nothing
// of the MLP, a no-op attention nothing of attention.
func TestNemotronNASBlockActivations(t *testing.T) {
	m := nemotronSuper(t)
	st := &m.Text
	r := actRegime{c: 2, resid: 2, attn: trAttnSDPA, trainW: true}
	wide := model.LayerType{Attention: model.FullAttention}
	narrow := model.LayerType{Attention: model.FullAttention, FFN: 2816}
	noFFN := model.LayerType{Attention: model.FullAttention, NoFFN: true}
	noAttn := model.LayerType{Attention: model.NoSelfAttention}
	a, b, c, d := decoderLayer(st, wide, &r), decoderLayer(st, narrow, &r), decoderLayer(st, noFFN, &r), decoderLayer(st, noAttn, &r)
	// The gated MLP saves gate, SiLU and up outputs and the down input,
	// 4·c·f per token (MODEL.md §4.3.1), so the widths differ by 4·2·(28672-2816).
	if got, want := a.lin-b.lin, 4*2*float64(28672-2816); got != want {
		t.Errorf("wide − narrow FFN = %v B per token, want %v", got, want)
	}
	if c.lin >= b.lin || d.lin >= a.lin || d.quad != 0 || a.quad != c.quad {
		t.Errorf("no-op blocks: full %+v, no FFN %+v, no attention %+v", a, c, d)
	}
}

// TestHeadlessEstimates checks that an embedding checkpoint (a decoder
// saved as its base class) gets no vocabulary logits, no LM loss, no
// sampler, and refuses to generate.
func TestHeadlessEstimates(t *testing.T) {
	lm := catalogModel(t, "Qwen/Qwen3-8B")
	emb := variant(t, "Qwen/Qwen3-8B", map[string]any{"architectures": []string{"Qwen3Model"}})
	train := Job{Mode: Train, SeqLen: 2048, Batch: 1}
	rl, re := mustEstimate(t, lm, train), mustEstimate(t, emb, train)
	for _, c := range re.PerGPU.Components {
		if c.Name == "loss" && (c.Bytes != 0 || c.MaxBytes != 0) {
			t.Errorf("embedding model has a loss row: %+v", c)
		}
	}
	if re.PerGPU.AllocatedPeakBytes >= rl.PerGPU.AllocatedPeakBytes {
		t.Errorf("training peak %v not below the LM's %v (no head, no logits)", re.PerGPU.AllocatedPeakBytes, rl.PerGPU.AllocatedPeakBytes)
	}
	inf := mustEstimate(t, emb, Job{Mode: Inference, PromptLen: 4096, Batch: 8})
	for _, c := range inf.PerGPU.Components {
		if strings.Contains(c.Formula, "logits") {
			t.Errorf("embedding inference row %s counts logits: %s", c.Name, c.Formula)
		}
	}
	if _, err := Estimate(emb, Job{Mode: Inference, PromptLen: 128, GenLen: 16}); err == nil || !strings.Contains(err.Error(), "no language-model head") {
		t.Errorf("generating with an embedding model: %v, want a refusal naming the missing head", err)
	}
	sv := Job{Mode: Serving, GPUMemory: 80 * units.GiB, MaxModelLen: 8192}
	sl, se := mustEstimate(t, lm, sv), mustEstimate(t, emb, sv)
	if se.Serving.ActivationPeakBytes >= sl.Serving.ActivationPeakBytes {
		t.Errorf("serving activation peak %v not below the LM's %v (no sampler warm-up)", se.Serving.ActivationPeakBytes, sl.Serving.ActivationPeakBytes)
	}
}

// TestDSAIndexerTransient checks transformers' indexer scores by hand:
// a 4096-token prefill of DeepSeek-V3.2 holds relu(q·k) over 64 indexer
// heads in fp32 twice, plus the [s, s] fp32 index scores: 4096² ×
// (2·64 + 1) × 4 B = 8.06 GiB in each layer's attention, which vLLM's fp8
// indexer kernels do not allocate.
func TestDSAIndexerTransient(t *testing.T) {
	m := catalogModel(t, "deepseek-ai/DeepSeek-V3.2")
	hf := actShape{st: &m.Text, tp: 1, attn: inferSDPA, act: 2, lo: 0, hi: m.Text.Layers, hf: true}
	vllm := hf
	vllm.hf = false
	with, f := hf.attention(1, 4096, 4096)
	without, _ := vllm.attention(1, 4096, 4096)
	if got, want := with-without, 4096.0*4096*(2*64+1)*4; got != want {
		t.Errorf("indexer transient %v B, want %v", got, want)
	}
	if !strings.Contains(f, "DSA indexer scores") {
		t.Errorf("formula %q does not name the indexer", f)
	}
}
