package memory

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

func lookup(t *testing.T, id string) *model.Model {
	t.Helper()
	m, err := model.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestVLMImageTokensInPrompt(t *testing.T) {
	// Qwen2-VL-7B: 28 layers × 4 KV heads × 128 × 2 × 2 B = 57344 B/token;
	// an image of side S adds (S/28)² tokens (2×2 patches of 14 px merged).
	m := lookup(t, "Qwen/Qwen2-VL-7B-Instruct")
	per := int64(m.Text.Layers * m.Text.KVHeads * headDim(&m.Text) * 2 * 2)
	tests := []struct {
		size, images int
		tokens       int64
	}{
		{0, 1, int64(m.Vision.TokensPerImage)},
		{896, 1, 32 * 32},
		{896, 3, 3 * 32 * 32},
	}
	for _, tt := range tests {
		r := mustEstimate(t, m, Job{Mode: Inference, PromptLen: 100, ImageSize: tt.size, ImagesPerSample: tt.images})
		if got, want := component(t, r, "kv_cache").Bytes, units.Bytes((100+tt.tokens)*per); got != want {
			t.Errorf("size %d × %d images: kv %d, want %d", tt.size, tt.images, got, want)
		}
		phaseBytes(t, r, phaseVision) // the vision tower runs before the prefill
	}
	r := mustEstimate(t, m, Job{Mode: Inference, PromptLen: 100})
	if len(r.Warnings) == 0 || !strings.Contains(strings.Join(r.Warnings, " "), "one image") {
		t.Errorf("warnings %q, want the assumed image named", r.Warnings)
	}
}

func TestCrossAttentionCachesVisionTokens(t *testing.T) {
	m := lookup(t, "meta-llama/Llama-3.2-11B-Vision")
	var cross, self int
	for _, lt := range m.Text.LayerTypes {
		if lt.CrossAttention {
			cross++
		}
		if lt.Attention != model.NoSelfAttention {
			self++
		}
	}
	if cross == 0 {
		t.Fatal("mllama config read without cross-attention layers")
	}
	per := int64(2 * m.Text.KVHeads * headDim(&m.Text) * 2)
	r := mustEstimate(t, m, Job{Mode: Inference, PromptLen: 64, ImagesPerSample: 2})
	want := units.Bytes(int64(self)*per*64 + int64(cross)*per*2*int64(m.Vision.TokensPerImage))
	if got := component(t, r, "kv_cache").Bytes; got != want {
		t.Errorf("kv %d, want %d (self layers × 64 tokens + cross layers × 2 images × %d tokens)", got, want, m.Vision.TokensPerImage)
	}
}

func TestEncoderDecoderCachesEncoderOutput(t *testing.T) {
	m := lookup(t, "google-t5/t5-base")
	a := mustEstimate(t, m, Job{Mode: Inference, PromptLen: 256, GenLen: 64})
	b := mustEstimate(t, m, Job{Mode: Inference, PromptLen: 512, GenLen: 64})
	// Doubling the encoder input doubles the cross-attention cache only.
	kv := func(r Result) units.Bytes {
		for _, c := range r.PerGPU.Components {
			if c.Name == "kv_cache" {
				return c.Bytes
			}
		}
		return 0
	}
	if kv(b) <= kv(a) || kv(b) >= 2*kv(a) {
		t.Errorf("t5 kv at 256 / 512 encoder tokens: %v / %v; want growth below 2× (self cache unchanged)", kv(a), kv(b))
	}
}

// TestImageOptionsNeedAVisionTower checks that image options on a
// text-only model are errors naming the flag in every mode, and that an
// image size without images warns when training.
func TestImageOptionsNeedAVisionTower(t *testing.T) {
	text := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	for _, job := range []Job{
		{SeqLen: 512, ImageSize: 448},
		{SeqLen: 512, ImagesPerSample: 1},
		{Mode: Inference, PromptLen: 64, ImageSize: 448},
		{Mode: Inference, PromptLen: 64, ImagesPerSample: 2},
	} {
		_, err := Estimate(text, job)
		want := "<image_size>"
		if job.ImagesPerSample > 0 {
			want = "<images_per_sample>"
		}
		if err == nil || !strings.Contains(marked(err), want) || !strings.Contains(err.Error(), "no vision tower") {
			t.Errorf("%+v: got %v, want an error naming %s", job, err, want)
		}
	}
	vlm := catalogModel(t, "Qwen/Qwen2-VL-7B-Instruct")
	r := mustEstimate(t, vlm, Job{SeqLen: 512, ImageSize: 448})
	if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "image_size without images_per_sample") }) {
		t.Errorf("want a warning that no images are counted, got %q", r.Warnings)
	}
}
