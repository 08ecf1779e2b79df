package accuracy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/probe"
	"github.com/gpumem/gpumem/units"
)

// ProbeReport compares gpumem's own measured runs (ProbeRun) with today's
// estimate of the same jobs, part by part.
type ProbeReport struct {
	Runs []ProbeRow `json:"runs"`
	// ByMeasure summarizes the error of the three peaks of the runs that
	// finished: groups "allocated", "reserved" and "device".
	ByMeasure []Summary `json:"by_measure"`
	// ByPhase summarizes the error of each phase's allocated peak.
	ByPhase []Summary `json:"by_phase"`
	// ByComponent summarizes the directly measured components (weights,
	// gradients, optimizer states, activations, CUDA context).
	ByComponent []Summary `json:"by_component"`
}

// ProbeRow is one run against its estimate.
type ProbeRow struct {
	ID     string `json:"id"`
	Model  string `json:"model"`
	GPU    string `json:"gpu"`
	Status string `json:"status"`
	// Rows are the probe package's comparison of the estimate with the
	// measurement (peaks, phases, components); for an out-of-memory run
	// they are not summarized, its peaks stop at the failure.
	Rows []probe.ComparisonRow `json:"rows,omitempty"`
	// EstimatedDeviceBytes is the estimate's device peak and GPUBytes the
	// memory CUDA saw; EstimateFits says whether the estimate has the job
	// fit, which an out-of-memory run shows wrong.
	EstimatedDeviceBytes units.Bytes `json:"estimated_device_bytes,omitempty"`
	GPUBytes             units.Bytes `json:"gpu_bytes,omitempty"`
	EstimateFits         bool        `json:"estimate_fits"`
	// Note says why a run is not compared, or what the estimate assumes.
	Note string `json:"note,omitempty"`
}

// Orders of the summaries' groups.
var (
	measureOrder   = []string{"allocated", "reserved", "device"}
	phaseOrder     = []string{"forward", "loss", "backward", "step", "prefill", "decode"}
	componentOrder = []string{"weights", "gradients", "optimizer_states", "activations", "cuda_context"}
)

// ProbeRunsReport estimates every run's job for the GPU it ran on, with
// opt's constants and models, and compares.
func ProbeRunsReport(runs []ProbeRun, opt Options) ProbeReport {
	ms := newModels(opt)
	var rep ProbeReport
	errs := map[string][]float64{}
	for _, run := range runs {
		row := probeRow(run, opt, ms)
		rep.Runs = append(rep.Runs, row)
		if row.Status != StatusOK {
			continue
		}
		for _, c := range row.Rows {
			errs[c.Kind+" "+c.Name] = append(errs[c.Kind+" "+c.Name], c.ErrorPct)
		}
	}
	summaries := func(kind string, order []string) []Summary {
		var out []Summary
		for _, name := range order {
			if e := errs[kind+" "+name]; len(e) > 0 {
				out = append(out, summaryOf(name, e))
			}
		}
		return out
	}
	rep.ByMeasure = summaries(probe.RowPeak, measureOrder)
	rep.ByPhase = summaries(probe.RowPhase, phaseOrder)
	rep.ByComponent = summaries(probe.RowComponent, componentOrder)
	return rep
}

// probeRow estimates one run and compares.
func probeRow(run ProbeRun, opt Options, ms *models) ProbeRow {
	row := ProbeRow{ID: run.ID, Model: run.Model, GPU: run.GPU.Name, Status: run.Status, GPUBytes: run.GPU.CUDATotalBytes}
	m, err := ms.get(run.Model)
	if err != nil {
		row.Note = fmt.Sprintf("model %s: %v", run.Model, err)
		return row
	}
	job := run.Job
	if g, err := gpu.Lookup(run.GPU.Name); err == nil {
		job = plan.OnGPU(job, g)
	} else {
		job.GPUMemory = run.GPU.CUDATotalBytes
		row.Note = fmt.Sprintf("GPU %q is not in gpumem's catalog: estimated with the memory CUDA reported", run.GPU.Name)
	}
	if len(opt.Constants) > 0 {
		job.Constants = opt.Constants
	}
	res, err := memory.Estimate(m, job)
	if err != nil {
		row.Note = "estimate: " + err.Error()
		return row
	}
	row.EstimatedDeviceBytes = res.PerGPU.DevicePeakBytes
	limit := cmp.Or(run.GPU.CUDATotalBytes, job.GPUMemory)
	row.EstimateFits = limit == 0 || res.PerGPU.DevicePeakBytes <= limit
	measured := probe.SyntheticRun{Result: run.Result}.Measured()
	row.Rows = probe.Compare(res.PerGPU, measured).Rows
	if run.Note != "" {
		row.Note = strings.TrimSpace(row.Note + " " + run.Note)
	}
	return row
}

