package plan

import "github.com/gpumem/gpumem/memory"

// Throughput proxy. Search ranks layouts by Score = 1 / Cost, a relative
// throughput per GPU: 1.0 is one GPU training with no recompute, no
// communication and a large micro-batch. Cost multiplies the slowdowns a
// layout adds to the ideal step:
//
//	Cost = R · B · (1 + C) · O · M · E
//
//	R  recompute     none 1, selective 1 + RecomputeSelective, full 4/3
//	B  pipeline      1 + (pp − 1) / m, m = micro-batches per step (grad accumulation)
//	C  communication TPComm·(1 − 1/tp) + CPComm·(1 − 1/cp) + EPComm·(1 − 1/ep)
//	                 + DPComm·(1 − 1/dp) [×2 across nodes]
//	                 + ShardComm·(1 − 1/dp) for ZeRO-3 / FSDP full_shard
//	O  offload       none 1, optimizer OffloadOptimizerCost, params OffloadParamsCost
//	M  method        full 1, lora 2/3, qlora 2/3 · QLoRADequantCost
//	E  micro-batch   1 + SmallBatchCost / micro-batch
//
// Because it is per GPU, a layout that needs more GPUs only ranks higher
// when it removes a larger slowdown (recompute, offload) than the
// communication it adds; equal scores go to the layout with fewer GPUs.
// The exact terms (R, B, M) come from FLOP counts; the others are
// heuristics, named below so that they can be argued with.
const (
	// RecomputeSelective is the extra compute of selective activation
	// recomputation (attention core only): Korthikanti et al. 2022 §5
	// measure 2.7 % on GPT-3 175B; we use 3 %.
	RecomputeSelective = 0.03
	// RecomputeFull is full-layer recomputation: one extra forward pass,
	// 8Ψ instead of 6Ψ FLOPs per token (Chen et al. 2016; Korthikanti §4).
	RecomputeFull = 4.0 / 3.0
	// TPComm is the step-time share of tensor-parallel all-reduces on the
	// critical path (two per layer forward, two backward; Megatron-LM,
	// Shoeybi et al. 2019 §3) at large tp. Heuristic.
	TPComm = 0.15
	// CPComm is the share of context-parallel ring attention exchanges not
	// hidden behind attention compute. Heuristic.
	CPComm = 0.10
	// EPComm is the share of the expert-parallel all-to-all (dispatch and
	// combine). Heuristic.
	EPComm = 0.10
	// DPComm is the share of the gradient all-reduce that bucketing does
	// not overlap with the backward pass, within one node. Heuristic.
	DPComm = 0.05
	// ShardComm is the extra share of ZeRO-3 / FSDP full_shard, which
	// all-gathers parameters in forward and backward: 1.5x the DDP volume
	// (Rajbhandari et al. 2020 §7.2.2). ZeRO-1/2 move as much as DDP (§7.2.1).
	ShardComm = 0.10
	// OffloadOptimizerCost is the slowdown of running the optimizer step
	// on the CPU with PCIe transfers (ZeRO-Offload). Heuristic.
	OffloadOptimizerCost = 1.3
	// OffloadParamsCost is the slowdown of also streaming parameters from
	// host memory every forward and backward (ZeRO-Infinity). Heuristic.
	OffloadParamsCost = 1.6
	// LoRACompute is LoRA's compute relative to full fine-tuning: no
	// weight gradients, so 4Ψ instead of 6Ψ FLOPs per token.
	LoRACompute = 2.0 / 3.0
	// QLoRADequantCost is the extra time of dequantizing 4-bit weights in
	// every forward and backward matmul. Heuristic.
	QLoRADequantCost = 1.3
	// SmallBatchCost is the kernel inefficiency of a micro-batch of one
	// sequence relative to a large micro-batch. Heuristic.
	SmallBatchCost = 0.10
	// GPUsPerNode is the NVLink domain size assumed by the search:
	// tp·cp must fit in it, and data-parallel traffic beyond it costs twice.
	GPUsPerNode = 8
)

// Cost returns the slowdown factor of l relative to the ideal step; see
// the package constants for the formula.
func Cost(l Layout) float64 {
	return recomputeCost(l.GradCheckpoint) * bubbleCost(l) * (1 + commCost(l)) *
		offloadCost(l.Offload) * methodCost(l.Method) * (1 + SmallBatchCost/float64(max(l.MicroBatch, 1)))
}

// Score is the relative throughput per GPU, 1 / [Cost].
func Score(l Layout) float64 { return 1 / Cost(l) }

func recomputeCost(ckpt string) float64 {
	switch ckpt {
	case "", "none":
		return 1
	case "selective":
		return 1 + RecomputeSelective
	}
	return RecomputeFull
}

// bubbleCost is the 1F1B pipeline bubble (Narayanan et al. 2021 §2.2):
// (pp − 1) idle slots per m micro-batches. Interleaved stages shrink it;
// the proxy ignores them, so it ranks interleaved layouts conservatively.
func bubbleCost(l Layout) float64 {
	if l.PP <= 1 {
		return 1
	}
	m := float64(max(l.GradAccum, 1))
	return 1 + float64(l.PP-1)/m
}

func commCost(l Layout) float64 {
	frac := func(n int) float64 {
		if n <= 1 {
			return 0
		}
		return 1 - 1/float64(n)
	}
	dp := l.DP()
	dpComm := DPComm
	if l.NumGPUs > GPUsPerNode {
		dpComm *= 2
	}
	c := TPComm*frac(l.TP) + CPComm*frac(l.CP) + EPComm*frac(l.EP) + dpComm*frac(dp)
	if l.Engine == memory.EngineDeepSpeed && l.ZeRO == 3 || l.Engine == memory.EngineFSDP && l.FSDPStrategy == "full_shard" || l.Engine == memory.EngineFSDP2 {
		c += ShardComm * frac(dp)
	}
	return c
}

func offloadCost(o string) float64 {
	switch o {
	case OffloadOptimizer:
		return OffloadOptimizerCost
	case OffloadParams:
		return OffloadParamsCost
	}
	return 1
}

func methodCost(m string) float64 {
	switch m {
	case "lora":
		return LoRACompute
	case "qlora":
		return LoRACompute * QLoRADequantCost
	}
	return 1
}
