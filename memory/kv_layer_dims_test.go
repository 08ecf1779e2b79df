package memory

import (
	"testing"

	"github.com/gpumem/gpumem/units"
)

// TestKVCacheLayerDims checks the cache of a stack whose layers differ in
// KV width, by hand from Gemma 4 26B-A4B's modeling source
// (modeling_gemma4.py Gemma4TextAttention): its 25 sliding layers cache 8
// KV heads of head_dim 256 over the last 1024 tokens, its 5 full layers
// (attention_k_eq_v) 2 global KV heads of global_head_dim 512 over every
// token; keys and values are both cached, in bf16.
func TestKVCacheLayerDims(t *testing.T) {
	m := catalogModel(t, "google/gemma-4-26B-A4B")
	const (
		sliding, full = 25, 5
		slidingPer    = 2 * 8 * 256 * 2 // K and V × heads × head_dim × 2 B
		fullPer       = 2 * 2 * 512 * 2
		window        = 1024
	)
	image := int64(m.Vision.TokensPerImage) // one image: 256 soft tokens + <boi>, <eoi>
	if image != 258 {
		t.Fatalf("%d tokens per image, want 258", image)
	}
	for _, prompt := range []int64{512, 4096} {
		// One generated token is the prefill's own: the cache holds the
		// prompt and the image.
		r := mustEstimate(t, m, Job{Mode: Inference, PromptLen: int(prompt), GenLen: 1, ImagesPerSample: 1})
		tokens := prompt + image
		want := units.Bytes(sliding*slidingPer*min(tokens, window) + full*fullPer*tokens)
		if got := component(t, r, "kv_cache").Bytes; got != want {
			t.Errorf("prompt %d: kv %d, want %d", prompt, got, want)
		}
	}
}
