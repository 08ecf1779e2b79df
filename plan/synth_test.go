package plan

import (
	"errors"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// synth is a synthetic training-memory model whose answers are known in
// closed form. Per GPU, with P = params/(tp·pp):
//
//	weights 2P, gradients 2P, optimizer 12P bytes, divided by dp as the
//	sharding stage says; activations actPerToken · mb · seq / (tp·cp),
//	times 1, 1/2 or 1/10 for no, selective or full checkpointing; plus a
//	fixed 1 GiB.
type synth struct {
	params      int64
	actPerToken int64
}

var errSynthMoE = errors.New("synthetic: expert parallelism needs an MoE model")

func (s synth) estimate(j memory.Job) (memory.Result, error) {
	if j.EP > 1 {
		return memory.Result{}, errSynthMoE
	}
	if j.SeqLen > 32768 {
		return memory.Result{}, errors.New("synthetic: seq_len above max_position_embeddings")
	}
	tp, pp, cp := max(j.TP, 1), max(j.PP, 1), max(j.CP, 1)
	n := max(j.NumGPUs, 1)
	dp := int64(max(n/(tp*pp*cp), 1))
	p := s.params / int64(tp*pp)
	w, g, o := 2*p, 2*p, 12*p
	switch j.Method {
	case "lora":
		g, o = 0, 0
	case "qlora":
		w, g, o = p/2, 0, 0
	}
	stage := j.ZeRO
	switch {
	case j.Engine == "fsdp" && j.FSDPStrategy == "full_shard", j.Engine == "fsdp2":
		stage = 3
	case j.Engine == "fsdp" && j.FSDPStrategy == "shard_grad_op":
		stage = 2
	case j.Engine == "megatron":
		stage = min(stage, 1)
	}
	if stage >= 1 {
		o /= dp
	}
	if stage >= 2 {
		g /= dp
	}
	if stage >= 3 {
		w /= dp
	}
	if j.OffloadOptimizer == "cpu" {
		o = 0
	}
	if j.OffloadParams == "cpu" {
		w, g = 0, 0
	}
	act := s.actPerToken * int64(max(j.MicroBatch, 1)) * int64(max(j.SeqLen, 1)) / int64(tp*cp)
	switch j.GradCheckpoint {
	case "selective":
		act /= 2
	case "full":
		act /= 10
	}
	total := units.Bytes(w+g+o+act) + units.GiB
	return memory.Result{Job: j, PerGPU: memory.PerGPU{AllocatedPeakBytes: total, ReservedPeakBytes: total, DevicePeakBytes: total}}, nil
}
