package accuracy

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpumem/gpumem/calibrate"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// Leave one source out: a record's error when the memory model's
// constants come only from the other sources' records.
//
// The rules and constants of the model come from framework source code,
// documentation and papers, except a few constants whose defaults were
// read off development records (memory.ConstantInfo.Records). For each
// source (SourceGroup), each such constant that one of the source's
// records informed is fitted again to the records of the other sources
// alone, by least squares on the relative error of the metric each
// record measured; with no such record left it takes its prior (the
// value without records, ConstantInfo.Prior). The source's records are
// then estimated with those values. Everything else stands: a rule read
// from a framework's source holds whatever the records say, so for a
// source whose records informed no constant the in-sample and
// leave-one-source-out figures are the same.

// SourceGroup is the source a record counts under: the repository
// ("huggingface/peft" for "huggingface/peft:method_comparison/..."), in
// lower case without dashes so that two spellings of one project agree,
// or for a source without one the text before its first quote or
// parenthesis ("HF blog").
func SourceGroup(source string) string {
	s := strings.TrimSpace(source)
	first := s
	if i := strings.IndexAny(s, ": "); i >= 0 {
		first = s[:i]
	}
	if strings.Count(first, "/") == 1 {
		return strings.ReplaceAll(strings.ToLower(first), "-", "")
	}
	if i := strings.IndexAny(s, "'(\""); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s), ",;:"))
}

// sourceName is SourceGroup as the source spells it (case and dashes
// kept), for tables.
func sourceName(source string) string {
	s := strings.TrimSpace(source)
	first := s
	if i := strings.IndexAny(s, ": "); i >= 0 {
		first = s[:i]
	}
	if strings.Count(first, "/") == 1 {
		return first
	}
	return SourceGroup(source)
}

// Refit is one constant fitted again without one source's records.
type Refit struct {
	Constant string  `json:"constant"`
	Default  float64 `json:"default"`
	// Value is the value the source's records are estimated with.
	Value float64 `json:"value"`
	// Records is how many records of the other sources it was fitted
	// to; 0 means it took its prior.
	Records int `json:"records"`
}

// SourceResult is the leave-one-source-out result of one source.
type SourceResult struct {
	Source string `json:"source"`
	// Records is how many of the source's records are scored.
	Records int `json:"records"`
	// Refits are the constants the source's records informed, with the
	// values its records are estimated with when left out; none means
	// the source informed nothing and its figures are the same.
	Refits []Refit `json:"refits,omitempty"`
	// InSample and LOSO summarise the |error| of its scored records.
	InSample Summary `json:"in_sample"`
	LOSO     Summary `json:"leave_one_source_out"`
}

