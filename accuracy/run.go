package accuracy

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strings"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// Options tune a run.
type Options struct {
	// Constants overrides named constants of the memory model for every
	// record (calibration experiments).
	Constants map[string]float64
	// Models resolves a record's model; nil uses the built-in catalog.
	Models func(id string) (*model.Model, error)
}

// Row is the comparison of one record.
type Row struct {
	ID string `json:"id"`
	// Mode is the job mode (train, inference, serving).
	Mode string `json:"mode"`
	// Kind is the record's run kind (train_full, lora, qlora, ...).
	Kind string `json:"kind"`
	// Metric is the measured metric kind (allocated, reserved, device, active, ...).
	Metric   string      `json:"metric"`
	Measured units.Bytes `json:"measured_bytes"`
	// Estimated is the estimate of the same metric; 0 when not estimated.
	Estimated units.Bytes `json:"estimated_bytes"`
	// ErrorPct is (estimated − measured) / measured × 100.
	ErrorPct float64 `json:"error_pct"`
	// Scored is true when the row counts in the summaries: scoreable,
	// reliability ok, a comparable metric and an estimate.
	Scored bool `json:"scored"`
	// SingleGPU is true for one-GPU runs.
	SingleGPU   bool   `json:"single_gpu"`
	Scoreable   bool   `json:"scoreable"`
	Reliability string `json:"reliability"`
	// Component is true for a serving row whose metric is a part of the
	// budget vLLM reports (kv_pool, weights_only) rather than a peak: it
	// is compared with the same part of the serving estimate but does not
	// count in the summaries of peaks.
	Component bool `json:"component,omitempty"`
	// PeakPhase is the estimate's peak phase.
	PeakPhase string `json:"peak_phase,omitempty"`
	// Round is the development round the record was shared in
	// ([Record.Round]): 2 for records no constant or rule was read off.
	Round int `json:"round"`
	// LOSOEstimated and LOSOErrorPct are the estimate and error with the
	// constants the record's source informed fitted to the other sources'
	// records alone (leave one source out); the same as Estimated and
	// ErrorPct when its source informed none.
	LOSOEstimated units.Bytes `json:"loso_estimated_bytes"`
	LOSOErrorPct  float64     `json:"loso_error_pct"`
	// Note says why a row is not compared (no mapper, unknown model,
	// incomparable metric, estimate error).
	Note string `json:"note,omitempty"`
}

// Summary is the error distribution of a group of scored rows.
type Summary struct {
	Group string `json:"group"`
	N     int    `json:"n"`
	// MedianAbsPct and P90AbsPct are the median and 90th percentile of |error| in percent.
	MedianAbsPct float64 `json:"median_abs_pct"`
	P90AbsPct    float64 `json:"p90_abs_pct"`
	// MedianPct is the signed median (bias).
	MedianPct float64 `json:"median_pct"`
	// LOSOMedianAbsPct and LOSOP90AbsPct are the median and 90th
	// percentile of |error| left one source out (see [Row.LOSOErrorPct]).
	LOSOMedianAbsPct float64 `json:"loso_median_abs_pct"`
	LOSOP90AbsPct    float64 `json:"loso_p90_abs_pct"`
}

// Report is the result of a run.
type Report struct {
	Rows []Row `json:"rows"`
	// Summaries covers scored single-GPU training rows ("train"), each
	// training run kind and metric, multi-GPU training rows
	// ("train multi-gpu") and any other mode with scored rows.
	Summaries []Summary `json:"summaries"`
	// Components summarizes the serving component rows (Row.Component)
	// with an estimate; N is 0 when there are none.
	Components Summary `json:"components"`
	// Sources are the leave-one-source-out results per source, in name
	// order.
	Sources []SourceResult `json:"sources"`
	// provenance is the table of what informed what (Markdown).
	provenance string
	// Probe compares gpumem's own measured runs with the estimates, when
	// the caller set it ([ProbeRunsReport]); the Markdown report then has
	// a section for them, which says so while there are none.
	Probe *ProbeReport `json:"probe_runs,omitempty"`
}

// Run estimates every record and compares it with its measurement.
func Run(recs []Record, opt Options) Report {
	models := newModels(opt)
	var rep Report
	for _, r := range recs {
		rep.Rows = append(rep.Rows, runOne(r, opt, models))
	}
	rep.leaveOneSourceOut(recs, opt, models)
	rep.provenance = ProvenanceMarkdown(recs)
	rep.Summaries = summarize(rep.Rows)
	var errs []float64
	for _, row := range rep.Rows {
		if row.Component && row.Estimated > 0 && row.Measured > 0 {
			errs = append(errs, row.ErrorPct)
		}
	}
	if len(errs) > 0 {
		rep.Components = summaryOf("serving components", errs)
	}
	return rep
}

