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
	// VLLMVersion is the vLLM version a serving row was estimated for.
	VLLMVersion string `json:"vllm_version,omitempty"`
	// Parts compares a serving row part by part (weights, activation
	// peak, non-torch memory, KV pool, KV tokens) with what vLLM logged.
	Parts []PartCheck `json:"parts,omitempty"`
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
		SingleGPU: j.NumGPUs <= 1, Scoreable: j.Scoreable, Reliability: j.Reliability}
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
	if res.Serving != nil {
		row.VLLMVersion = res.Serving.VLLMVersion
		parts := vllmParts(r.Other)
		if j.MetricKind == MetricKVPool && j.ValueBytes > 0 {
			if parts == nil {
				parts = map[string]float64{}
			}
			parts["kv_cache"] = units.Bytes(j.ValueBytes).GiBf()
		}
		row.Parts = partChecks(res, parts)
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

// summarize groups scored rows.
func summarize(rows []Row) []Summary {
	groups := map[string][]float64{}
	var order []string
	add := func(g string, e float64) {
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], e)
	}
	for _, r := range rows {
		if !r.Scored {
			continue
		}
		scope := r.Mode
		if r.Mode == "train" && !r.SingleGPU {
			scope = "train multi-gpu"
		}
		add(scope, r.ErrorPct)
		add(scope+" / "+r.Kind, r.ErrorPct)
		add(scope+" / metric "+r.Metric, r.ErrorPct)
	}
	slices.Sort(order)
	out := make([]Summary, 0, len(order))
	for _, g := range order {
		out = append(out, summaryOf(g, groups[g]))
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
// and how, the summaries per group (median and 90th percentile of
// |error|, and the signed median), the scored records per mode, and the
// records left out with the reason.
func (r Report) Markdown() string {
	var b strings.Builder
	b.WriteString(markdownIntro)
	b.WriteString("\n## Summary\n\n")
	b.WriteString(r.SummaryMarkdown())
	for _, mode := range r.modes() {
		fmt.Fprintf(&b, "\n## %s\n\n", scopeTitle(mode))
		b.WriteString("| id | kind | metric | measured | estimated | error | peak phase |\n")
		b.WriteString("|---|---|---|---:|---:|---:|---|\n")
		for _, row := range r.Rows {
			if row.Scored && scope(row) == mode {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", row.ID, row.Kind, row.Metric,
					units.FormatIEC(row.Measured), estText(row), errText(row), row.PeakPhase)
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
	b.WriteString(r.partsMarkdown())
	b.WriteString("\n## Not scored\n\n")
	b.WriteString("These records are estimated where possible but do not count in the summaries.\n\n")
	b.WriteString("| id | mode | kind | metric | measured | estimated | error | why not scored |\n")
	b.WriteString("|---|---|---|---|---:|---:|---:|---|\n")
	for _, row := range r.Rows {
		if !row.Scored && !(row.Component && row.Estimated > 0) {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", row.ID, row.Mode, row.Kind, row.Metric,
				units.FormatIEC(row.Measured), estText(row), errText(row), mdCell(whyNotScored(row)))
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
each run kind within it and each metric within it. No record tunes a constant of the memory
model: when an estimate is off, the component that is wrong is fixed, not the total.
`

// componentsIntro opens the Markdown section of serving components.
const componentsIntro = `A vLLM server sizes its KV-cache pool from the memory left under
gpu_memory_utilization once the weights, the profiled activation peak and the memory outside
torch are counted, and logs each of them at startup. These records give one of those parts;
it is compared with the same part of the serving estimate (how many tokens and concurrent
sequences fit follows from the pool). They are parts of a budget rather than peaks, so they
do not count in the summaries above.
`

// SummaryMarkdown renders the summaries as one Markdown table.
func (r Report) SummaryMarkdown() string {
	var b strings.Builder
	b.WriteString("| group | records | median abs error | p90 abs error | signed median |\n")
	b.WriteString("|---|---:|---:|---:|---:|\n")
	for _, s := range r.Summaries {
		fmt.Fprintf(&b, "| %s | %d | %.1f %% | %.1f %% | %+.1f %% |\n", s.Group, s.N, s.MedianAbsPct, s.P90AbsPct, s.MedianPct)
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

// partsIntro opens the Markdown section of serving records part by part.
const partsIntro = `Each vLLM record, part by part: the parts of the budget its startup log gives, against
the same parts of the serving estimate for the vLLM version the record names (the latest
release gpumem knows when it names none; "vllm<0.8" reads as 0.7.3, the V0 engine). Weights,
activation peak, non-torch memory and KV pool are in GiB, as vLLM logs them; KV tokens is
vLLM's "GPU KV cache size". A part gpumem takes from a measured constant (non-torch memory,
0.25 GiB from the v0.19 logs) is no check of the model.
`

// partsMarkdown renders the serving rows part by part.
func (r Report) partsMarkdown() string {
	var b strings.Builder
	for _, row := range r.Rows {
		if len(row.Parts) == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n## Serving records part by part\n\n")
			b.WriteString(partsIntro)
			b.WriteString("\n| id | vLLM | part | measured | estimated | error |\n|---|---|---|---:|---:|---:|\n")
		}
		for _, p := range row.Parts {
			f := "%.2f"
			if p.Name == "kv_tokens" {
				f = "%.0f"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | "+f+" | "+f+" | %+.1f %% |\n", row.ID, row.VLLMVersion, partName(p.Name), p.Measured, p.Estimated, 100*p.RelErr)
		}
	}
	return b.String()
}

// partName is the Markdown name of a part of vLLM's budget.
func partName(name string) string {
	switch name {
	case "activations":
		return "activation peak"
	case "non_torch":
		return "non-torch"
	case "kv_cache":
		return "KV pool"
	case "kv_tokens":
		return "KV tokens"
	}
	return name
}
