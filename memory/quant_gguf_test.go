package memory

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// ggufWeights is the serving estimate's weights for --dtype name.
func ggufWeights(t *testing.T, m *model.Model, name string) (units.Bytes, Result) {
	t.Helper()
	r, err := Estimate(m, Job{Mode: Serving, GPUMemory: 140 * units.GiB, MaxModelLen: 4096, Dtype: name})
	if err != nil {
		t.Fatal(err)
	}
	return r.Serving.WeightsBytes, r
}

// TestGGUFMixLlama31 replays llama-quantize's Q4_K_M mix on Llama 3.1 8B
// (32 layers, n_embd 4096, 8 KV heads, n_ff 14336, 128256 tokens): the
// output matrix in Q6_K; attn_v and ffn_down in Q6_K in the layers
// use_more_bits picks (0-3, 6, 9, ..., 27, 28-31: 16 of 32 each); the
// rest of the matrices, token embeddings included, in Q4_K; norms f32.
// That is 33 Q6_K tensors, as llama.cpp's loader lists for the published
// Q4_K_M files, and 4.58 GiB (llama.cpp's "file size = 4.58 GiB (4.89
// BPW)").
func TestGGUFMixLlama31(t *testing.T) {
	m, err := model.Lookup("llama3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	q4 := func(n int64) int64 { return n / 256 * 144 }
	q6 := func(n int64) int64 { return n / 256 * 210 }
	const h, kv, ff, v, L = 4096, 1024, 14336, 128256, 32
	more := 0
	for i := range L {
		if useMoreBits(i, L) {
			more++
		}
	}
	if more != 16 {
		t.Fatalf("use_more_bits picks %d of 32 layers, want 16", more)
	}
	want := q4(v*h) + q6(v*h) + // token_embd, output
		L*(q4(h*h)+q4(h*kv)+q4(h*h)+2*q4(h*ff)) + // q, k, o, gate, up
		int64(more)*(q6(h*kv)+q6(ff*h)) + int64(L-more)*(q4(h*kv)+q4(ff*h)) + // v, down
		(2*L+1)*h*4 // norms
	got, r := ggufWeights(t, m, "q4_k_m")
	if got != units.Bytes(want) {
		t.Errorf("Q4_K_M weights %d, want %d", got, want)
	}
	if gib := got.GiBf(); gib < 4.575 || gib >= 4.585 {
		t.Errorf("Q4_K_M weights %.3f GiB, want 4.58", gib)
	}
	if f := r.PerGPU.Components[0].Formula; !strings.Contains(f, "Q4_K") || !strings.Contains(f, "Q6_K") || !strings.Contains(f, "q4_k_m mix") {
		t.Errorf("formula %q does not list the mix", f)
	}
	// "q4_k" is llama-quantize's alias of Q4_K_M.
	if alias, _ := ggufWeights(t, m, "Q4_K"); alias != got {
		t.Errorf("q4_k = %d, q4_k_m = %d", alias, got)
	}
	// Q8_0 keeps every matrix, the output included, in Q8_0.
	q8 := func(n int64) int64 { return n / 32 * 34 }
	want8 := 2*q8(v*h) + L*(2*q8(h*h)+2*q8(h*kv)+3*q8(h*ff)) + (2*L+1)*h*4
	if got8, _ := ggufWeights(t, m, "q8_0"); got8 != units.Bytes(want8) {
		t.Errorf("Q8_0 weights %d, want %d", got8, want8)
	}
}

func TestGGUFMixOrderAndFallback(t *testing.T) {
	m := testModel(llama31_8b)
	var last units.Bytes
	for _, name := range []string{"q2_k", "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_m", "q6_k", "q8_0", "bf16"} {
		w, _ := ggufWeights(t, m, name)
		if w <= last {
			t.Errorf("%s: %v is not more than the mix before (%v)", name, w, last)
		}
		last = w
	}
	// A hidden size that is no whole 256-element block (Qwen2.5-0.5B:
	// 896): Q4_K rows fall back to Q5_0, Q6_K ones to Q8_0, and the
	// output matrix takes Q8_0.
	small := testModel(denseShape{id: "small", layers: 24, hidden: 896, heads: 14, kvHeads: 2, ffn: 4864, vocab: 151936, maxPos: 32768, tied: true})
	x := newGGUFMix(small, WeightFormat{Name: "q4_k_m"})
	if got := x.typeFor(catQ, 5, 896); got != ggmlQ5_0 {
		t.Errorf("q_proj of 896-wide rows: %s, want Q5_0", got.name)
	}
	if got := x.typeFor(catAttnV, 0, 896); got != ggmlQ8_0 {
		t.Errorf("attn_v of layer 0 (Q6_K) with 896-wide rows: %s, want Q8_0", got.name)
	}
	if got := x.typeFor(catEmbd, -1, 896); got != ggmlQ8_0 {
		t.Errorf("tied embeddings: %s, want the output's Q8_0", got.name)
	}
	// ffn_down rows are n_ff = 4864 = 19 × 256 wide: no fallback; layer 5
	// gets use_more_bits' Q6_K, layer 4 stays Q4_K.
	if got5, got4 := x.typeFor(catDown, 5, 4864), x.typeFor(catDown, 4, 4864); got5 != ggmlQ6_K || got4 != ggmlQ4_K {
		t.Errorf("ffn_down layers 5 and 4: %s, %s; want Q6_K, Q4_K", got5.name, got4.name)
	}
	if got := fallback(ggmlQ4_0, 48); got != ggmlF16 {
		t.Errorf("48-wide rows in Q4_0: %s, want F16", got.name)
	}
	// Mixtral-style 8 experts: V and K in Q8_0, attention output in Q5_K.
	moe := testModel(denseShape{id: "moe", layers: 32, hidden: 4096, heads: 32, kvHeads: 8, ffn: 14336, vocab: 32000, maxPos: 32768,
		moe: &model.MoE{Experts: 8, ExpertsPerToken: 2, ExpertFFN: 14336}})
	xm := newGGUFMix(moe, WeightFormat{Name: "q4_k_m"})
	if xm.typeFor(catAttnV, 10, 4096) != ggmlQ8_0 || xm.typeFor(catK, 10, 4096) != ggmlQ8_0 || xm.typeFor(catAttnOut, 10, 4096) != ggmlQ5_K {
		t.Error("8-expert bumps not applied")
	}
}

func TestGGUFMixErrors(t *testing.T) {
	m := testModel(llama31_8b)
	for _, tc := range []struct {
		job  Job
		want string
	}{
		{Job{Mode: Inference, Dtype: "q4_k_m", PromptLen: 64}, "transformers dequantizes GGUF weights"},
		{Job{Mode: Serving, GPUMemory: h100Total, Dtype: "iq2_xxs"}, `llama.cpp file type "iq2_xxs" is not modelled without its GGUF file`},
		{Job{Mode: Serving, GPUMemory: h100Total, Dtype: "q4_k_x"}, "or a llama.cpp file type such as q4_k_m"},
		{Job{Mode: Train, Dtype: "q4_k_m"}, `unknown dtype "q4_k_m"`},
	} {
		if _, err := Estimate(m, tc.job); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.job, err, tc.want)
		}
	}
}
