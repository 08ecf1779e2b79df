package calibrate

import (
	"fmt"
	"math"
	"sort"

	"github.com/gpumem/gpumem/units"
)

// values are fitted corrections; a term that was not fitted is absent.
type values struct {
	scale    float64
	hasScale bool
	frag     map[string]float64 // fraction, by constant name
	device   bool
	misc     float64            // bytes
	ctx      map[string]float64 // bytes, by constant name, when lowered
}

// constants returns the overrides of a profile.
func (v values) constants() map[string]float64 {
	out := map[string]float64{}
	if v.hasScale {
		out[ActivationScale] = v.scale
	}
	for name, f := range v.frag {
		out[name] = f
	}
	if v.device {
		out[MiscOverheadMiB] = mib(v.misc)
		for name, c := range v.ctx {
			out[name] = mib(c)
		}
	}
	return out
}

// mib converts bytes to MiB rounded to 1/8 MiB, keeping profiles readable.
func mib(b float64) float64 { return math.Round(8*b/float64(units.MiB)) / 8 }

// fitTerms fits every term that has at least minRuns runs.
func fitTerms(obs []runObs, minRuns int) (values, []TermFit) {
	v := values{frag: map[string]float64{}, ctx: map[string]float64{}}
	var terms []TermFit
	if t, ok := fitScale(obs, minRuns); ok {
		v.scale, v.hasScale = t.Value, true
		terms = append(terms, t)
	}
	for _, t := range fitFragmentation(obs, minRuns) {
		v.frag[t.Constant] = t.Value
		terms = append(terms, t)
	}
	if ts, misc, ctx, ok := fitDevice(obs, minRuns); ok {
		v.device, v.misc, v.ctx = true, misc, ctx
		terms = append(terms, ts...)
	}
	return v, terms
}

// fitScale fits activation_scale to training runs' allocated peaks,
// linearised at each estimate: measured = estimate + (scale − scale₀)·d,
// d = ∂allocated/∂scale, so (measured − estimate + scale₀·d)/measured =
// scale · d/measured.
func fitScale(obs []runObs, minRuns int) (TermFit, bool) {
	var a [][]float64
	var y, before []float64
	for _, o := range obs {
		if !o.train || o.measAlloc <= 0 || o.sens <= 0 {
			continue
		}
		w := 1 / o.measAlloc
		a = append(a, []float64{o.sens * w})
		y = append(y, (o.measAlloc-o.estAlloc+o.s0*o.sens)*w)
		before = append(before, o.s0)
	}
	return solveTerm(ActivationScale, a, y, before, minRuns, 1)
}

// fitFragmentation fits each fragmentation constant the runs used to
// measured (reserved − allocated − derived)/reserved = f ×
// allocated/reserved, where derived are the reserved rows the estimate
// derives rather than scales (FSDP's stream pools, the weights' segment
// slack): its reserved peak less allocated × (1 + f₀).
func fitFragmentation(obs []runObs, minRuns int) []TermFit {
	byName := map[string][]runObs{}
	for _, o := range obs {
		if o.measAlloc > 0 && o.measRes > 0 {
			byName[o.fragName] = append(byName[o.fragName], o)
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []TermFit
	for _, name := range names {
		var a [][]float64
		var y, before []float64
		for _, o := range byName[name] {
			w := 1 / o.measRes
			derived := max(0, o.estRes-o.estAlloc*(1+o.frag0))
			a = append(a, []float64{o.measAlloc * w})
			y = append(y, (o.measRes-o.measAlloc-derived)*w)
			before = append(before, o.frag0)
		}
		if t, ok := solveTerm(name, a, y, before, minRuns, 1); ok {
			out = append(out, t)
		}
	}
	return out
}

// fitDevice fits the device constant: what measured device − reserved
// leaves after the modelled context and workspace is misc; a negative
// misc lowers the context constant instead.
func fitDevice(obs []runObs, minRuns int) ([]TermFit, float64, map[string]float64, bool) {
	var a [][]float64
	var y, before []float64
	ctxRows := map[string][]float64{} // name -> measured device − reserved − workspace
	ctxBefore := map[string][]float64{}
	for _, o := range obs {
		if o.measRes <= 0 || o.measDev <= 0 {
			continue
		}
		over := o.measDev - o.measRes
		a = append(a, []float64{1})
		y = append(y, over-o.ws-o.ctx0)
		before = append(before, o.misc0)
		ctxRows[o.ctxName] = append(ctxRows[o.ctxName], over-o.ws)
		ctxBefore[o.ctxName] = append(ctxBefore[o.ctxName], o.ctx0)
	}
	t, ok := solveTerm(MiscOverheadMiB, a, y, before, minRuns, float64(units.MiB))
	if !ok {
		return nil, 0, nil, false
	}
	if mean(y) >= 0 { // the intercept-only fit is the mean
		return []TermFit{t}, t.Value * float64(units.MiB), nil, true
	}
	// The device overhead is below the modelled context + workspace.
	t.Value, t.Note = 0, "measured device − reserved is below the modelled CUDA context + workspace: the context constant is lowered instead"
	terms := []TermFit{t}
	ctx := map[string]float64{}
	for _, name := range sortedRowKeys(ctxRows) {
		rows := ctxRows[name]
		ca := make([][]float64, len(rows))
		for i := range ca {
			ca[i] = []float64{1}
		}
		if ct, ok := solveTerm(name, ca, rows, ctxBefore[name], 1, float64(units.MiB)); ok {
			ctx[name] = ct.Value * float64(units.MiB)
			terms = append(terms, ct)
		}
	}
	return terms, 0, ctx, true
}

// solveTerm solves a one-coefficient least-squares problem and describes
// it; unit divides the coefficient into the constant's unit (1 for
// factors and fractions, MiB for sizes). The value is clamped to the
// constant's accepted range.
func solveTerm(name string, a [][]float64, y, before []float64, minRuns int, unit float64) (TermFit, bool) {
	if len(a) < minRuns || len(a) == 0 {
		return TermFit{}, false
	}
	ls, err := Solve(a, y)
	if err != nil {
		return TermFit{}, false
	}
	info := constantInfos()[name]
	t := TermFit{
		Constant: name, Value: ls.Coef[0] / unit, Before: mean(before) / unit,
		Runs: len(a), Unit: info.Unit,
	}
	if se := ls.StdErr[0] / unit; !math.IsNaN(se) {
		t.StdErr = &se
	}
	if t.Value < info.Min || t.Value > info.Max {
		t.Note = fmt.Sprintf("fitted %.4g is outside [%v, %v]; clamped", t.Value, info.Min, info.Max)
		t.Value = math.Min(math.Max(t.Value, info.Min), info.Max)
	}
	if unit != 1 {
		t.Value = math.Round(8*t.Value) / 8
	}
	return t, true
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func sortedRowKeys(m map[string][]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