// informedBy lists, for each constant with development records, those
// records.
func informedBy() []memory.ConstantInfo {
	var out []memory.ConstantInfo
	for _, c := range memory.Constants() {
		if len(c.Records) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// leaveOneSourceOut fills each row's LOSO estimate and the report's
// per-source results.
func (rep *Report) leaveOneSourceOut(recs []Record, opt Options, ms *models) {
	byID := make(map[string]Record, len(recs))
	for _, r := range recs {
		byID[r.ID] = r
	}
	rowOf := make(map[string]*Row, len(rep.Rows))
	for i := range rep.Rows {
		rowOf[rep.Rows[i].ID] = &rep.Rows[i]
	}
	var groups []string
	shown := map[string]string{} // a group as its first record spells it
	for _, r := range recs {
		if g := SourceGroup(r.Source); !slices.Contains(groups, g) {
			groups = append(groups, g)
			shown[g] = sourceName(r.Source)
		}
	}
	slices.Sort(groups)
	consts := informedBy()
	for _, g := range groups {
		res := SourceResult{Source: shown[g]}
		overrides := map[string]float64{}
		for k, v := range opt.Constants {
			overrides[k] = v
		}
		for _, c := range consts {
			if _, set := opt.Constants[c.Name]; set {
				continue // the caller's value holds
			}
			if !slices.ContainsFunc(c.Records, func(id string) bool { r, ok := byID[id]; return ok && SourceGroup(r.Source) == g }) {
				continue
			}
			v, n := refit(c, byID, g, opt, ms)
			overrides[c.Name] = v
			res.Refits = append(res.Refits, Refit{Constant: c.Name, Default: c.Default, Value: v, Records: n})
		}
		var in, out []float64
		for _, r := range recs {
			if SourceGroup(r.Source) != g {
				continue
			}
			row := rowOf[r.ID]
			row.LOSOEstimated, row.LOSOErrorPct = row.Estimated, row.ErrorPct
			if len(res.Refits) > 0 && row.Estimated > 0 {
				o := opt
				o.Constants = overrides
				lr := runOne(r, o, ms)
				row.LOSOEstimated, row.LOSOErrorPct = lr.Estimated, lr.ErrorPct
			}
			if row.Scored {
				in = append(in, row.ErrorPct)
				out = append(out, row.LOSOErrorPct)
			}
		}
		res.Records = len(in)
		if len(in) > 0 {
			res.InSample, res.LOSO = summaryOf(g, in), summaryOf(g, out)
		}
		rep.Sources = append(rep.Sources, res)
	}
}

// refitStep is the relative step of the finite difference that gives a
// record's response to a constant.
const refitStep = 0.05

// refit fits constant c to its records outside source group g: least
// squares on each record's relative error, linearised at the default
// (calibrate.Solve), clamped to the constant's range. It returns the
// value and the number of records fitted; with none, the prior.
func refit(c memory.ConstantInfo, byID map[string]Record, g string, opt Options, ms *models) (float64, int) {
	var a [][]float64
	var y []float64
	step := math.Max(math.Abs(c.Default)*refitStep, 1e-3)
	for _, id := range c.Records {
		r, ok := byID[id]
		if !ok || SourceGroup(r.Source) == g {
			continue
		}
		base, up := opt, opt
		base.Constants = withConstant(opt.Constants, c.Name, c.Default)
		up.Constants = withConstant(opt.Constants, c.Name, c.Default+step)
		r0, r1 := runOne(r, base, ms), runOne(r, up, ms)
		if r0.Estimated <= 0 || r1.Estimated <= 0 || r0.Measured <= 0 || r0.Component {
			continue // no comparable metric, or no estimate
		}
		m := float64(r0.Measured)
		slope := (float64(r1.Estimated) - float64(r0.Estimated)) / step
		if slope == 0 {
			continue // the record does not depend on the constant
		}
		// estimate(x) ≈ est0 + slope·(x − default); minimise Σ ((estimate(x) − m)/m)².
		a = append(a, []float64{slope / m})
		y = append(y, (m-float64(r0.Estimated))/m+slope*c.Default/m)
	}
	if len(a) == 0 {
		return c.Prior, 0
	}
	ls, err := calibrate.Solve(a, y)
	if err != nil {
		return c.Prior, 0
	}
	return math.Min(math.Max(ls.Coef[0], c.Min), c.Max), len(a)
}

// withConstant returns a copy of overrides with name set to v.
func withConstant(overrides map[string]float64, name string, v float64) map[string]float64 {
	out := make(map[string]float64, len(overrides)+1)
	for k, x := range overrides {
		out[k] = x
	}
	out[name] = v
	return out
}

// ProvenanceMarkdown is the table of what informed what: each constant
// and rule read off development records, the records and their sources,
// and its value without them.
func ProvenanceMarkdown(recs []Record) string {
	src := map[string]string{}
	for _, r := range recs {
		src[r.ID] = sourceName(r.Source)
	}
	sources := func(ids []string) string {
		var gs []string
		for _, id := range ids {
			if g, ok := src[id]; ok && !slices.Contains(gs, g) {
				gs = append(gs, g)
			}
		}
		return strings.Join(gs, ", ")
	}
	var b strings.Builder
	b.WriteString("| constant or rule | value | without these records | records | sources |\n")
	b.WriteString("|---|---:|---|---|---|\n")
	for _, c := range informedBy() {
		fmt.Fprintf(&b, "| constant `%s` | %s %s | %s (%s) | %s | %s |\n", c.Name, fmtValue(c.Default), c.Unit,
			fmtValue(c.Prior), mdCell(c.PriorSource), strings.Join(c.Records, ", "), sources(c.Records))
	}
	for _, r := range memory.Rules() {
		if len(r.Records) > 0 {
			fmt.Fprintf(&b, "| rule `%s` (%s %s) | | does not apply | %s | %s |\n", r.Name, r.Package, ruleRange(r),
				strings.Join(r.Records, ", "), sources(r.Records))
		}
	}
	return b.String()
}

// ruleRange writes a rule's version range.
func ruleRange(r memory.Rule) string {
	switch {
	case r.From != "" && r.Before != "":
		return r.From + " to before " + r.Before
	case r.From != "":
		return "from " + r.From
	case r.Before != "":
		return "before " + r.Before
	}
	return "all versions"
}

// fmtValue writes a constant's value compactly.
func fmtValue(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// losoText formats a row's leave-one-source-out estimate and error.
func losoText(r Row) string {
	if r.LOSOEstimated == 0 || r.Measured == 0 {
		return "-"
	}
	if r.LOSOEstimated == r.Estimated {
		return "same"
	}
	return units.FormatIEC(r.LOSOEstimated) + " (" + fmt.Sprintf("%+.1f %%", r.LOSOErrorPct) + ")"
}
