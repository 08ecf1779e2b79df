package memory

import (
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// FuzzEstimateInference feeds arbitrary job numbers and names to the
// inference and serving estimators: they must return an error or a
// result whose rows are non-negative and add up to the peaks.
func FuzzEstimateInference(f *testing.F) {
	f.Add(1, 512, 128, 1, 1, 1, 0, "bf16", "auto", "sdpa", false, false)
	f.Add(8, 4096, 1024, 2, 2, 1, 2, "nf4", "fp8", "eager", true, true)
	f.Add(1<<30, 1<<30, 1<<30, 8, 4, 8, 1<<20, "int4", "bf16", "flash", true, false)
	f.Add(-1, 0, -5, 0, 0, 0, -3, "fp5", "int3", "ring", false, true)
	shapes := []*model.Model{testModel(llama31_8b), testModel(gemma2_9b), testModel(deepseekV3)}
	f.Fuzz(func(t *testing.T, batch, prompt, gen, tp, pp, ep, images int, dtype, kv, attn string, serving, legacy bool) {
		for _, m := range shapes {
			job := Job{Mode: Inference, Batch: batch, PromptLen: prompt, GenLen: gen, TP: tp, PP: pp, EP: ep, ImagesPerSample: images,
				Dtype: dtype, KVCacheDtype: kv, Attention: attn, AllowLong: true, GPUMemory: 80 * units.GiB, MaxModelLen: prompt}
			if serving {
				job.Mode = Serving
			}
			if legacy {
				job.Software = []string{"transformers<4.36"}
			}
			r, err := Estimate(m, job)
			if err != nil {
				continue
			}
			checkLevels(t, m.ID, r)
			if s := r.Serving; s != nil && (s.KVPoolBytes < 0 || s.KVTokens < 0 || s.MaxConcurrentSeqs < 0 || s.KVBlocks < 0) {
				t.Errorf("%s: negative serving figures %+v", m.ID, *s)
			}
		}
	})
}

// FuzzParseWeightFormat checks that every accepted --dtype lays out a
// tensor in a positive number of bytes, at most 4 per element plus scales.
func FuzzParseWeightFormat(f *testing.F) {
	for _, s := range append(WeightFormatNames(), "bfloat16", "AWQ", "modelopt_fp4", "fp8_e5m2", "", "int3") {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, name string, dq bool) {
		w, err := ParseWeightFormat(name, dq)
		if err != nil {
			return
		}
		const n = 4096 * 4096
		if b := w.TensorBytes(4096, 4096, n); b <= 0 || b > 4*n+4*n/16 {
			t.Errorf("%q: %d bytes for %d elements", name, b, n)
		}
		if _, err := ParseKVCacheDtype(name, BF16); err == nil && w.Quantized() && w.Bits != 8 {
			t.Errorf("%q accepted as a KV cache dtype but is %d-bit %s", name, w.Bits, w.Layout)
		}
	})
}
