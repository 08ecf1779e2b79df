package memory

import "github.com/gpumem/gpumem/units"

// Result is the answer for one job: parameter totals and the memory of
// the most loaded GPU. Its JSON form is the contract the CLI, the HTTP API
// and the web page share.
type Result struct {
	Model           string `json:"model"`
	Architecture    string `json:"architecture"`
	TotalParams     int64  `json:"total_params"`
	TrainableParams int64  `json:"trainable_params"`
	// ActiveParams is the parameter count used per token (MoE); equals TotalParams for dense models.
	ActiveParams int64  `json:"active_params,omitempty"`
	Job          Job    `json:"job"`
	PerGPU       PerGPU `json:"per_gpu"`
	// Host is CPU RAM / NVMe needed for offload, if any.
	Host *Host `json:"host,omitempty"`
	// Serving is the KV-cache capacity of a vLLM deployment (Mode serving only).
	Serving  *ServingResult `json:"serving,omitempty"`
	Warnings []string       `json:"warnings,omitempty"`
}

// PerGPU is the memory of one (the most loaded) GPU.
type PerGPU struct {
	// AllocatedPeakBytes is what torch.cuda.max_memory_allocated reports.
	AllocatedPeakBytes units.Bytes `json:"allocated_peak_bytes"`
	// ReservedPeakBytes is what torch.cuda.max_memory_reserved reports:
	// the allocated peak plus caching-allocator rounding and fragmentation.
	ReservedPeakBytes units.Bytes `json:"reserved_peak_bytes"`
	// DevicePeakBytes is what nvidia-smi reports for the process: reserved
	// plus CUDA context, library workspaces and non-PyTorch allocations.
	DevicePeakBytes units.Bytes `json:"device_peak_bytes"`
	// PeakPhase names the phase of the step at which the allocated peak occurs.
	PeakPhase string `json:"peak_phase"`
	// Components is the breakdown: each row's bytes as counted at the peak phase.
	Components []Component `json:"components"`
	// Phases is the allocated total at each phase of the step.
	Phases []Phase `json:"phases,omitempty"`
	// Band is the uncertainty of the device peak: low, expected and high
	// with the terms they come from (see [Band]).
	Band *Band `json:"band,omitempty"`
}

// Component is one row of the breakdown.
type Component struct {
	// Name is a stable identifier, e.g. "weights", "gradients",
	// "optimizer_states", "activations", "loss", "cuda_context".
	Name string `json:"name"`
	// Bytes is the size of the component at the peak phase.
	Bytes units.Bytes `json:"bytes"`
	// Level says which peak the component belongs to: "allocated",
	// "reserved" (fragmentation) or "device" (context, workspaces).
	Level string `json:"level"`
	// Phase says when the component is alive or at its largest
	// ("persistent", "forward", "backward", "step").
	Phase string `json:"phase,omitempty"`
	// Formula explains how Bytes was computed, with inputs (for --explain).
	Formula string `json:"formula,omitempty"`
	// Source cites where the formula comes from.
	Source string `json:"source,omitempty"`
}

// Phase is the allocated memory at one point of a step.
type Phase struct {
	Name  string      `json:"name"` // forward, loss, backward, step, prefill, decode
	Bytes units.Bytes `json:"bytes"`
}

// Host is host-side memory needed by offload.
type Host struct {
	CPUBytes  units.Bytes `json:"cpu_bytes"`
	NVMeBytes units.Bytes `json:"nvme_bytes,omitempty"`
}