// get resolves a model by id or alias, once per report.
func (ms *models) get(id string) (*model.Model, error) {
	if m, ok := ms.cache[id]; ok {
		return m, nil
	}
	m, err := ms.resolve(id)
	if err != nil {
		return nil, err
	}
	ms.cache[id] = m
	return m, nil
}

// probeIntro opens the Markdown section of gpumem's own runs.
const probeIntro = `These runs were measured by gpumem's own synthetic probe (probe/script/probe.py) in the
probe campaign (probe/campaign): each job builds a catalog model with random weights on one
GPU, in a fresh process, and reports torch's allocated and reserved peaks and the device
memory, phase by phase, with the components it measures directly. Each run is estimated
again here, with today's memory model, for the GPU it ran on; the records, with their
provenance (GPU, driver, package versions, the hashes of the scripts and job list that
ran, when), are in accuracy/testdata/probe-runs*.jsonl, apart from the published
measurements above. The error is (estimated − measured) / measured; phases compare
allocated peaks (forward is the decoder layers, loss the output layer and cross-entropy,
backward runs to the end of backward).
`

// probeNone is the section's text while no run has been measured.
const probeNone = `No run of gpumem's own probe has been measured yet: nothing in gpumem has run on a GPU.
The campaign that will measure them is ready (probe/README.md, "The probe campaign") and
waits for a GPU; until it has run, every figure on this page comes from published runs.
`

// Markdown renders the section: summaries by measure, by phase and by
// component, every run's peaks and phases, and the runs that ran out of
// memory against the estimate's verdict.
func (p ProbeReport) Markdown() string {
	var b strings.Builder
	b.WriteString("\n## Runs measured by gpumem's own probe\n\n")
	b.WriteString(probeIntro)
	if len(p.Runs) == 0 {
		b.WriteString("\n" + probeNone)
		return b.String()
	}
	for _, part := range []struct {
		title, what string
		s           []Summary
	}{
		{"By measure", "measure", p.ByMeasure},
		{"By phase (allocated peak of the phase)", "phase", p.ByPhase},
		{"By component", "component", p.ByComponent},
	} {
		if len(part.s) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n| %s | runs | median abs error | p90 abs error | signed median |\n|---|---:|---:|---:|---:|\n", part.title, part.what)
		for _, s := range part.s {
			fmt.Fprintf(&b, "| %s | %d | %.1f %% | %.1f %% | %+.1f %% |\n", s.Group, s.N, s.MedianAbsPct, s.P90AbsPct, s.MedianPct)
		}
	}
	b.WriteString("\n### Runs\n\nEach cell is the measured figure and the estimate's error.\n\n")
	cols := append(slices.Clone(measureOrder), phaseOrder...)
	b.WriteString("| id | GPU | status | " + strings.Join(cols, " | ") + " | note |\n")
	b.WriteString("|---|---|---|" + strings.Repeat("---:|", len(cols)) + "---|\n")
	for _, r := range p.Runs {
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = "-"
			kind := probe.RowPhase
			if i < len(measureOrder) {
				kind = probe.RowPeak
			}
			for _, cr := range r.Rows {
				if cr.Kind == kind && cr.Name == c {
					cells[i] = fmt.Sprintf("%s (%+.1f %%)", units.FormatIEC(cr.MeasuredBytes), cr.ErrorPct)
				}
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.ID, r.GPU, r.Status, strings.Join(cells, " | "), mdCell(r.Note))
	}
	var oom []ProbeRow
	for _, r := range p.Runs {
		if r.Status == StatusOOM {
			oom = append(oom, r)
		}
	}
	if len(oom) > 0 {
		b.WriteString("\n### Out of memory\n\nThese runs ran out of GPU memory; their peaks stop at the failure and are not summarized. ")
		b.WriteString("An estimate that has such a job fit is the worst kind of error.\n\n")
		b.WriteString("| id | GPU | memory CUDA saw | estimated device peak | estimate says |\n|---|---|---:|---:|---|\n")
		for _, r := range oom {
			verdict := "does not fit (right)"
			if r.EstimateFits {
				verdict = "**fits (wrong)**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.ID, r.GPU, units.FormatIEC(r.GPUBytes), units.FormatIEC(r.EstimatedDeviceBytes), verdict)
		}
	}
	return b.String()
}
