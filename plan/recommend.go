package plan

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// Recommendation is how one job does on one GPU kind.
type Recommendation struct {
	// Fit is the job as given (its GPU count) on this GPU kind.
	Fit
	// GPUs is the GPU count of the job as given.
	GPUs int `json:"num_gpus"`
	// MinGPUs is the smallest GPU count of this kind on which the job
	// fits with the headroom kept, or 0 if none up to the search limit.
	// Training jobs vary NumGPUs (sharding spreads the states);
	// inference and serving vary the tensor-parallel size.
	MinGPUs int `json:"min_gpus"`
	// MinGPUsNeedBytes is the per-GPU peak at MinGPUs.
	MinGPUsNeedBytes units.Bytes `json:"min_gpus_need_bytes,omitempty"`
	// Error is the estimator's error on this GPU kind, if any.
	Error string `json:"error,omitempty"`
	// Warning notes a format the GPU does not compute in natively (see
	// [FormatWarning]); the memory figures still hold.
	Warning string `json:"warning,omitempty"`
}

// Recommend estimates job on every GPU kind in gpus and searches the
// smallest GPU count of each kind that fits (up to maxGPUs). The result is
// ordered for choosing: kinds on which the job fits as given first
// (smallest memory first: the cheapest board that does the job), then by
// the fewest GPUs needed, then kinds that cannot run it.
func Recommend(est EstimateFunc, job memory.Job, gpus []gpu.GPU, maxGPUs int) []Recommendation {
	out := make([]Recommendation, 0, len(gpus))
	for _, g := range gpus {
		out = append(out, recommendOne(est, job, g, maxGPUs))
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ka, kb := a.kind(), b.kind(); ka != kb {
			return ka < kb
		}
		if a.MinGPUs != b.MinGPUs {
			return a.MinGPUs < b.MinGPUs
		}
		return a.GPUMemoryBytes < b.GPUMemoryBytes
	})
	return out
}

// kind groups recommendations: 0 fits as given, 1 tight, 2 fits on more
// GPUs, 3 cannot run.
func (r Recommendation) kind() int {
	switch {
	case r.Error == "" && r.Verdict == Fits:
		return 0
	case r.Error == "" && r.Verdict == Tight:
		return 1
	case r.MinGPUs > 0:
		return 2
	}
	return 3
}

func recommendOne(est EstimateFunc, job memory.Job, g gpu.GPU, maxGPUs int) Recommendation {
	rec := Recommendation{GPUs: gpuCount(job), Warning: FormatWarning(job, g)}
	rec.GPU, rec.GPUMemoryBytes = g.Name, g.Memory
	r, err := est(OnGPU(job, g))
	if err != nil {
		rec.Error = err.Error()
		rec.Verdict = DoesNotFit
	} else {
		rec.Fit = Check(r, g)
	}
	if rec.Error == "" && rec.Verdict == Fits {
		rec.MinGPUs, rec.MinGPUsNeedBytes = rec.GPUs, rec.NeedBytes
	}
	var found Found
	if job.Mode == memory.Inference || job.Mode == memory.Serving {
		found, err = MinTP(est, job, g, maxGPUs)
	} else {
		found, err = MinGPUs(est, job, g, max(maxGPUs, rec.GPUs))
	}
	if err == nil && (rec.MinGPUs == 0 || found.Value < rec.MinGPUs) {
		rec.MinGPUs, rec.MinGPUsNeedBytes = found.Value, Need(found.Result)
	}
	return rec
}

// FormatWarning returns a note when g's matrix units do not compute in
// the job's floating-point format natively ("" otherwise): bf16 on V100
// and T4, fp8 before Ada and Hopper, fp4 before Blackwell. Frameworks then
// fall back (fp16, emulation or weight-only kernels), which changes speed
// and numerics but not the memory estimated here.
func FormatWarning(job memory.Job, g gpu.GPU) string {
	if g.Arch == "" {
		return "" // a board given only by its memory: capabilities unknown
	}
	dt := strings.ToLower(job.Dtype)
	switch dt {
	case "", "bfloat16":
		dt = "bf16"
	case "fp32", "float32":
		dt = strings.ToLower(job.ComputeDtype)
		if dt == "" {
			dt = "bf16"
		}
	}
	switch dt {
	case "bf16", "fp8", "fp4":
		if !g.Supports(dt) {
			return fmt.Sprintf("%s does not compute in %s natively", g.Name, dt)
		}
	}
	return ""
}

