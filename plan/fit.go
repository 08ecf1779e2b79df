package plan

import (
	"fmt"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// Headroom is the share of a GPU's memory a plan keeps free: a job whose
// predicted device peak is above (1 − Headroom) of the memory is "tight".
//
// Five percent covers what the estimate cannot see in advance:
//   - allocator fragmentation varies by 2–10 % of reserved memory between
//     runs of the same job (MODEL.md §10, §15.5), and the estimate uses one
//     value inside that range;
//   - the driver total nvidia-smi shows is 0.5–0.9 GiB above the total
//     CUDA lets a process use (PyTorch's out-of-memory messages on an
//     A100-80GB say 79.15 GiB of nvidia-smi's 80 GiB, 1.1 %; vLLM reports
//     79.19 of 79.65 GiB on an H100-80GB, 0.6 %; torchtitan 95.04 GiB on a
//     96 GB H100 whose board class shows 95.58 GiB);
//   - NCCL, cuDNN autotuning and other libraries grow lazily during the
//     first steps by tens to hundreds of MiB (MODEL.md §10).
//
// The figure matches the common practice of leaving ~5 % free and is
// below vLLM's own default reserve (gpu_memory_utilization 0.9).
const Headroom = 0.05

// Verdict says how a job sits on one GPU.
type Verdict string

// Verdicts, from best to worst.
const (
	Fits       Verdict = "fits"         // device peak <= (1 − Headroom) · memory
	Tight      Verdict = "tight"        // within the headroom: may OOM on a bad run
	DoesNotFit Verdict = "does_not_fit" // device peak > memory
)

// Rank orders verdicts: 0 for Fits, 1 for Tight, 2 for DoesNotFit.
func (v Verdict) Rank() int {
	switch v {
	case Fits:
		return 0
	case Tight:
		return 1
	}
	return 2
}

// Fit is the feasibility of one job result on one GPU kind.
type Fit struct {
	// GPU is the catalog name.
	GPU string `json:"gpu"`
	// GPUMemoryBytes is the GPU's memory as the driver reports it.
	GPUMemoryBytes units.Bytes `json:"gpu_memory_bytes"`
	// NeedBytes is the per-GPU peak compared: the device peak (what
	// nvidia-smi shows for the process), see [Need].
	NeedBytes units.Bytes `json:"need_bytes"`
	// FreeBytes is memory left at the peak; 0 when the job does not fit.
	FreeBytes units.Bytes `json:"free_bytes"`
	// ShortBytes is the memory missing when the job does not fit; 0 otherwise.
	ShortBytes units.Bytes `json:"short_bytes"`
	// Utilization is NeedBytes / GPUMemoryBytes, in percent.
	Utilization float64 `json:"utilization_pct"`
	// Verdict is fits, tight or does_not_fit.
	Verdict Verdict `json:"verdict"`
	// Reason explains a does_not_fit verdict that is not about the peak
	// (a vLLM KV pool too small for one sequence of max_model_len).
	Reason string `json:"reason,omitempty"`
}

// Need returns the per-GPU bytes a result must fit in: the device peak,
// because the driver's total is what runs out. A result that leaves the
// device level empty falls back to the reserved, then the allocated peak.
func Need(r memory.Result) units.Bytes {
	p := &r.PerGPU
	return need(p.DevicePeakBytes, p.ReservedPeakBytes, p.AllocatedPeakBytes)
}

// NeedPeaks is [Need] of the peaks [memory.Estimator.Peak] reports.
func NeedPeaks(p memory.Peaks) units.Bytes {
	return need(p.DeviceBytes, p.ReservedBytes, p.AllocatedBytes)
}

func need(device, reserved, allocated units.Bytes) units.Bytes {
	switch {
	case device > 0:
		return device
	case reserved > 0:
		return reserved
	}
	return allocated
}

// Budget is the most a device peak may be and still get the verdict Fits
// on g: (1 − Headroom) of its memory, rounded down.
func Budget(g gpu.GPU) units.Bytes {
	return units.Bytes(float64(g.Memory) * (1 - Headroom))
}

// Check compares r against g's memory. A serving result whose KV pool
// cannot hold one sequence of max_model_len tokens does not fit whatever
// its peak: vLLM refuses to start.
func Check(r memory.Result, g gpu.GPU) Fit {
	f := CheckBytes(Need(r), g)
	if why := poolTooSmall(r); why != "" {
		f.Verdict, f.Reason = DoesNotFit, why
	}
	return f
}

// poolTooSmall explains why a serving result cannot start, or returns "".
func poolTooSmall(r memory.Result) string {
	s := r.Serving
	if s == nil || s.MaxModelLenFits {
		return ""
	}
	return fmt.Sprintf("KV pool of %s holds %d tokens, fewer than max_model_len %d", s.KVPoolBytes, s.KVTokens, s.MaxModelLen)
}

// within reports whether r's peak stays within budget (and a serving
// engine can start), and if not, why.
func within(r memory.Result, budget units.Bytes) (bool, string) {
	if why := poolTooSmall(r); why != "" {
		return false, why
	}
	if need := Need(r); need > budget {
		return false, fmt.Sprintf("needs %s > budget %s", need, budget)
	}
	return true, ""
}

// CheckBytes compares a per-GPU need against g's memory.
func CheckBytes(need units.Bytes, g gpu.GPU) Fit {
	f := Fit{GPU: g.Name, GPUMemoryBytes: g.Memory, NeedBytes: need}
	if g.Memory > 0 {
		f.Utilization = 100 * float64(need) / float64(g.Memory)
	}
	switch {
	case need > g.Memory:
		f.Verdict = DoesNotFit
		f.ShortBytes = need - g.Memory
	case need > Budget(g):
		f.Verdict = Tight
		f.FreeBytes = g.Memory - need
	default:
		f.Verdict = Fits
		f.FreeBytes = g.Memory - need
	}
	return f
}

// String is a one-line summary such as "fits: 61.20 GiB of 79.65 GiB (76.8 %)".
func (f Fit) String() string {
	s := fmt.Sprintf("%s: %s of %s (%.1f %%)", f.Verdict, f.NeedBytes, f.GPUMemoryBytes, f.Utilization)
	if f.Reason != "" {
		s += ": " + f.Reason
	}
	return s
}
