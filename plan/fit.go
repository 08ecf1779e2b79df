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
	Fits       Verdict = "fits"         // the need ([Need]: by default the band's upper edge) <= (1 − Headroom) · memory
	Tight      Verdict = "tight"        // the need is within the headroom or above the memory: may OOM on a bad run
	DoesNotFit Verdict = "does_not_fit" // the device peak itself (or the loading peak) > memory
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
	// NeedBytes is the per-GPU figure compared with the memory, see
	// [Need]: by default the upper edge of the band of the device peak,
	// or the loading phase's device peak when that is larger.
	NeedBytes units.Bytes `json:"need_bytes"`
	// DecidedOn says which estimate of the step NeedBytes took:
	// "upper" (the band's upper edge) or "point" (the device peak).
	DecidedOn string `json:"decided_on"`
	// Phase says which phase NeedBytes is: "step" or "loading".
	Phase string `json:"phase"`
	// PointBytes is the device peak of a step (what nvidia-smi shows),
	// UpperBytes the upper edge of its band, and LoadingBytes the device
	// peak while the model loads (0 when not estimated).
	PointBytes   units.Bytes `json:"point_bytes"`
	UpperBytes   units.Bytes `json:"upper_bytes"`
	LoadingBytes units.Bytes `json:"loading_bytes,omitempty"`
	// FreeBytes is memory left at NeedBytes; 0 when it is above the memory.
	FreeBytes units.Bytes `json:"free_bytes"`
	// ShortBytes is the memory missing when the job does not fit; 0 otherwise.
	ShortBytes units.Bytes `json:"short_bytes"`
	// Utilization is NeedBytes / GPUMemoryBytes, in percent.
	Utilization float64 `json:"utilization_pct"`
	// Verdict is fits, tight or does_not_fit.
	Verdict Verdict `json:"verdict"`
	// Reason explains a verdict that is not about the GPU peak (a vLLM
	// KV pool too small for one sequence of max_model_len, the host RAM
	// while loading).
	Reason string `json:"reason,omitempty"`
}

// Needs are the figures a question of fit reads from an estimate.
type Needs struct {
	// Point is the device peak of a step, Upper the upper edge of its
	// band (Point without a band) and Loading the loading phase's device
	// peak (0 when not estimated).
	Point, Upper, Loading units.Bytes
	// DecideOn is memory.DecideUpper or memory.DecidePoint.
	DecideOn string
}

// NeedsOf reads the figures of fit of r, as its job decides (Job.DecideOn).
func NeedsOf(r memory.Result) Needs {
	p := &r.PerGPU
	n := Needs{Point: need(p.DevicePeakBytes, p.ReservedPeakBytes, p.AllocatedPeakBytes), DecideOn: decideOn(r.Job)}
	n.Upper = n.Point
	if p.Band != nil && p.Band.HighBytes > n.Upper {
		n.Upper = p.Band.HighBytes
	}
	if r.Loading != nil {
		n.Loading = r.Loading.DeviceBytes
	}
	return n
}

// NeedsOfPeaks is [NeedsOf] of the peaks [memory.Estimator.Peak]
// reports, for a job that decides on decide.
func NeedsOfPeaks(p memory.Peaks, decide string) Needs {
	n := Needs{Point: need(p.DeviceBytes, p.ReservedBytes, p.AllocatedBytes), Loading: p.LoadingBytes, DecideOn: decide}
	n.Upper = max(n.Point, p.HighBytes)
	return n
}

// decideOn is the job's Job.DecideOn, an invalid value read as the
// default (the estimator rejects it before a result exists).
func decideOn(j memory.Job) string {
	d, err := memory.ParseDecideOn(j.DecideOn)
	if err != nil {
		return memory.DecideUpper
	}
	return d
}

// Decided is the figure compared with a GPU: the step's point or upper
// edge, as DecideOn says, or the loading peak when that is larger.
func (n Needs) Decided() units.Bytes {
	step := n.Upper
	if n.DecideOn == memory.DecidePoint {
		step = n.Point
	}
	return max(step, n.Loading)
}

// phase names the phase of Decided: "loading" when the loading peak is
// the larger.
func (n Needs) phase() string {
	if n.Loading > 0 && n.Loading == n.Decided() {
		return "loading"
	}
	return "step"
}

// Need returns the per-GPU bytes a result must fit in: the device peak,
// because the driver's total is what runs out — by default the upper
// edge of its band ([memory.Band]), or the peak itself for a job that
// decides on the point (Job.DecideOn) — or the loading phase's device
// peak when that is larger. A result that leaves the device level empty
// falls back to the reserved, then the allocated peak.
func Need(r memory.Result) units.Bytes {
	return NeedsOf(r).Decided()
}

