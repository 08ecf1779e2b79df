package memory

import (
	"fmt"
	"slices"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// DtypeRow is one row of [DtypeTable]: the memory of one model at one
// weight dtype for inference, full training and LoRA. A zero byte count
// with a note means the combination is not estimated.
type DtypeRow struct {
	// Dtype is the weight format (--dtype).
	Dtype string `json:"dtype"`
	// WeightsBytes is the weights alone, as loaded for inference.
	WeightsBytes units.Bytes `json:"weights_bytes"`
	// InferenceBytes is the device peak of the inference job.
	InferenceBytes units.Bytes `json:"inference_bytes"`
	// TrainingBytes is the device peak of full fine-tuning at this dtype.
	TrainingBytes units.Bytes `json:"full_training_bytes,omitempty"`
	// LoRABytes is the device peak of LoRA (QLoRA for 4-bit dtypes).
	LoRABytes units.Bytes `json:"lora_bytes,omitempty"`
	// Notes say why a column is empty.
	Notes []string `json:"notes,omitempty"`
}

// DtypeTable estimates job for every weight format of
// [WeightFormatNames]: the inference column with job as given (Mode
// inference), the training columns with Mode train, full fine-tuning for
// float dtypes and LoRA (QLoRA on bitsandbytes 4-bit dtypes). Job fields
// other than Mode, Dtype and Method are kept, so batch and sequence
// lengths apply to every column. A combination the estimators reject
// leaves its column empty with the reason in Notes; an invalid inference
// job is an error.
func DtypeTable(m *model.Model, job Job) ([]DtypeRow, error) {
	if m == nil {
		return nil, fmt.Errorf("dtype table: no model")
	}
	rows := make([]DtypeRow, 0, len(WeightFormatNames()))
	for _, name := range WeightFormatNames() {
		row, err := dtypeRow(m, job, name)
		if err != nil {
			return nil, fmt.Errorf("dtype table: %s: %w", name, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// dtypeRow estimates one dtype.
func dtypeRow(m *model.Model, job Job, name string) (DtypeRow, error) {
	row := DtypeRow{Dtype: name}
	inf := job
	inf.Mode, inf.Dtype = Inference, name
	r, err := Estimate(m, inf)
	if err != nil {
		return row, err
	}
	row.InferenceBytes = r.PerGPU.DevicePeakBytes
	for _, c := range r.PerGPU.Components {
		if c.Name == "weights" {
			row.WeightsBytes = c.Bytes
		}
	}
	f, err := ParseWeightFormat(name, false)
	if err != nil {
		return row, err
	}
	train := job
	train.Mode, train.Dtype, train.Method = Train, name, "full"
	if f.Quantized() {
		row.Notes = append(row.Notes, "full training: quantized weights are not trained directly")
	} else if t, err := Estimate(m, train); err != nil {
		row.Notes = append(row.Notes, "full training: "+err.Error())
	} else {
		row.TrainingBytes = t.PerGPU.DevicePeakBytes
	}
	train.Method = "lora"
	if f.Layout == LayoutBnb4 {
		train.Method, train.QuantType = "qlora", name
	}
	if t, err := Estimate(m, train); err != nil {
		row.Notes = append(row.Notes, "lora: "+err.Error())
	} else {
		row.LoRABytes = t.PerGPU.DevicePeakBytes
	}
	return row, nil
}

// ParallelRow is one row of [ParallelTable]: one tensor/pipeline/expert
// parallel layout and the memory of its most loaded GPU.
type ParallelRow struct {
	// TP, PP and EP are the tensor-, pipeline- and expert-parallel sizes.
	TP int `json:"tp"`
	PP int `json:"pp"`
	EP int `json:"ep"`
	// GPUs is TP × PP.
	GPUs int `json:"gpus"`
	// WeightsBytes is the weights on the most loaded GPU.
	WeightsBytes units.Bytes `json:"weights_bytes"`
	// KVCacheBytes is its KV cache at the job's batch and lengths.
	KVCacheBytes units.Bytes `json:"kv_cache_bytes"`
	// DeviceBytes is its device peak (weights, cache, activations, overheads).
	DeviceBytes units.Bytes `json:"device_bytes"`
	// Error says why the layout is invalid ("" when it is valid).
	Error string `json:"error,omitempty"`
}

// ParallelTable estimates the inference job on every layout of up to
// maxGPUs GPUs (powers of two): each TP × PP split, and for MoE models
// the same with experts spread over the TP ranks (EP = TP, as vLLM's
// --enable-expert-parallel does without data parallelism). Invalid layouts
// (TP not dividing the heads, more stages than layers) are listed with
// their error. Rows are sorted by GPU count, then TP.
func ParallelTable(m *model.Model, job Job, maxGPUs int) ([]ParallelRow, error) {
	if m == nil {
		return nil, fmt.Errorf("parallel table: no model")
	}
	if err := checkMaxGPUs(maxGPUs); err != nil {
		return nil, fmt.Errorf("parallel table: %w", err)
	}
	var rows []ParallelRow
	for _, l := range parallelLayouts(m, maxGPUs) {
		rows = append(rows, parallelRow(m, job, l.tp, l.pp, l.ep))
	}
	return rows, nil
}

// layout is one tensor × pipeline (× expert) parallel split.
type layout struct{ tp, pp, ep int }

// parallelLayouts lists the layouts of 1, 2, 4, … maxGPUs GPUs: every
// TP × PP split, and for MoE models the same with EP = TP; sorted by GPU
// count, then TP.
func parallelLayouts(m *model.Model, maxGPUs int) []layout {
	moe := m.Text.MoE != nil && m.Text.MoE.Experts > 1
	var out []layout
	for n := 1; n <= maxGPUs; n *= 2 {
		for tp := 1; tp <= n; tp *= 2 {
			out = append(out, layout{tp, n / tp, 1})
			if moe && tp > 1 {
				out = append(out, layout{tp, n / tp, tp})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b layout) int {
		if a.tp*a.pp != b.tp*b.pp {
			return a.tp*a.pp - b.tp*b.pp
		}
		return a.tp - b.tp
	})
	return out
}

// checkMaxGPUs bounds the layout search.
func checkMaxGPUs(maxGPUs int) error {
	if maxGPUs < 1 || maxGPUs > 1<<12 {
		return fmt.Errorf("max GPUs %d: want 1 to 4096", maxGPUs)
	}
	return nil
}

// parallelRow estimates one layout.
func parallelRow(m *model.Model, job Job, tp, pp, ep int) ParallelRow {
	row := ParallelRow{TP: tp, PP: pp, EP: ep, GPUs: tp * pp}
	j := job
	j.Mode, j.TP, j.PP, j.EP = Inference, tp, pp, ep
	r, err := Estimate(m, j)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	row.DeviceBytes = r.PerGPU.DevicePeakBytes
	for _, c := range r.PerGPU.Components {
		switch c.Name {
		case "weights":
			row.WeightsBytes = c.Bytes
		case "kv_cache":
			row.KVCacheBytes = c.Bytes
		}
	}
	return row
}
