package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/model"
)

// ServingPlanRow is one parallel layout of [ServingPlan] and the vLLM
// capacity it gives.
type ServingPlanRow struct {
	// TP, PP and EP are the tensor-, pipeline- and expert-parallel sizes.
	TP int `json:"tp"`
	PP int `json:"pp"`
	EP int `json:"ep"`
	// GPUs is TP × PP.
	GPUs int `json:"gpus"`
	// Serving is the capacity of the layout (nil when Error is set).
	Serving *ServingResult `json:"serving,omitempty"`
	// Warnings are the estimate's warnings (a pool too small for max_model_len, ...).
	Warnings []string `json:"warnings,omitempty"`
	// Error says why the layout is invalid.
	Error string `json:"error,omitempty"`
}

// ServingPlan sizes a vLLM deployment of m on every layout of up to
// maxGPUs GPUs (the layouts of [ParallelTable]): the KV pool, the tokens
// and concurrent sequences it holds, and whether max_model_len fits.
// Job describes the engine (GPU, utilization, lengths, KV dtype); its
// Mode, TP, PP and EP are set per row. A job that is invalid on every
// layout (no GPU memory given) is an error.
func ServingPlan(m *model.Model, job Job, maxGPUs int) ([]ServingPlanRow, error) {
	if m == nil {
		return nil, fmt.Errorf("serving plan: no model")
	}
	if err := checkMaxGPUs(maxGPUs); err != nil {
		return nil, fmt.Errorf("serving plan: %w", err)
	}
	if _, err := servingGPUMemory(job); err != nil {
		return nil, fmt.Errorf("serving plan: %w", err)
	}
	var rows []ServingPlanRow
	for _, l := range parallelLayouts(m, maxGPUs) {
		row := ServingPlanRow{TP: l.tp, PP: l.pp, EP: l.ep, GPUs: l.tp * l.pp}
		j := job
		j.Mode, j.TP, j.PP, j.EP = Serving, l.tp, l.pp, l.ep
		r, err := Estimate(m, j)
		if err != nil {
			row.Error = err.Error()
		} else {
			row.Serving, row.Warnings = r.Serving, r.Warnings
		}
		rows = append(rows, row)
	}
	return rows, nil
}