// NeedPeaks is [Need] of the peaks [memory.Estimator.Peak] reports.
func NeedPeaks(p memory.Peaks, decide string) units.Bytes {
	return NeedsOfPeaks(p, decide).Decided()
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

// Check compares r against g's memory ([CheckNeeds]). A serving result
// whose KV pool cannot hold one sequence of max_model_len tokens does not
// fit whatever its peak: vLLM refuses to start; one whose pool holds it
// only below the band's upper edge is tight. A training job whose
// loading peak in host RAM is above the job's host memory
// (Job.HostMemory) does not fit either.
func Check(r memory.Result, g gpu.GPU) Fit {
	n := NeedsOf(r)
	f := CheckNeeds(n, g)
	switch {
	case poolTooSmall(r) != "":
		f.Verdict, f.Reason = DoesNotFit, poolTooSmall(r)
	case hostShort(r) != "":
		f.Verdict, f.Reason = DoesNotFit, hostShort(r)
	case n.DecideOn == memory.DecideUpper && poolTightAtUpper(r) != "" && f.Verdict == Fits:
		f.Verdict, f.Reason = Tight, poolTightAtUpper(r)
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

// poolTightAtUpper explains why a serving result may not start when the
// memory vLLM does not budget (CUDA context, allocator) reaches the
// band's upper edge: the KV pool shrinks by the band's upward width, and
// may then hold fewer tokens than max_model_len. "" when it holds them.
func poolTightAtUpper(r memory.Result) string {
	s, b := r.Serving, r.PerGPU.Band
	if s == nil || b == nil || s.MaxModelLen <= 0 || s.KVPoolBytes <= 0 {
		return ""
	}
	up := b.HighBytes - b.ExpectedBytes
	if up <= 0 {
		return ""
	}
	left := max(0, s.KVPoolBytes-up)
	tokens := int64(float64(s.KVTokens) * float64(left) / float64(s.KVPoolBytes))
	if tokens >= int64(s.MaxModelLen) {
		return ""
	}
	return fmt.Sprintf("at the band's upper edge (+%s outside vLLM's budget) the KV pool holds about %d tokens, fewer than max_model_len %d", up, tokens, s.MaxModelLen)
}

// hostShort explains why a training job runs out of host RAM while its
// model loads, or returns "" (also when the job gives no host memory).
func hostShort(r memory.Result) string {
	l, mem := r.Loading, r.Job.HostMemory
	if l == nil || mem <= 0 || l.HostBytes <= mem {
		return ""
	}
	return fmt.Sprintf("host RAM while loading: %s per node (%d processes) > %s", l.HostBytes, l.ProcessesPerNode, mem)
}

// within reports whether r's need ([Need]) stays within budget (and a
// serving engine can start, and the host holds the loading), and if not,
// why.
func within(r memory.Result, budget units.Bytes) (bool, string) {
	if why := poolTooSmall(r); why != "" {
		return false, why
	}
	if why := hostShort(r); why != "" {
		return false, why
	}
	n := NeedsOf(r)
	if n.DecideOn == memory.DecideUpper {
		if why := poolTightAtUpper(r); why != "" {
			return false, why
		}
	}
	if need := n.Decided(); need > budget {
		return false, fmt.Sprintf("needs %s > budget %s%s", need, budget, n.qualifier())
	}
	return true, ""
}

// qualifier says what a need is when it is not the step's device peak.
func (n Needs) qualifier() string {
	switch {
	case n.phase() == "loading":
		return " (while loading)"
	case n.DecideOn == memory.DecideUpper && n.Upper > n.Point:
		return " (the band's upper edge)"
	}
	return ""
}

// CheckBytes compares a per-GPU need against g's memory, the need being
// both the point and the upper edge (no band).
func CheckBytes(need units.Bytes, g gpu.GPU) Fit {
	return CheckNeeds(Needs{Point: need, Upper: need, DecideOn: memory.DecidePoint}, g)
}

// CheckNeeds compares the figures of an estimate with g's memory. A job
// does not fit when its device peak (or its loading peak) is above the
// memory: that much is sure to be asked for. It is tight when the figure
// it decides on — by default the band's upper edge — leaves less than
// [Headroom] free, and fits otherwise.
func CheckNeeds(n Needs, g gpu.GPU) Fit {
	need := n.Decided()
	f := Fit{GPU: g.Name, GPUMemoryBytes: g.Memory, NeedBytes: need, DecidedOn: n.DecideOn, Phase: n.phase(),
		PointBytes: n.Point, UpperBytes: n.Upper, LoadingBytes: n.Loading}
	if g.Memory > 0 {
		f.Utilization = 100 * float64(need) / float64(g.Memory)
	}
	sure := max(n.Point, n.Loading)
	switch {
	case sure > g.Memory:
		f.Verdict = DoesNotFit
		f.ShortBytes = sure - g.Memory
	case need > Budget(g):
		f.Verdict = Tight
		f.FreeBytes = max(0, g.Memory-need)
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
