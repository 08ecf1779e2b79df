package probe

import (
	"errors"
	"fmt"

	"github.com/gpumem/gpumem/units"
)

// SyntheticResult is the JSON line the synthetic probe script prints
// (schema "gpumem-probe/1"). Byte counts are plain integers; a field absent
// from the line reads as zero. See the package documentation for the schema.
type SyntheticResult struct {
	// Schema is always [SyntheticSchema].
	Schema string `json:"schema"`
	// OK is false when the run failed; ErrorKind and Error say why.
	OK bool `json:"ok"`
	// ErrorKind is one of missing_module, no_cuda, oom, bad_job,
	// unsupported, exception.
	ErrorKind string `json:"error_kind,omitempty"`
	Error     string `json:"error,omitempty"`
	// Module is the Python module that failed to import (missing_module).
	Module string `json:"module,omitempty"`

	// Model is the transformers class that was built.
	Model    string         `json:"model,omitempty"`
	Device   DeviceInfo     `json:"device"`
	Software Software       `json:"software"`
	Params   ParamCounts    `json:"params"`
	Steps    StepCounts     `json:"steps"`
	Applied  map[string]any `json:"applied,omitempty"`

	// AllocatedPeakBytes is the largest torch.cuda.max_memory_allocated
	// over the measured steps' phases.
	AllocatedPeakBytes units.Bytes `json:"allocated_peak_bytes"`
	// ReservedPeakBytes is the largest torch.cuda.max_memory_reserved.
	ReservedPeakBytes units.Bytes `json:"reserved_peak_bytes"`
	// DevicePeakBytes is the largest device figure read at phase ends.
	DevicePeakBytes units.Bytes `json:"device_peak_bytes"`
	// DeviceSource says where DevicePeakBytes comes from: "nvidia-smi"
	// (this process) or "mem_get_info" (the whole device).
	DeviceSource string `json:"device_source,omitempty"`

	// Phases are the per-phase peaks: forward, backward, step (training)
	// or prefill, decode (inference).
	Phases []MeasuredPhase `json:"phases"`
	// Components are figures measured directly: weights, gradients,
	// optimizer_states, activations, cuda_context.
	Components []MeasuredComponent `json:"components"`
	Warnings   []string            `json:"warnings,omitempty"`
}

// DeviceInfo is the GPU the script ran on.
type DeviceInfo struct {
	Index int `json:"index"`
	// Name is torch.cuda.get_device_name: "NVIDIA H100 80GB HBM3".
	Name       string `json:"name"`
	Capability string `json:"capability"`
	// TotalBytes is the device's total_memory (get_device_properties).
	TotalBytes units.Bytes `json:"total_bytes"`
	// CUDAFreeBytes and CUDATotalBytes are what torch.cuda.mem_get_info
	// reported once the script's CUDA context existed: the memory CUDA
	// could still hand out and the total it sees (0 from scripts older
	// than these fields).
	CUDAFreeBytes  units.Bytes `json:"cuda_free_bytes,omitempty"`
	CUDATotalBytes units.Bytes `json:"cuda_total_bytes,omitempty"`
}

// Software is the stack the script ran with: a calibration profile
// applies to one such stack.
type Software struct {
	Python       string `json:"python,omitempty"`
	Torch        string `json:"torch,omitempty"`
	CUDA         string `json:"cuda,omitempty"`
	Driver       string `json:"driver,omitempty"`
	Transformers string `json:"transformers,omitempty"`
	PEFT         string `json:"peft,omitempty"`
	Accelerate   string `json:"accelerate,omitempty"`
	BitsAndBytes string `json:"bitsandbytes,omitempty"`
	FlashAttn    string `json:"flash_attn,omitempty"`
	// AllocConf is PYTORCH_CUDA_ALLOC_CONF as set for the run.
	AllocConf string `json:"alloc_conf,omitempty"`
}

// ParamCounts are the model's parameter counts as torch sees them.
type ParamCounts struct {
	Total     int64 `json:"total"`
	Trainable int64 `json:"trainable"`
}

// StepCounts are the warm-up and measured steps run.
type StepCounts struct {
	Warmup   int `json:"warmup"`
	Measured int `json:"measured"`
}

