package accuracy

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
)

func loadDev(t *testing.T) []InferenceRecord {
	t.Helper()
	data, err := os.ReadFile("testdata/measurements-dev.json")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := LoadInferenceRecords(data)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestInferenceAccuracyDev(t *testing.T) {
	checks := CheckInference(loadDev(t), model.Lookup)
	for _, c := range checks {
		if c.Skipped != "" {
			t.Logf("%-50s skipped: %s", c.Record.ID, c.Skipped)
			continue
		}
		t.Logf("%-50s %-12s measured %7.2f GiB, estimated %7.2f GiB, %+6.1f %%  %s",
			c.Record.ID, c.Record.Metric, c.Record.Value.GiBf(), c.Estimated.GiBf(), 100*c.RelErr, c.Note)
	}
	s := SummarizeInference(checks)
	t.Logf("scored %d records: median |err| %.1f %%, p90 %.1f %%", s.N, 100*s.Median, 100*s.P90)
	if s.N < 8 {
		t.Errorf("scored %d records, want the 8 scoreable inference records", s.N)
	}
	if !s.MeetsTargets {
		t.Errorf("median %.3f (target %.2f), p90 %.3f (target %.2f)", s.Median, TargetMedian, s.P90, TargetP90)
	}
}

func TestVLLMProfilerSplit(t *testing.T) {
	// vLLM v0.19 single-GPU startup logs: every component of the budget.
	want := map[string]bool{"vllm019-llama31-8b-tp1": true, "vllm019-qwen25-7b-tp1": true, "vllm019-llama31-8b-fp8-runtime": true}
	var seen int
	for _, c := range CheckInference(loadDev(t), model.Lookup) {
		if !want[c.Record.ID] {
			continue
		}
		seen++
		if c.Skipped != "" {
			t.Errorf("%s skipped: %s", c.Record.ID, c.Skipped)
		}
		if math.Abs(c.RelErr) > 0.02 {
			t.Errorf("%s %s: %+.1f %%", c.Record.ID, c.Record.Metric, 100*c.RelErr)
		}
		for _, p := range c.Parts {
			tol := 0.02
			if p.Name == "activations" || p.Name == "non_torch" {
				tol = 0.05
			}
			if math.Abs(p.RelErr) > tol {
				t.Errorf("%s %s: measured %.2f, estimated %.2f (%+.1f %%)", c.Record.ID, p.Name, p.Measured, p.Estimated, 100*p.RelErr)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d vLLM records", seen, len(want))
	}
}

func TestLoadInferenceRecordsMapping(t *testing.T) {
	data := `[
	 {"id": "train-row", "mode": "train_full", "job": {"mode": "train", "metric_kind": "allocated", "value_bytes": 1}},
	 {"id": "gptq", "mode": "inference", "job": {"mode": "inference", "config_id": "m", "dtype": "int4", "batch": 2,
	  "prompt_len": 512, "gen_len": 64, "metric_kind": "device", "value_bytes": 1073741824, "scoreable": true,
	  "reliability": "ok", "quant_format": "gptq int4, group size 128",
	  "software_note": "tuple KV cache rebuilt by torch.cat, full-sequence logits"}},
	 {"id": "bnb", "mode": "inference", "job": {"mode": "inference", "dtype": "int4", "seq_len": 80, "metric_kind": "allocated",
	  "value_bytes": 5, "reliability": "low", "quant_format": "bitsandbytes 4-bit fp4, no double quantization, fp32 compute"}},
	 {"id": "vllm", "mode": "serving", "other_measurements": {"weights_GiB": 14.99, "kv_cache_tokens": 476000},
	  "job": {"mode": "inference", "serving": true, "config_path": "hf-configs/meta-llama__Llama-3.1-8B.json", "max_model_len": 8192, "seq_len": 8192, "gpu_memory_utilization": 0.95,
	  "gpu_memory_gib": 79.19, "tp": 2, "metric_kind": "kv_pool", "value_bytes": 7}}
	]`
	recs, err := LoadInferenceRecords([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("got %d records, want 3 (training rows skipped)", len(recs))
	}
	g, b, v := recs[0], recs[1], recs[2]
	if g.Job.Dtype != "int4" || g.Job.Batch != 2 || g.Job.PromptLen != 512 || g.Job.GenLen != 64 ||
		g.Job.Stack.String() != "transformers=4.35.2" || g.Metric != MetricDevice || !g.Reliable {
		t.Errorf("gptq record mapped to %+v", g)
	}
	if b.Job.Dtype != "fp4" || b.Job.ComputeDtype != "fp32" || b.Job.SeqLen != 80 || b.Reliable || b.ConfigID != "" {
		t.Errorf("bnb record mapped to %+v", b)
	}
	if v.Job.Mode != memory.Serving || v.Job.InferenceEngine != "vllm" || v.Job.SeqLen != 0 || v.Job.TP != 2 ||
		v.Job.GPUMemoryUtilization != 0.95 || v.Parts["weights"] != 14.99 || v.Parts["kv_tokens"] != 476000 ||
		v.ConfigID != "meta-llama/Llama-3.1-8B" {
		t.Errorf("vllm record mapped to %+v", v)
	}
}

func TestLoadInferenceRecordsBadInput(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"not json", `{"id":`, "measurements"},
		{"object", `{"id": "x"}`, "measurements"},
		{"negative value", `[{"id": "x", "mode": "inference", "job": {"mode": "inference", "metric_kind": "allocated", "value_bytes": -5}}]`, "negative"},
		{"no id", `[{"mode": "inference", "job": {"mode": "inference", "metric_kind": "allocated", "value_bytes": 5}}]`, "missing id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadInferenceRecords([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestInferenceMapperRegistered(t *testing.T) {
	// Run scores the inference records through the inference
	// mapper registered in this package: its rows agree with CheckInference.
	recs, err := DevRecords()
	if err != nil {
		t.Fatal(err)
	}
	rep := Run(recs, Options{})
	var scored int
	for _, r := range rep.Rows {
		if r.Mode != "inference" || !r.Scored {
			continue
		}
		scored++
		if math.Abs(r.ErrorPct) > 100*TargetP90 {
			t.Errorf("%s: %+.1f %%", r.ID, r.ErrorPct)
		}
	}
	if scored < 8 {
		t.Errorf("Run scored %d inference rows, want 8", scored)
	}
}

func TestSummarizeInference(t *testing.T) {
	mk := func(err float64, scoreable, reliable bool, skipped string) InferenceCheck {
		return InferenceCheck{Record: InferenceRecord{Scoreable: scoreable, Reliable: reliable}, RelErr: err, Skipped: skipped}
	}
	checks := []InferenceCheck{
		mk(0.01, true, true, ""), mk(-0.03, true, true, ""), mk(0.02, true, true, ""), mk(-0.2, true, true, ""),
		mk(0.9, false, true, ""), mk(0.9, true, false, ""), mk(0.9, true, true, "no config"),
	}
	s := SummarizeInference(checks)
	if s.N != 4 || math.Abs(s.Median-0.025) > 1e-12 || s.MeetsTargets {
		t.Errorf("summary %+v, want n 4, median 0.025, p90 above target", s)
	}
	if e := SummarizeInference(nil); e.N != 0 || e.MeetsTargets {
		t.Errorf("empty summary %+v", e)
	}
}

func FuzzLoadInferenceRecords(f *testing.F) {
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"id": "a", "mode": "inference", "job": {"mode": "inference", "batch": 2, "prompt_len": 3, "value_bytes": 10, "metric_kind": "allocated"}}]`))
	f.Add([]byte(`[{"id": "v", "mode": "serving", "other_measurements": {"weights_GiB": 1e308}, "job": {"mode": "inference", "serving": true, "tp": -3, "value_bytes": 1000000000000000000, "metric_kind": "kv_pool"}}]`))
	f.Add([]byte(`[{"id": "q", "mode": "inference", "job": {"mode": "inference", "metric_kind": "device", "quant_format": "bitsandbytes nf4, bf16 compute", "gpu_memory_gib": 1e300, "gpu_memory_utilization": -1}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := LoadInferenceRecords(data)
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.Value < 0 || r.Job.Batch < 0 || r.Job.TP < 0 || r.Job.GPUMemory < 0 || r.Job.GPUMemoryUtilization < 0 || r.Job.GPUMemoryUtilization > 1 {
				t.Errorf("record %s mapped to negative values: %+v", r.ID, r)
			}
		}
	})
}