// gpuCount is the number of GPUs job runs on.
func gpuCount(job memory.Job) int {
	if job.Mode == memory.Inference || job.Mode == memory.Serving {
		return max(job.TP, 1) * max(job.PP, 1)
	}
	return max(job.NumGPUs, max(job.TP, 1)*max(job.PP, 1)*max(job.CP, 1))
}

// MinTP returns the smallest tensor-parallel size (1, 2, 4, … up to hi;
// the GPU count of an inference or serving job) at which job fits on g
// with the headroom kept. Sizes are tried in order, because a size the
// model does not divide into (heads not divisible by tp) is an estimator
// error rather than a larger memory.
func MinTP(est EstimateFunc, job memory.Job, g gpu.GPU, hi int) (Found, error) {
	job = OnGPU(job, g)
	budget := Budget(g)
	f := Found{Var: "tp", Limit: hi}
	pp := max(job.PP, 1)
	var errs []error
	for tp := 1; tp*pp <= hi; tp *= 2 {
		j := job
		j.TP, j.NumGPUs = tp, tp*pp
		f.Evaluations++
		r, err := est(j)
		if err != nil {
			errs = append(errs, fmt.Errorf("tp %d: %w", tp, err))
			continue
		}
		ok, why := within(r, budget)
		if ok {
			f.Value, f.Result = tp*pp, r
			return f, nil
		}
		f.Stop = fmt.Sprintf("tp %d %s", tp, why)
	}
	if len(errs) > 0 && f.Stop == "" {
		return f, fmt.Errorf("search tp on %s: %w", g.Name, errors.Join(errs...))
	}
	return f, fmt.Errorf("search tp: %w on up to %d x %s: %s", ErrNoFit, hi, g.Name, f.Stop)
}

// RecommendationRows formats recommendations as table cells with headers,
// for the text and Markdown renderers. bytes formats sizes (IEC or SI).
func RecommendationRows(recs []Recommendation, bytes func(units.Bytes) string) ([]string, [][]string) {
	headers := []string{"GPU", "MEMORY", "NEED/GPU", "UTIL", "VERDICT", "GPUS", "MIN GPUS"}
	rows := make([][]string, 0, len(recs))
	for _, r := range recs {
		need, util, verdict := bytes(r.NeedBytes), fmt.Sprintf("%.1f%%", r.Utilization), string(r.Verdict)
		if r.Error != "" {
			need, util, verdict = "-", "-", "error: "+r.Error
		}
		minGPUs := "-"
		if r.MinGPUs > 0 {
			minGPUs = fmt.Sprintf("%d (%s each)", r.MinGPUs, bytes(r.MinGPUsNeedBytes))
		}
		rows = append(rows, []string{r.GPU, bytes(r.GPUMemoryBytes), need, util, verdict, fmt.Sprint(r.GPUs), minGPUs})
	}
	return headers, rows
}

// CandidateRows formats the candidates of a layout search as table cells
// with headers, best first.
func CandidateRows(p Plan, bytes func(units.Bytes) string) ([]string, [][]string) {
	methods := false
	for _, c := range p.Candidates {
		methods = methods || c.Method != ""
	}
	headers := []string{"#", "GPUS", "ENGINE", "TP", "PP", "CP", "EP", "MB", "CKPT", "OFFLOAD", "NEED/GPU", "UTIL", "VERDICT", "SCORE"}
	if methods {
		headers = append(headers, "METHOD")
	}
	rows := make([][]string, 0, len(p.Candidates))
	for i, c := range p.Candidates {
		row := []string{
			fmt.Sprint(i + 1), fmt.Sprint(c.NumGPUs), c.Sharding(),
			fmt.Sprint(max(c.TP, 1)), fmt.Sprint(max(c.PP, 1)), fmt.Sprint(max(c.CP, 1)), fmt.Sprint(max(c.EP, 1)),
			fmt.Sprint(c.MicroBatch), c.GradCheckpoint, c.Offload,
			bytes(c.NeedBytes), fmt.Sprintf("%.1f%%", c.Utilization), string(c.Verdict), fmt.Sprintf("%.3f", c.Score),
		}
		if methods {
			row = append(row, c.Method)
		}
		rows = append(rows, row)
	}
	return headers, rows
}