// models resolves records' models (Options.Models, else the built-in
// catalog), each config id once per run.
type models struct {
	resolve func(string) (*model.Model, error)
	cache   map[string]*model.Model
}

// newModels returns the model resolver of a run with opt.
func newModels(opt Options) *models {
	resolve := opt.Models
	if resolve == nil {
		resolve = model.Lookup
	}
	return &models{resolve: resolve, cache: map[string]*model.Model{}}
}

// runOne estimates one record.
func runOne(r Record, opt Options, ms *models) Row {
	j := r.Job
	row := Row{ID: r.ID, Mode: j.Mode, Kind: r.Mode, Metric: j.MetricKind, Measured: units.Bytes(j.ValueBytes),
		SingleGPU: j.NumGPUs <= 1, Scoreable: j.Scoreable, Reliability: j.Reliability, Round: r.Round()}
	if j.Serving {
		row.Mode = string(memory.Serving)
	}
	pick, comparable := metricPicker(j.MetricKind)
	// vLLM's startup profiler reports its KV-cache pool and the weights
	// it loaded: parts of a serving estimate (metricOf), not peaks.
	component := row.Mode == string(memory.Serving) && (j.MetricKind == MetricKVPool || j.MetricKind == MetricWeights)
	if !comparable && !component {
		row.Note = "metric " + j.MetricKind + " is not comparable with a peak"
		return row
	}
	row.Component = component
	fn, ok := mapperFor(row.Mode)
	if !ok {
		row.Note = "no mapper for mode " + row.Mode
		return row
	}
	m, err := ms.of(r)
	if err != nil {
		row.Note = err.Error()
		return row
	}
	job, err := fn(r)
	if err != nil {
		row.Note = err.Error()
		return row
	}
	if len(opt.Constants) > 0 {
		job.Constants = opt.Constants
	}
	res, err := memory.Estimate(m, job)
	if err != nil {
		row.Note = "estimate: " + err.Error()
		return row
	}
	if component {
		row.Estimated, _ = metricOf(res, j.MetricKind)
	} else {
		row.Estimated = pick(res.PerGPU)
		row.PeakPhase = res.PerGPU.PeakPhase
	}
	if row.Measured > 0 && row.Estimated > 0 {
		row.ErrorPct = (float64(row.Estimated) - float64(row.Measured)) / float64(row.Measured) * 100
	}
	row.Scored = !component && j.Scoreable && j.Reliability == "ok" && row.Measured > 0
	return row
}

// metricPicker returns the estimate field a metric kind compares with.
// torch's peak "active" bytes track allocated bytes.
func metricPicker(kind string) (func(memory.PerGPU) units.Bytes, bool) {
	switch kind {
	case "allocated", "active":
		return func(p memory.PerGPU) units.Bytes { return p.AllocatedPeakBytes }, true
	case "reserved":
		return func(p memory.PerGPU) units.Bytes { return p.ReservedPeakBytes }, true
	case "device":
		return func(p memory.PerGPU) units.Bytes { return p.DevicePeakBytes }, true
	}
	return nil, false
}

// of resolves a record's model: its config id, else the catalog file its
// config_path names (org__name.json).
func (ms *models) of(r Record) (*model.Model, error) {
	id := r.Job.ConfigID
	if id == "" && r.Job.ConfigPath != "" {
		id = strings.Replace(strings.TrimSuffix(path.Base(r.Job.ConfigPath), ".json"), "__", "/", 1)
	}
	if id == "" {
		return nil, fmt.Errorf("%s: no config_id or config_path", r.ID)
	}
	if m, ok := ms.cache[id]; ok {
		return m, nil
	}
	m, err := ms.resolve(id)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", id, err)
	}
	ms.cache[id] = m
	return m, nil
}

