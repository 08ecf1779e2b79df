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
	ActiveParams int64 `json:"active_params,omitempty"`
	// Job is the job as estimated: the caller's job with every setting
	// the estimate resolved filled in (defaults included).
	Job Job `json:"job"`
	// Assumed lists the settings of Job the caller left empty and the
	// estimate filled with a default (docs/DEFAULTS.md gives the source
	// of each default).
	Assumed KeySet `json:"assumed,omitzero"`
	PerGPU  PerGPU `json:"per_gpu"`
	// Loading is the loading phase of a training job (nil for inference
	// and serving): its GPU and host RAM peaks, before the first step.
	Loading *Loading `json:"loading,omitempty"`
	// Host is CPU RAM / NVMe needed for offload, if any.
	Host *Host `json:"host,omitempty"`
	// Serving is the KV-cache capacity of a vLLM deployment (Mode serving only).
	Serving *ServingResult `json:"serving,omitempty"`
	// Parallel is the resolved layout of a distributed training job (nil
	// for a single process).
	Parallel *Parallel `json:"parallel,omitempty"`
	// Stages has one entry per pipeline stage when PP > 1; PerGPU is then
	// the most loaded stage's (the largest device peak).
	Stages   []StageResult `json:"stages,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
}

// Parallel is the resolved parallel layout of a training job.
type Parallel struct {
	// Engine is the normalised engine: ddp, deepspeed, fsdp, fsdp2 or megatron.
	Engine string `json:"engine"`
	// World is the number of GPUs; World = DP·TP·PP·CP.
	World int `json:"world"`
	DP    int `json:"dp"`
	TP    int `json:"tp"`
	PP    int `json:"pp"`
	CP    int `json:"cp"`
	EP    int `json:"ep"`
	// ZeRO is the sharding stage the engine amounts to: 0 replicated,
	// 1 optimizer states, 2 + gradients, 3 + parameters.
	ZeRO int `json:"zero"`
	// ShardGroup is the number of ranks the sharded states are divided by.
	ShardGroup int `json:"shard_group"`
	// LargestUnitParams is the parameter count (on this rank, before
	// data-parallel sharding) of the largest unit a sharded rank gathers
	// at once: for FSDP one wrapped decoder layer or the root unit, for
	// DeepSpeed ZeRO-3 the largest module owning parameters directly.
	LargestUnitParams int64 `json:"largest_unit_params,omitempty"`
	// PeakStage is the pipeline stage whose GPU is the most loaded.
	PeakStage int `json:"peak_stage"`
}

// StageResult is the memory of a GPU of one pipeline stage.
type StageResult struct {
	// Stage is the 0-based pipeline stage.
	Stage int `json:"stage"`
	// FirstLayer and Layers are the text layers the stage runs.
	FirstLayer int `json:"first_layer"`
	Layers     int `json:"layers"`
	// InFlight is the number of micro-batches whose activations the stage
	// holds at its peak (1F1B: min(pp − stage, micro-batches)).
	InFlight float64 `json:"micro_batches_in_flight"`
	// Embedding and OutputLayer say whether the stage holds the input
	// embedding / the final norm, output head and loss.
	Embedding   bool   `json:"embedding,omitempty"`
	OutputLayer bool   `json:"output_layer,omitempty"`
	PerGPU      PerGPU `json:"per_gpu"`
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
	// MaxBytes and MaxPhase are set when the component is larger in
	// another phase of the step than at the peak: its largest size and
	// that phase (activations are 0 B at an optimizer-step peak, yet
	// largest at the end of forward).
	MaxBytes units.Bytes `json:"max_bytes,omitempty"`
	MaxPhase string      `json:"max_phase,omitempty"`
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

// Host is host-side memory needed by offload, per node: the offloaded
// states of every rank on the node.
type Host struct {
	CPUBytes  units.Bytes `json:"cpu_bytes"`
	NVMeBytes units.Bytes `json:"nvme_bytes,omitempty"`
	// GPUsPerNode is the number of ranks whose states one node holds.
	GPUsPerNode int `json:"gpus_per_node,omitempty"`
}
