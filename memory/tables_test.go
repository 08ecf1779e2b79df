package memory

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
)

func TestDtypeTable(t *testing.T) {
	rows, err := DtypeTable(testModel(llama2_7b), Job{Batch: 1, PromptLen: 512, GenLen: 128, SeqLen: 512})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(WeightFormatNames()) {
		t.Fatalf("%d rows, want one per weight format (%d)", len(rows), len(WeightFormatNames()))
	}
	by := map[string]DtypeRow{}
	for _, r := range rows {
		by[r.Dtype] = r
		if r.WeightsBytes <= 0 || r.InferenceBytes <= r.WeightsBytes {
			t.Errorf("%s: weights %v, inference %v: want 0 < weights < inference", r.Dtype, r.WeightsBytes, r.InferenceBytes)
		}
	}
	if by["fp32"].WeightsBytes != 2*by["bf16"].WeightsBytes || by["fp16"].WeightsBytes != by["bf16"].WeightsBytes {
		t.Errorf("fp32 %v, bf16 %v, fp16 %v: want fp32 = 2 × bf16 = 2 × fp16", by["fp32"].WeightsBytes, by["bf16"].WeightsBytes, by["fp16"].WeightsBytes)
	}
	for _, q := range []string{"fp8", "int8", "int4", "nf4", "fp4", "mxfp4", "nvfp4"} {
		r := by[q]
		if r.WeightsBytes >= by["bf16"].WeightsBytes {
			t.Errorf("%s weights %v not below bf16 %v", q, r.WeightsBytes, by["bf16"].WeightsBytes)
		}
		if r.TrainingBytes != 0 || len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "not trained directly") {
			t.Errorf("%s: full training %v, notes %q; want none, with the reason", q, r.TrainingBytes, r.Notes)
		}
	}
	for _, f := range []string{"fp32", "bf16"} {
		if r := by[f]; r.TrainingBytes <= r.InferenceBytes || r.LoRABytes <= 0 || r.LoRABytes >= r.TrainingBytes {
			t.Errorf("%s: training %v, lora %v, inference %v: want inference < lora < training", f, r.TrainingBytes, r.LoRABytes, r.InferenceBytes)
		}
	}
	if by["nf4"].LoRABytes <= 0 || by["nf4"].LoRABytes >= by["bf16"].LoRABytes {
		t.Errorf("QLoRA nf4 %v, want below bf16 LoRA %v", by["nf4"].LoRABytes, by["bf16"].LoRABytes)
	}
}

func TestParallelTable(t *testing.T) {
	rows, err := ParallelTable(testModel(llama31_8b), Job{Batch: 8, PromptLen: 4096, GenLen: 256}, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+2+3+4 {
		t.Fatalf("%d rows, want 10 TP×PP layouts up to 8 GPUs", len(rows))
	}
	var one ParallelRow
	for _, r := range rows {
		if r.Error != "" {
			t.Errorf("tp %d pp %d: %s", r.TP, r.PP, r.Error)
			continue
		}
		if r.GPUs == 1 {
			one = r
			continue
		}
		// Splitting over n GPUs cuts weights and cache per GPU by about n
		// (replicated norms; with pp 8 the first stage holds the 1 GiB
		// embedding next to its 4 of 32 layers: 1.39×).
		n := float64(r.GPUs)
		if w := float64(r.WeightsBytes) * n / float64(one.WeightsBytes); w < 0.99 || w > 1.45 {
			t.Errorf("tp %d pp %d: weights %v × %d GPUs = %.2f × single-GPU weights", r.TP, r.PP, r.WeightsBytes, r.GPUs, w)
		}
		if kv := float64(r.KVCacheBytes) * n / float64(one.KVCacheBytes); kv < 0.99 || kv > 1.01 {
			t.Errorf("tp %d pp %d: kv %v × %d = %.2f × single-GPU cache", r.TP, r.PP, r.KVCacheBytes, r.GPUs, kv)
		}
	}
}

func TestParallelTableInvalidAndMoE(t *testing.T) {
	rows, err := ParallelTable(testModel(qwen25_7b), Job{PromptLen: 128}, 8)
	if err != nil {
		t.Fatal(err)
	}
	var bad int
	for _, r := range rows {
		if r.TP == 8 {
			if !strings.Contains(r.Error, "num_attention_heads") {
				t.Errorf("tp 8 on 28 heads: error %q", r.Error)
			}
			bad++
		}
	}
	if bad != 1 {
		t.Errorf("%d tp-8 rows, want 1", bad)
	}
	moe := denseShape{id: "moe", layers: 8, hidden: 1024, heads: 16, kvHeads: 4, ffn: 0, vocab: 32000, maxPos: 4096,
		moe: &model.MoE{Experts: 8, ExpertsPerToken: 2, ExpertFFN: 2048}}
	rows, err = ParallelTable(testModel(moe), Job{PromptLen: 128}, 4)
	if err != nil {
		t.Fatal(err)
	}
	var ep int
	for _, r := range rows {
		if r.EP > 1 {
			ep++
		}
	}
	if ep != 1+2 {
		t.Errorf("%d expert-parallel rows, want 3 (tp 2 and tp 4 layouts)", ep)
	}
	if _, err := ParallelTable(testModel(moe), Job{}, 0); err == nil {
		t.Error("max GPUs 0 accepted")
	}
}
