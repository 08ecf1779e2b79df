package calibrate

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/probe"
)

// MaxRunsSize is the largest runs file read, in bytes: a record is a
// few KiB, so this holds tens of thousands of runs.
const MaxRunsSize = 256 << 20

// maxRunLine bounds one line of a runs file (a run with a long timeline
// stays far below it: timelines are not part of a run record).
const maxRunLine = 16 << 20

// Run is one line of a runs file (JSON Lines): a job, what gpumem
// estimated for it and what a probe measured. `gpumem probe --record`
// appends such lines.
type Run struct {
	// ID names the run in messages and tables (optional).
	ID string `json:"id,omitempty"`
	// Model is the model the job ran.
	Model string `json:"model,omitempty"`
	// GPU is the device name as the probe saw it ("NVIDIA H100 80GB HBM3").
	GPU string `json:"gpu,omitempty"`
	// Software is the stack the run used.
	Software probe.Software `json:"software"`
	// Job is the job as estimated, with the constants it was estimated with.
	Job memory.Job `json:"job"`
	// Estimate is the estimate's per-GPU result for Job.
	Estimate memory.PerGPU `json:"estimate"`
	// Measured is what the probe measured on the most loaded GPU.
	Measured probe.Measured `json:"measured"`
}

// name is how messages refer to the run.
func (r Run) name(i int) string {
	if r.ID != "" {
		return r.ID
	}
	return fmt.Sprintf("run %d", i+1)
}

// ReadRuns reads a runs file: one [Run] per line, blank lines and lines
// starting with "#" skipped. Errors name the file and line.
func ReadRuns(r io.Reader, file string) ([]Run, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxRunLine)
	var runs []Run
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var run Run
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&run); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", file, n, err)
		}
		if err := run.validate(); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", file, n, err)
		}
		runs = append(runs, run)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no runs (want one JSON object per line)", file)
	}
	return runs, nil
}

// validate checks what the fit relies on.
func (r Run) validate() error {
	m, e := r.Measured, r.Estimate
	if m.AllocatedPeakBytes < 0 || m.ReservedPeakBytes < 0 || m.DevicePeakBytes < 0 {
		return errors.New("measured: peaks must not be negative")
	}
	if m.AllocatedPeakBytes == 0 && m.ReservedPeakBytes == 0 && m.DevicePeakBytes == 0 {
		return errors.New("measured: no peak (want allocated_peak_bytes, reserved_peak_bytes or device_peak_bytes)")
	}
	if m.AllocatedPeakBytes > 0 && m.ReservedPeakBytes > 0 && m.ReservedPeakBytes < m.AllocatedPeakBytes {
		return fmt.Errorf("measured: reserved_peak_bytes %d is below allocated_peak_bytes %d", m.ReservedPeakBytes, m.AllocatedPeakBytes)
	}
	if e.AllocatedPeakBytes <= 0 || e.ReservedPeakBytes < e.AllocatedPeakBytes || e.DevicePeakBytes < e.ReservedPeakBytes {
		return fmt.Errorf("estimate: want 0 < allocated_peak_bytes <= reserved_peak_bytes <= device_peak_bytes, got %d, %d, %d",
			e.AllocatedPeakBytes, e.ReservedPeakBytes, e.DevicePeakBytes)
	}
	for _, c := range e.Components {
		if c.Bytes < 0 {
			return fmt.Errorf("estimate: component %s: bytes must not be negative", c.Name)
		}
	}
	if _, err := memory.RuntimeOverheads(r.Job); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	return nil
}

// Kind returns the GPU kind of the run: the catalog name its device name
// or job names (package gpu), or the device name as given when neither
// is a catalog board.
func (r Run) Kind() string {
	for _, name := range []string{r.GPU, r.Job.GPU} {
		if g, err := gpu.Lookup(name); err == nil {
			return g.Name
		}
	}
	return strings.TrimSpace(cmp.Or(r.GPU, r.Job.GPU))
}

// withGPUFacts returns the run with its job's GPU facts (compute
// capability, memory) filled from the catalog when the job names a
// catalog board but states none of them, as runs recorded before jobs
// carried them do: the estimator reads no catalog.
func (r Run) withGPUFacts() Run {
	j := r.Job
	if j.GPU == "" || j.GPUComputeCapability != 0 || j.GPUMemory != 0 {
		return r
	}
	if job, _, err := plan.ResolveGPU(nil, j); err == nil {
		r.Job = job
	}
	return r
}

// Stack returns the run's software stack as "torch X, CUDA Y".
func (r Run) Stack() string { return stackString(r.Software) }

func stackString(s probe.Software) string {
	var parts []string
	if s.Torch != "" {
		parts = append(parts, "torch "+minorVersion(s.Torch))
	}
	if s.CUDA != "" {
		parts = append(parts, "CUDA "+minorVersion(s.CUDA))
	}
	if len(parts) == 0 {
		return "unknown stack"
	}
	return strings.Join(parts, ", ")
}

// minorVersion keeps major.minor of a version: "2.5.1+cu124" -> "2.5".
// Allocator and kernel behaviour change between minor releases, rarely
// between patch releases.
func minorVersion(v string) string {
	v, _, _ = strings.Cut(v, "+")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// Select keeps the runs of one GPU kind: gpu is looked up in the GPU
// catalog and compared with each run's [Run.Kind] by catalog name, or by
// name when it is not a catalog board. An empty gpu keeps all.
func Select(runs []Run, gpuName string) []Run {
	if gpuName == "" {
		return runs
	}
	want := gpuName
	if g, err := gpu.Lookup(gpuName); err == nil {
		want = g.Name
	}
	var out []Run
	for _, r := range runs {
		if strings.EqualFold(r.Kind(), want) {
			out = append(out, r)
		}
	}
	return out
}

// checkOneGroup returns an error when runs mix GPU kinds or stacks: a
// profile describes one of each.
func checkOneGroup(runs []Run) error {
	count := map[string]int{}
	for _, r := range runs {
		count[r.Kind()+" ("+r.Stack()+")"]++
	}
	if len(count) <= 1 {
		return nil
	}
	groups := make([]string, 0, len(count))
	for g, n := range count {
		groups = append(groups, fmt.Sprintf("%s: %d runs", g, n))
	}
	sort.Strings(groups)
	return fmt.Errorf("runs mix GPU kinds or software stacks (%s): a profile is for one GPU kind and stack; select one with --gpu or split the file", strings.Join(groups, "; "))
}

// AppendRun appends run as one line to the runs file at path, creating
// the file if needed. The run is checked as [ReadRuns] would check it.
func AppendRun(path string, run Run) error {
	if err := run.validate(); err != nil {
		return fmt.Errorf("run %s: %w", run.ID, err)
	}
	line, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("encode run %s: %w", run.ID, err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
