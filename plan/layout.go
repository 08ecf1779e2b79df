package plan

import (
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/memory"
)

// Offload choices of a layout.
const (
	OffloadNone      = "none"
	OffloadOptimizer = "optimizer" // optimizer states (and the step) on the CPU
	OffloadParams    = "params"    // parameters and optimizer states on the CPU
)

// Layout is one way to run a training job: the fields of [memory.Job] the
// search varies. Its zero value is one GPU, one process, no sharding.
type Layout struct {
	Engine         string `json:"engine,omitempty"`
	ZeRO           int    `json:"zero,omitempty"`          // DeepSpeed stage; Megatron: 1 = distributed optimizer
	FSDPStrategy   string `json:"fsdp_strategy,omitempty"` // FSDP1: full_shard or shard_grad_op
	NumGPUs        int    `json:"num_gpus"`                // total GPUs
	TP             int    `json:"tp"`                      // tensor parallel
	PP             int    `json:"pp"`                      // pipeline parallel
	CP             int    `json:"cp"`                      // context parallel
	EP             int    `json:"ep"`                      // expert parallel
	MicroBatch     int    `json:"per_device_batch"`        // micro-batch per GPU
	GradCheckpoint string `json:"grad_checkpoint"`         // none, selective or full
	Offload        string `json:"offload"`                 // none, optimizer or params
	Method         string `json:"method,omitempty"`        // full, lora, qlora ("" = the base job's)
	GradAccum      int    `json:"grad_accum,omitempty"`    // micro-batches per step (the base job's)
}

// DP is the data-parallel size: NumGPUs / (TP·PP·CP).
func (l Layout) DP() int {
	mp := max(l.TP, 1) * max(l.PP, 1) * max(l.CP, 1)
	if l.NumGPUs < mp {
		return 0
	}
	return l.NumGPUs / mp
}

// Apply returns base with the layout's fields set.
func (l Layout) Apply(base memory.Job) memory.Job {
	j := base
	j.Engine = l.Engine
	j.ZeRO = l.ZeRO
	j.FSDPStrategy = l.FSDPStrategy
	j.NumGPUs = l.NumGPUs
	j.DP = l.DP()
	j.TP, j.PP, j.CP, j.EP = l.TP, l.PP, l.CP, l.EP
	j.MicroBatch = l.MicroBatch
	j.GradCheckpoint = l.GradCheckpoint
	if l.GradCheckpoint == "none" {
		j.GradCheckpoint = ""
	}
	j.OffloadOptimizer, j.OffloadParams = "", ""
	switch l.Offload {
	case OffloadOptimizer:
		j.OffloadOptimizer = "cpu"
	case OffloadParams:
		j.OffloadOptimizer, j.OffloadParams = "cpu", "cpu"
	}
	if l.Method != "" {
		j.Method = l.Method
	}
	return j
}

// String is a compact description such as
// "8 GPUs deepspeed zero3 tp1 pp1 mb4 ckpt=full".
func (l Layout) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d GPU", l.NumGPUs)
	if l.NumGPUs != 1 {
		b.WriteByte('s')
	}
	b.WriteByte(' ')
	b.WriteString(l.Sharding())
	if l.TP > 1 || l.PP > 1 || l.CP > 1 || l.EP > 1 {
		fmt.Fprintf(&b, " tp%d pp%d cp%d ep%d", max(l.TP, 1), max(l.PP, 1), max(l.CP, 1), max(l.EP, 1))
	}
	fmt.Fprintf(&b, " mb%d ckpt=%s", l.MicroBatch, l.GradCheckpoint)
	if l.Offload != "" && l.Offload != OffloadNone {
		fmt.Fprintf(&b, " offload=%s", l.Offload)
	}
	if l.Method != "" {
		fmt.Fprintf(&b, " %s", l.Method)
	}
	return b.String()
}

// Sharding names the engine and its sharding: "single", "ddp",
// "deepspeed zero3", "fsdp full_shard", "megatron distopt".
func (l Layout) Sharding() string {
	switch l.Engine {
	case memory.EngineSingle:
		return "single"
	case memory.EngineDeepSpeed:
		return fmt.Sprintf("deepspeed zero%d", l.ZeRO)
	case memory.EngineFSDP:
		return "fsdp " + l.FSDPStrategy
	case memory.EngineMegatron:
		if l.ZeRO >= 1 {
			return "megatron distopt"
		}
		return "megatron"
	}
	return l.Engine
}
