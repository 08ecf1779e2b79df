package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// vllmMaxCaptureSize is the largest batch vLLM captures a CUDA graph for
// by default (vllm-project/vllm:vllm/config/compilation.py,
// max_cudagraph_capture_size 512).
const vllmMaxCaptureSize = 512

// result assembles the Result of an inference job from the most loaded
// stage: the peak phase's rows, then fragmentation, CUDA graphs, CUDA
// context and workspace.
func (in *inferenceInputs) result(m *model.Model, job Job, est stageEstimate) (Result, error) {
	o, err := RuntimeOverheads(job)
	if err != nil {
		return Result{}, fmt.Errorf("inference estimate: %w", err)
	}
	peak := est.phases[est.peak]
	alloc := peak.total()
	comps := append(make([]Component, 0, len(peak.parts)+5), peak.parts...)
	comps = o.appendComponents(comps, alloc)
	reserved := o.Reserved(alloc)
	if job.CUDAGraphs {
		g := in.cudaGraphs(m, in.batch)
		comps = append(comps, g)
		reserved = units.Add(reserved, g.Bytes)
	}
	phases := make([]Phase, len(est.phases))
	for i, p := range est.phases {
		phases[i] = Phase{Name: p.name, Bytes: p.total()}
	}
	warnings := append([]string(nil), in.warnings...)
	if o.Warning != "" {
		warnings = append(warnings, o.Warning)
	}
	total, active := inferenceParamTotals(m)
	var assumed KeySet
	resolved := in.resolvedInferenceJob(job, &assumed)
	return Result{
		Model: m.ID, Architecture: m.Architecture, TotalParams: total, ActiveParams: active, Job: resolved, Assumed: assumed,
		PerGPU: PerGPU{
			AllocatedPeakBytes: alloc, ReservedPeakBytes: reserved, DevicePeakBytes: o.Device(reserved),
			PeakPhase: peak.name, Components: comps, Phases: phases,
		},
		Warnings: warnings,
	}, nil
}

// cudaGraphs is the private memory pool of captured CUDA graphs: the
// graphs of all batch sizes share one pool, as large as the transient of
// one decode forward at the largest captured batch (vLLM captures the
// model forward only, after the KV cache is allocated and outside its
// budget: vllm-project/vllm:vllm/v1/worker/gpu_worker.py, MODEL.md §7.3, §10).
func (in *inferenceInputs) cudaGraphs(m *model.Model, tokens int64) Component {
	shape := actShape{st: &m.Text, tp: in.tp, ep: in.ep, attn: inferFlash, act: in.act.BytesPerElement(), lo: 0, hi: m.Text.Layers}
	t := shape.layerTransient(tokens, 1, 1)
	return Component{Name: "cuda_graphs", Bytes: t.bytes, Level: "reserved", Phase: phaseDecode,
		Formula: fmt.Sprintf("graph pool = one decode layer at the largest captured batch %d: %s", tokens, t.formula),
		Source:  "MODEL.md §7.3 step 5, §10 (CUDA-graph private pools)"}
}
