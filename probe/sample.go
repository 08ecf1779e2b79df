package probe

import (
	"context"
	"time"

	"github.com/gpumem/gpumem/units"
)

// Sampler reads the memory of every GPU and of every process using one.
// [NvidiaSMI] is the real implementation; tests inject fakes.
type Sampler interface {
	Sample(ctx context.Context) (Snapshot, error)
}

// Snapshot is one reading of all GPUs and of the processes on them.
type Snapshot struct {
	// GPUs has one entry per device, in index order.
	GPUs []GPU
	// Processes has one entry per (process, GPU) pair holding device memory.
	Processes []Process
}

// GPU is the memory of one device at one moment.
type GPU struct {
	Index int
	UUID  string
	// Used is the device memory in use by all processes (nvidia-smi memory.used).
	Used units.Bytes
	// Total is the device memory size (nvidia-smi memory.total).
	Total units.Bytes
}

// Process is the device memory one process holds on one GPU.
type Process struct {
	PID     int
	GPUUUID string
	// Used is the process's device memory (nvidia-smi used_memory): its
	// CUDA context plus everything its allocators reserved.
	Used units.Bytes
}

// Sample is the memory of the probed process tree at one moment.
type Sample struct {
	// Time is when the sample was taken.
	Time time.Time `json:"time"`
	// ElapsedMS is the time since the command started, in milliseconds.
	ElapsedMS int64 `json:"elapsed_ms"`
	// GPUs has one entry per device.
	GPUs []GPUUsage `json:"gpus"`
}

// GPUUsage is the memory of one device in a [Sample].
type GPUUsage struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	// ProcessBytes is the memory the probed process tree holds on the
	// device (with AllProcesses: the memory of every process).
	ProcessBytes units.Bytes `json:"process_bytes"`
	// UsedBytes is the device memory in use by all processes.
	UsedBytes units.Bytes `json:"used_bytes"`
	// TotalBytes is the size of the device.
	TotalBytes units.Bytes `json:"total_bytes"`
}

// usage turns a snapshot into the usage of the process tree pids. With all
// set every process counts and a device's whole used memory is reported,
// for hosts where nvidia-smi shows PIDs of another namespace.
func usage(s Snapshot, pids map[int]bool, all bool) []GPUUsage {
	byUUID := make(map[string]units.Bytes, len(s.GPUs))
	for _, p := range s.Processes {
		if pids[p.PID] {
			byUUID[p.GPUUUID] = units.Add(byUUID[p.GPUUUID], p.Used)
		}
	}
	out := make([]GPUUsage, 0, len(s.GPUs))
	for _, g := range s.GPUs {
		u := GPUUsage{Index: g.Index, UUID: g.UUID, ProcessBytes: byUUID[g.UUID], UsedBytes: g.Used, TotalBytes: g.Total}
		if all {
			u.ProcessBytes = g.Used
		}
		out = append(out, u)
	}
	return out
}