// MeasuredPhase is the memory of one phase of a step, the largest over the
// measured steps. Peak statistics are reset at the start of each phase.
type MeasuredPhase struct {
	Name               string      `json:"name"`
	AllocatedPeakBytes units.Bytes `json:"allocated_peak_bytes"`
	ReservedPeakBytes  units.Bytes `json:"reserved_peak_bytes"`
	// AllocatedEndBytes is memory_allocated when the phase ended.
	AllocatedEndBytes units.Bytes `json:"allocated_end_bytes"`
	// DeviceBytes is the device figure when the phase ended.
	DeviceBytes units.Bytes `json:"device_bytes"`
}

// MeasuredComponent is one directly measured part of the memory.
type MeasuredComponent struct {
	Name  string      `json:"name"`
	Bytes units.Bytes `json:"bytes"`
	// How says how the figure was obtained.
	How string `json:"how,omitempty"`
}

// validate checks the invariants torch guarantees; a line that breaks
// them was not written by a working probe.
func (r *SyntheticResult) validate() error {
	if r.Schema != SyntheticSchema {
		return fmt.Errorf("schema %q: want %q (gpumem and its probe script are from different versions?)", r.Schema, SyntheticSchema)
	}
	if !r.OK {
		if r.ErrorKind == "" {
			return errors.New("ok is false but error_kind is empty")
		}
		return r.checkBytes()
	}
	if r.AllocatedPeakBytes <= 0 {
		return fmt.Errorf("allocated_peak_bytes %d: want a positive byte count", r.AllocatedPeakBytes)
	}
	if r.ReservedPeakBytes < r.AllocatedPeakBytes {
		return fmt.Errorf("reserved_peak_bytes %d is below allocated_peak_bytes %d", r.ReservedPeakBytes, r.AllocatedPeakBytes)
	}
	if len(r.Phases) == 0 {
		return errors.New("phases: want at least one measured phase")
	}
	return r.checkBytes()
}

// checkBytes rejects negative sizes and unnamed rows.
func (r *SyntheticResult) checkBytes() error {
	if r.AllocatedPeakBytes < 0 || r.ReservedPeakBytes < 0 || r.DevicePeakBytes < 0 || r.Device.TotalBytes < 0 {
		return errors.New("peak byte counts must not be negative")
	}
	if d := r.Device; d.CUDAFreeBytes < 0 || d.CUDATotalBytes < 0 || d.CUDAFreeBytes > d.CUDATotalBytes {
		return fmt.Errorf("device: cuda_free_bytes %d and cuda_total_bytes %d: want 0 <= free <= total", d.CUDAFreeBytes, d.CUDATotalBytes)
	}
	for i, p := range r.Phases {
		if p.Name == "" {
			return fmt.Errorf("phases[%d].name is empty", i)
		}
		if p.AllocatedPeakBytes < 0 || p.ReservedPeakBytes < 0 || p.AllocatedEndBytes < 0 || p.DeviceBytes < 0 {
			return fmt.Errorf("phases[%d] (%s): byte counts must not be negative", i, p.Name)
		}
	}
	for i, c := range r.Components {
		if c.Name == "" {
			return fmt.Errorf("components[%d].name is empty", i)
		}
		if c.Bytes < 0 {
			return fmt.Errorf("components[%d] (%s).bytes %d: must not be negative", i, c.Name, c.Bytes)
		}
	}
	return nil
}

// Err turns a failed result into an error with advice, nil when OK.
func (r SyntheticResult) Err() error {
	if r.OK {
		return nil
	}
	switch r.ErrorKind {
	case "missing_module":
		hint := installHints[r.Module]
		if hint == "" {
			hint = "pip install " + r.Module
		}
		return fmt.Errorf("%w: python cannot import %s: %s (%s)", ErrMissingModule, r.Module, hint, r.Error)
	case "no_cuda":
		return fmt.Errorf("%w: %s; install a CUDA build of PyTorch and the NVIDIA driver", ErrNoCUDA, r.Error)
	case "oom":
		return fmt.Errorf("%w (allocated peak %s before the failure): %s", ErrOOM, units.FormatIEC(r.AllocatedPeakBytes), r.Error)
	}
	return fmt.Errorf("probe script failed (%s): %s", r.ErrorKind, r.Error)
}

// Measured is what a probe measured on the most loaded GPU; zero means
// not measured.
type Measured struct {
	AllocatedPeakBytes units.Bytes         `json:"allocated_peak_bytes,omitempty"`
	ReservedPeakBytes  units.Bytes         `json:"reserved_peak_bytes,omitempty"`
	DevicePeakBytes    units.Bytes         `json:"device_peak_bytes,omitempty"`
	Phases             []MeasuredPhase     `json:"phases,omitempty"`
	Components         []MeasuredComponent `json:"components,omitempty"`
}
