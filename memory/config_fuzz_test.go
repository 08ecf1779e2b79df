package memory

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// FuzzEstimateConfig estimates jobs on models read from fuzzed config
// files, the path a config.json takes from the user to a figure: every
// parameter count of the result is between 0 and the model's total, the
// components add up to each peak of the device and of every pipeline
// stage, and nothing wraps below zero (sizes saturate instead).
func FuzzEstimateConfig(f *testing.F) {
	for _, id := range []string{"HuggingFaceTB/SmolLM2-135M-Instruct", "Qwen/Qwen3-30B-A3B", "openai/gpt-oss-20b"} {
		data, err := model.CatalogConfig(id)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(0))
	}
	// The largest models whose total still fits in an int64.
	f.Add([]byte(`{"model_type":"gpt_oss","hidden_size":16000000,"n_layers":4077,"num_experts":8000}`), uint8(1))
	// Each module fits, the total does not: the parser refuses it.
	f.Add([]byte(`{"model_type":"gpt_oss","hidden_size":16000000,"n_layers":4077,"num_experts":16370}`), uint8(0))
	f.Add([]byte(`{"model_type":"llama","hidden_size":2000000,"num_hidden_layers":4096,"num_attention_heads":1,"intermediate_size":200000000,"vocab_size":100}`), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, pick uint8) {
		m, err := model.Parse(data)
		if err != nil {
			return
		}
		total := m.TotalParams()
		if total <= 0 {
			t.Fatalf("total %d", total)
		}
		for i, job := range configFuzzJobs(m, pick) {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				r, err := Estimate(m, job)
				if err != nil {
					return
				}
				full := job.Mode == "" && job.Method != "lora" // LoRA adapters are parameters of their own
				if r.TotalParams != total || r.TrainableParams < 0 || (full && r.TrainableParams != total) ||
					r.ActiveParams < 0 || r.ActiveParams > total {
					t.Fatalf("params: total %d (model %d), trainable %d, active %d", r.TotalParams, total, r.TrainableParams, r.ActiveParams)
				}
				if p := r.Parallel; p != nil && p.LargestUnitParams < 0 {
					t.Fatalf("largest unit %d parameters", p.LargestUnitParams)
				}
				if job.Mode == Inference {
					for _, c := range r.PerGPU.Components {
						if c.Bytes < 0 || c.Bytes > r.PerGPU.DevicePeakBytes {
							t.Fatalf("%s: %d bytes, device peak %d", c.Name, c.Bytes, r.PerGPU.DevicePeakBytes)
						}
					}
					return
				}
				checkParts(t, r)
				for _, s := range r.Stages {
					checkParts(t, Result{PerGPU: s.PerGPU})
					if s.PerGPU.DevicePeakBytes > r.PerGPU.DevicePeakBytes {
						t.Fatalf("stage %d peaks at %d, above the result's %d", s.Stage, s.PerGPU.DevicePeakBytes, r.PerGPU.DevicePeakBytes)
					}
				}
			})
		}
	})
}

// configFuzzJobs are the jobs FuzzEstimateConfig runs on a model: a
// single-GPU full fine-tune or LoRA, a pipelined ZeRO-3 job, and an
// inference.
func configFuzzJobs(m *model.Model, pick uint8) []Job {
	method := "full"
	if pick%2 == 1 {
		method = "lora"
	}
	pp := min(2, m.Text.Layers)
	return []Job{
		{Method: method, SeqLen: 256, AllowLong: true},
		{Engine: "deepspeed", ZeRO: 3, NumGPUs: 4 * pp, PP: pp, SeqLen: 128, AllowLong: true},
		{Mode: Inference, Batch: 1, PromptLen: 128, GenLen: 16, AllowLong: true, GPUMemory: units.GiB},
	}
}

// A count computed in floating point near the int64 limit rounds up to
// 2⁶³, which a plain conversion wraps to the most negative int64.
func TestRoundCount(t *testing.T) {
	tests := []struct {
		in   float64
		want int64
	}{
		{0, 0}, {-3, 0}, {math.NaN(), 0}, {0.4, 0}, {0.5, 1}, {1e6 + 0.49, 1e6},
		{math.MaxInt64, math.MaxInt64}, {1e19, math.MaxInt64}, {math.Inf(1), math.MaxInt64},
	}
	for _, tt := range tests {
		if got := roundCount(tt.in); got != tt.want {
			t.Errorf("roundCount(%v) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