// summarize groups scored rows: by scope, by run kind and metric within
// it, and the second-round records of each scope apart.
func summarize(rows []Row) []Summary {
	groups := map[string][]float64{}
	loso := map[string][]float64{}
	var order []string
	add := func(g string, r Row) {
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], r.ErrorPct)
		loso[g] = append(loso[g], r.LOSOErrorPct)
	}
	for _, r := range rows {
		if !r.Scored {
			continue
		}
		s := scope(r)
		add(s, r)
		add(s+" / "+r.Kind, r)
		add(s+" / metric "+r.Metric, r)
		if r.Round == 2 {
			add(s+" / round 2", r)
		}
	}
	slices.Sort(order)
	out := make([]Summary, 0, len(order))
	for _, g := range order {
		s := summaryOf(g, groups[g])
		l := summaryOf(g, loso[g])
		s.LOSOMedianAbsPct, s.LOSOP90AbsPct = l.MedianAbsPct, l.P90AbsPct
		out = append(out, s)
	}
	return out
}

// summaryOf computes the median and p90 of |error| (nearest rank).
func summaryOf(group string, errs []float64) Summary {
	abs := make([]float64, len(errs))
	for i, e := range errs {
		abs[i] = math.Abs(e)
	}
	signed := slices.Clone(errs)
	slices.Sort(abs)
	slices.Sort(signed)
	return Summary{Group: group, N: len(errs), MedianAbsPct: median(abs), P90AbsPct: nearestRank(abs, 0.9), MedianPct: median(signed)}
}

