package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// vLLM's CUDA-graph estimate (from 0.21; rule vllm-cudagraph-outside-budget
// marks the versions before). From 0.21
// the worker's profiler captures graphs against a small dummy KV cache
// before the real cache is sized, and takes their memory out of the
// budget (vllm-project/vllm PR #30515; on by default from v0.21.0). For
// each capture mode it measures the first graph (the largest batch,
// whose pool the others share) and the second one's increment, and
// extrapolates: estimate = max over modes of the first graph's pool +
// Σ over modes of per_graph × (graphs − 1), per_graph = max(second
// graph's increment, 1 MiB) (gpu_model_runner.py profile_cudagraph_memory,
// quoted in vllm-project/vllm issue #45178 and PR #45197).
//
// gpumem cannot measure the second graph's increment from a config; it
// counts the shared pool as one decode forward at the largest captured
// batch (cudaGraphs) and the increments at their 1 MiB floor, for the
// piecewise graphs every default configuration captures. vLLM's own
// figure is at least this large, often larger (issues #45178, #53013
// report overestimates of several GiB), so the KV pool it leaves can only
// be smaller than gpumem's.
const vllmGraphIncrementFloor = units.MiB

// vllmCaptureSizes counts the batch sizes vLLM captures a CUDA graph for
// up to limit: 1, 2, 4, then every 8 up to 248, then every 16 from 256
// (vllm-project/vllm:vllm/config/compilation.py, the default
// cudagraph_capture_sizes).
func vllmCaptureSizes(limit int) int {
	n := 0
	for _, s := range []int{1, 2, 4} {
		if s <= limit {
			n++
		}
	}
	for s := 8; s < 256 && s <= limit; s += 8 {
		n++
	}
	for s := 256; s <= limit; s += 16 {
		n++
	}
	return n
}

// vllmGraphEstimate is the CUDA-graph memory vLLM's profiler takes out of
// the KV budget on the GPUs of stage r.
func (in *inferenceInputs) vllmGraphEstimate(m *model.Model, setup servingSetup, r stageRange) Component {
	largest := min(setup.maxSeqs, vllmMaxCaptureSize)
	shape := actShape{st: &m.Text, tp: in.tp, ep: in.ep, attn: inferFlash, act: in.act.BytesPerElement(), lo: r.lo, hi: r.hi}
	shared := shape.layerTransient(int64(largest), 1, 1)
	graphs := vllmCaptureSizes(largest)
	incr := units.MulInt(int64(max(graphs-1, 0)), int64(vllmGraphIncrementFloor))
	return Component{Name: "cuda_graphs", Bytes: units.Add(shared.bytes, units.Bytes(incr)), Level: "reserved", Phase: "persistent",
		Formula: fmt.Sprintf("in vLLM's budget (vLLM %s): shared pool of the largest graph (batch %d: %s) + %d more graphs × %s (the per-graph floor; vLLM measures the increment at startup)",
			setup.version, largest, shared.formula, max(graphs-1, 0), units.FormatIEC(vllmGraphIncrementFloor)),
		Source: "vllm-project/vllm PR #30515, vllm/v1/worker/gpu_model_runner.py profile_cudagraph_memory; vLLM 0.21 and later (rule vllm-cudagraph-outside-budget before)"}
}
