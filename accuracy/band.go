package accuracy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// BandRow is one record checked against the uncertainty band of its
// estimate, at the peak the record measured.
type BandRow struct {
	ID     string `json:"id"`
	Mode   string `json:"mode"`
	Metric string `json:"metric"`
	// Scored is Row.Scored: scoreable, reliability ok, a comparable metric.
	Scored   bool        `json:"scored"`
	Measured units.Bytes `json:"measured_bytes"`
	// Low, Expected and High are the band at the measured level.
	Low      units.Bytes `json:"low_bytes"`
	Expected units.Bytes `json:"expected_bytes"`
	High     units.Bytes `json:"high_bytes"`
	// Inside is true when Low <= Measured <= High.
	Inside bool `json:"inside"`
	// DownPct and UpPct are the band's extent below and above Expected,
	// in percent of Expected.
	DownPct float64 `json:"down_pct"`
	UpPct   float64 `json:"up_pct"`
}

// BandSummary counts the records inside their band.
type BandSummary struct {
	Group  string `json:"group"`
	N      int    `json:"n"`
	Inside int    `json:"inside"`
	// InsidePct is Inside / N in percent.
	InsidePct float64 `json:"inside_pct"`
	// MedianHalfWidthPct is the median of (high − low) / 2 / expected.
	MedianHalfWidthPct float64 `json:"median_half_width_pct"`
	// MedianDownPct and MedianUpPct are the medians of each side.
	MedianDownPct float64 `json:"median_down_pct"`
	MedianUpPct   float64 `json:"median_up_pct"`
}

// BandReport is the result of [CheckBand].
type BandReport struct {
	Rows []BandRow `json:"rows"`
	// Summaries: "scored" (the records accuracy targets are judged on),
	// "all" (every record with a comparable metric and an estimate) and
	// "scored <mode>" for each mode with scored records.
	Summaries []BandSummary `json:"summaries"`
}

// CheckBand estimates every record and checks whether its measured value
// falls inside the estimate's band at the level the record measured
// (allocated, reserved or device). The band is the estimator's own; no
// record changes it.
func CheckBand(recs []Record, opt Options) BandReport {
	models := newModels(opt)
	var rep BandReport
	for _, r := range recs {
		if row, ok := bandRow(r, opt, models); ok {
			rep.Rows = append(rep.Rows, row)
		}
	}
	all := rep.Rows
	var scored []BandRow
	for _, r := range all {
		if r.Scored {
			scored = append(scored, r)
		}
	}
	rep.Summaries = []BandSummary{bandSummary("scored", scored), bandSummary("all", all)}
	for _, mode := range []string{"train", "inference", "serving"} {
		var rows []BandRow
		for _, r := range scored {
			if r.Mode == mode {
				rows = append(rows, r)
			}
		}
		if len(rows) > 0 {
			rep.Summaries = append(rep.Summaries, bandSummary("scored "+mode, rows))
		}
	}
	return rep
}

// bandRow estimates one record; ok is false when it cannot be compared.
func bandRow(r Record, opt Options, ms *models) (BandRow, bool) {
	j := r.Job
	mode := j.Mode
	if j.Serving {
		mode = string(memory.Serving)
	}
	level, ok := bandLevel(j.MetricKind)
	fn, mapped := mapperFor(mode)
	if !ok || !mapped || j.ValueBytes <= 0 {
		return BandRow{}, false
	}
	m, err := ms.of(r)
	if err != nil {
		return BandRow{}, false
	}
	job, err := fn(r)
	if err != nil {
		return BandRow{}, false
	}
	if len(opt.Constants) > 0 {
		job.Constants = opt.Constants
	}
	res, err := memory.Estimate(m, job)
	if err != nil {
		return BandRow{}, false
	}
	low, high, ok := res.PerGPU.BandAt(level)
	if !ok {
		return BandRow{}, false
	}
	pick, _ := metricPicker(j.MetricKind)
	exp := pick(res.PerGPU)
	row := BandRow{ID: r.ID, Mode: mode, Metric: j.MetricKind, Measured: units.Bytes(j.ValueBytes),
		Scored: j.Scoreable && j.Reliability == "ok", Low: low, Expected: exp, High: high}
	row.Inside = low <= row.Measured && row.Measured <= high
	if exp > 0 {
		row.DownPct = 100 * float64(exp-low) / float64(exp)
		row.UpPct = 100 * float64(high-exp) / float64(exp)
	}
	return row, true
}

// bandLevel maps a metric kind onto the peak level the band is read at.
func bandLevel(kind string) (string, bool) {
	switch kind {
	case "allocated", "active":
		return "allocated", true
	case "reserved", "device":
		return kind, true
	}
	return "", false
}

func bandSummary(group string, rows []BandRow) BandSummary {
	s := BandSummary{Group: group, N: len(rows)}
	if len(rows) == 0 {
		return s
	}
	var half, down, up []float64
	for _, r := range rows {
		if r.Inside {
			s.Inside++
		}
		half = append(half, (r.DownPct+r.UpPct)/2)
		down = append(down, r.DownPct)
		up = append(up, r.UpPct)
	}
	s.InsidePct = 100 * float64(s.Inside) / float64(s.N)
	s.MedianHalfWidthPct, s.MedianDownPct, s.MedianUpPct = median(half), median(down), median(up)
	return s
}

// Text renders the band check as plain text.
func (r BandReport) Text() string {
	var b strings.Builder
	for _, s := range r.Summaries {
		fmt.Fprintf(&b, "%s: %d/%d inside (%.0f %%), median half-width %.1f %% (−%.1f %% / +%.1f %%)\n",
			s.Group, s.Inside, s.N, s.InsidePct, s.MedianHalfWidthPct, s.MedianDownPct, s.MedianUpPct)
	}
	rows := slices.Clone(r.Rows)
	slices.SortFunc(rows, func(a, b BandRow) int { return strings.Compare(a.ID, b.ID) })
	for _, row := range rows {
		mark := "inside"
		if !row.Inside {
			mark = "OUTSIDE"
		}
		fmt.Fprintf(&b, "%-52s %-9s %-9s measured %s in [%s, %s] (−%.1f %%/+%.1f %%) %s\n", row.ID, row.Mode, row.Metric,
			units.FormatIEC(row.Measured), units.FormatIEC(row.Low), units.FormatIEC(row.High), row.DownPct, row.UpPct, mark)
	}
	return b.String()
}