// median of a sorted slice.
func median(s []float64) float64 {
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// nearestRank is the q-quantile of a sorted slice by the nearest-rank method.
func nearestRank(s []float64, q float64) float64 {
	if len(s) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Summary returns the summary of a group, if present.
func (r Report) Summary(group string) (Summary, bool) {
	for _, s := range r.Summaries {
		if s.Group == group {
			return s, true
		}
	}
	return Summary{}, false
}

// Markdown renders the report as a Markdown document: what is compared
// and how, the summaries per group in sample and left one source out,
// what informed which constant, the results per source, the scored
// records per mode, and the records left out with the reason.
func (r Report) Markdown() string {
	var b strings.Builder
	b.WriteString(markdownIntro)
	b.WriteString("\n## Summary\n\n")
	b.WriteString(summaryIntro)
	b.WriteString("\n")
	b.WriteString(r.SummaryMarkdown())
	b.WriteString("\n## What informed what\n\n")
	b.WriteString(provenanceIntro)
	b.WriteString("\n")
	b.WriteString(r.provenance)
	b.WriteString("\n## Leave one source out\n\n")
	b.WriteString(sourcesIntro)
	b.WriteString("\n| source | scored records | constants refitted without it | in sample: median / p90 | left out: median / p90 |\n")
	b.WriteString("|---|---:|---|---:|---:|\n")
	for _, s := range r.Sources {
		if s.Records == 0 && len(s.Refits) == 0 {
			continue
		}
		refits := "none: the same in and out of sample"
		if len(s.Refits) > 0 {
			var parts []string
			for _, f := range s.Refits {
				from := fmt.Sprintf("fitted to %d records of other sources", f.Records)
				if f.Records == 0 {
					from = "its prior: no other source's record"
				}
				parts = append(parts, fmt.Sprintf("`%s` %s → %s (%s)", f.Constant, fmtValue(f.Default), fmtValue(f.Value), from))
			}
			refits = strings.Join(parts, "; ")
		}
		in, out := "-", "-"
		if s.Records > 0 {
			in = fmt.Sprintf("%.1f %% / %.1f %%", s.InSample.MedianAbsPct, s.InSample.P90AbsPct)
			out = fmt.Sprintf("%.1f %% / %.1f %%", s.LOSO.MedianAbsPct, s.LOSO.P90AbsPct)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", mdCell(s.Source), s.Records, refits, in, out)
	}
	for _, mode := range r.modes() {
		fmt.Fprintf(&b, "\n## %s\n\n", scopeTitle(mode))
		b.WriteString("| id | round | kind | metric | measured | estimated | error | left one source out | peak phase |\n")
		b.WriteString("|---|---:|---|---|---:|---:|---:|---:|---|\n")
		for _, row := range r.Rows {
			if row.Scored && scope(row) == mode {
				fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", row.ID, row.Round, row.Kind, row.Metric,
					units.FormatIEC(row.Measured), estText(row), errText(row), losoText(row), row.PeakPhase)
			}
		}
	}
	if r.Components.N > 0 {
		b.WriteString("\n## Serving components\n\n")
		b.WriteString(componentsIntro)
		fmt.Fprintf(&b, "\nOver %d records: median |error| %.1f %%, p90 %.1f %%, signed median %+.1f %%.\n\n",
			r.Components.N, r.Components.MedianAbsPct, r.Components.P90AbsPct, r.Components.MedianPct)
		b.WriteString("| id | metric | measured | estimated | error |\n")
		b.WriteString("|---|---|---:|---:|---:|\n")
		for _, row := range r.Rows {
			if row.Component && row.Estimated > 0 {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", row.ID, row.Metric, units.FormatIEC(row.Measured), estText(row), errText(row))
			}
		}
	}
	b.WriteString("\n## Not scored\n\n")
	b.WriteString("These records are estimated where possible but do not count in the summaries.\n\n")
	b.WriteString("| id | round | mode | kind | metric | measured | estimated | error | left one source out | why not scored |\n")
	b.WriteString("|---|---:|---|---|---|---:|---:|---:|---:|---|\n")
	for _, row := range r.Rows {
		if !row.Scored && !(row.Component && row.Estimated > 0) {
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.ID, row.Round, row.Mode, row.Kind, row.Metric,
				units.FormatIEC(row.Measured), estText(row), errText(row), losoText(row), mdCell(whyNotScored(row)))
		}
	}
	if r.Probe != nil {
		b.WriteString(r.Probe.Markdown())
	}
	return b.String()
}

// markdownIntro opens the Markdown report.
const markdownIntro = `# Accuracy

<!-- Generated by gpumem validate-against --format markdown; do not edit by hand. -->

Each record is a published measurement of a real run (a training step, a generation, a vLLM
server) with its source, the framework and settings the source states, and the number it
measured. gpumem estimates the same job from the model's config.json and compares like with
like: torch.cuda.max_memory_allocated (and peak active bytes) with the allocated peak,
torch.cuda.max_memory_reserved with the reserved peak, and the process memory nvidia-smi shows
with the device peak. A measurement of something else (a total the source does not define, a
KV pool, weights alone) is not compared with a peak; a vLLM server's KV-cache pool and weights
are compared with the same parts of the serving estimate (Serving components).

The error of a record is (estimated − measured) / measured. A record counts in the summaries
when its source is marked scoreable and reliable, its metric is one of the three peaks and the
estimate succeeded; "median" and "p90" are the median and the 90th percentile (nearest rank) of
|error| over those records, and "signed" is the median error (negative: the estimate is
low). Groups are the job mode (single-GPU training, multi-GPU training, inference, serving),
each run kind and metric within it, and the second-round records of each mode.

How to read these figures. They are measured on the records the model was written against, so
they are better than what to expect on a run nobody here has seen:

- Round 1 (88 records) is what the memory model was developed on: where an estimate
  disagreed, the wrong component was found in the framework's source and corrected, and a few
  constants were read off these records (What informed what). Their in-sample errors are
  optimistic.
- Round 2 (113 records) was held out while the model was written and shared afterwards; no
  constant or rule was read off it. Its errors, in the "round 2" groups, are the closest this
  report comes to unseen runs, but they are still records the current model was checked on.
- Left one source out: each source's records estimated with the constants its own records
  informed fitted again to the other sources' records alone (or set to their value without
  records). Rules taken from a framework's source code stand, so a source that informed no
  constant has the same figures in and out of sample.

The issue's goal — a median |error| of at most 5 % and a 90th percentile of at most 12 % on
records nobody here has seen — is measured by others, on records that are not in this
repository; these tables do not show whether it is met. Nothing in this report ran on a GPU
here: every figure is a published measurement compared with an estimate.
`

// summaryIntro explains the summary table's columns.
const summaryIntro = `"In sample" uses the constants as shipped; "left one source out" refits, for each
record, the constants its own source informed (Leave one source out). Serving records measure
parts of vLLM's budget, not peaks: they are under Serving components.
`

// provenanceIntro opens the table of what informed what.
const provenanceIntro = `Every rule and constant names its source ('gpumem constants', 'gpumem constants --rules').
Most come from framework source code at a commit, documentation or a paper; these are the
ones whose values were read off development records (all of the first round), with the value
the model has without those records — what a refit falls back to when no other source's
record remains. Every other constant and rule, including the caching allocator's arithmetic
(allocator_rounding, segment_slack, stream_cache), is derived from source and is the same in
and out of sample. The uncertainty band printed with each estimate has widths read off the
first-round records too; it is not part of the errors below.
`

// sourcesIntro opens the leave-one-source-out table.
const sourcesIntro = `A source is the repository or publication the record comes from (its source field, by
repository). For each, the constants its records informed are fitted again, by least squares
on the relative error of the metric each record measured, to the records of the other sources
that informed them, or take their value without records when none remains; its records are
then estimated again. Sources whose records informed nothing keep their figures.
`

// componentsIntro opens the Markdown section of serving components.
const componentsIntro = `A vLLM server sizes its KV-cache pool from the memory left under
gpu_memory_utilization once the weights, the profiled activation peak and the memory outside
torch are counted, and logs each of them at startup. These records give one of those parts;
it is compared with the same part of the serving estimate (how many tokens and concurrent
sequences fit follows from the pool). They are parts of a budget rather than peaks, so they
do not count in the summaries above. No constant was read off a vLLM record: their figures
are the same left one source out.
`

// SummaryMarkdown renders the summaries as one Markdown table, in
// sample and left one source out.
func (r Report) SummaryMarkdown() string {
	var b strings.Builder
	b.WriteString("| group | records | median abs error | p90 abs error | signed median | left one source out: median | p90 |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Summaries {
		fmt.Fprintf(&b, "| %s | %d | %.1f %% | %.1f %% | %+.1f %% | %.1f %% | %.1f %% |\n", s.Group, s.N, s.MedianAbsPct, s.P90AbsPct, s.MedianPct,
			s.LOSOMedianAbsPct, s.LOSOP90AbsPct)
	}
	return b.String()
}

// scope is the summary group of a row's mode ("train multi-gpu" for
// training on several GPUs).
func scope(row Row) string {
	if row.Mode == "train" && !row.SingleGPU {
		return "train multi-gpu"
	}
	return row.Mode
}

// scopeTitle is the heading of a scope's section.
func scopeTitle(scope string) string {
	switch scope {
	case "train":
		return "Training on one GPU (train)"
	case "train multi-gpu":
		return "Training on several GPUs (train multi-gpu)"
	case "inference":
		return "Inference (inference)"
	case "serving":
		return "Serving (serving)"
	}
	return scope
}

// modes lists the scopes with scored rows, in the summaries' order.
func (r Report) modes() []string {
	var out []string
	for _, row := range r.Rows {
		if row.Scored && !slices.Contains(out, scope(row)) {
			out = append(out, scope(row))
		}
	}
	slices.Sort(out)
	return out
}

// whyNotScored says why a row is left out of the summaries.
func whyNotScored(row Row) string {
	switch {
	case row.Note != "":
		return row.Note
	case row.Component:
		return "a part of the serving budget, not a peak"
	case !row.Scoreable:
		return "the record is not marked scoreable (see its notes)"
	case row.Reliability != "ok":
		return "reliability " + cond(row.Reliability == "", "not stated", row.Reliability)
	case row.Measured <= 0:
		return "no measured value"
	}
	return ""
}

// mdCell escapes a table cell.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", "/") }

// Text renders the rows and summaries as a plain aligned table.
func (r Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-52s %-9s %-10s %10s %10s %8s %s\n", "ID", "MODE", "METRIC", "MEASURED", "ESTIMATED", "ERROR", "NOTE")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "%-52s %-9s %-10s %10s %10s %8s %s%s\n", row.ID, row.Mode, row.Metric,
			units.FormatIEC(row.Measured), estText(row), errText(row), rowMark(row), row.Note)
	}
	b.WriteString("\n")
	for _, s := range r.Summaries {
		fmt.Fprintf(&b, "%-40s n=%-3d median |err| %5.1f %%  p90 |err| %5.1f %%  bias %+5.1f %%\n", s.Group, s.N, s.MedianAbsPct, s.P90AbsPct, s.MedianPct)
	}
	if s := r.Components; s.N > 0 {
		fmt.Fprintf(&b, "%-40s n=%-3d median |err| %5.1f %%  p90 |err| %5.1f %%  bias %+5.1f %%  (parts, not peaks)\n", s.Group, s.N, s.MedianAbsPct, s.P90AbsPct, s.MedianPct)
	}
	return b.String()
}

// rowMark marks a row of the text table that is not a scored peak.
func rowMark(r Row) string {
	switch {
	case r.Scored:
		return ""
	case r.Component && r.Estimated > 0:
		return "(a part, not a peak) "
	}
	return "(not scored) "
}

// estText formats a row's estimate.
func estText(r Row) string {
	if r.Estimated == 0 {
		return "-"
	}
	return units.FormatIEC(r.Estimated)
}

// errText formats a row's error.
func errText(r Row) string {
	if r.Estimated == 0 || r.Measured == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.1f %%", r.ErrorPct)
}

// cond returns a when ok, else b.
func cond(ok bool, a, b string) string {
	if ok {
		return a
	}
	return b
}
