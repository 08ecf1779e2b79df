package calibrate

import (
	"math"

	"github.com/gpumem/gpumem/units"
)

// Levels of memory a run can measure, in the order they are reported.
var levels = []string{"allocated", "reserved", "device"}

// predict returns a run's allocated, reserved and device estimates with
// corrections v, changing only the terms v holds, the way the estimator
// applies the constants: activations scale linearly, reserved =
// allocated × (1 + fragmentation), device = reserved + context +
// workspace + misc ([memory.Overheads]).
func predict(o runObs, v values) [3]float64 {
	alloc := o.estAlloc
	if v.hasScale && o.train && o.sens > 0 {
		alloc += (v.scale - o.s0) * o.sens
	}
	f := o.frag0
	if nf, ok := v.frag[o.fragName]; ok {
		f = nf
	}
	res := o.estRes + alloc*(1+f) - o.estAlloc*(1+o.frag0)
	k0 := o.ctx0 + o.ws + o.misc0
	k := k0
	if v.device {
		ctx := o.ctx0
		if c, ok := v.ctx[o.ctxName]; ok {
			ctx = c
		}
		k = ctx + o.ws + v.misc
	}
	return [3]float64{alloc, res, o.estDev + (res - o.estRes) + (k - k0)}
}

// reestimate returns the run's three peaks with corrections v: from the
// estimator when there is one and it succeeds, else from predict.
func reestimate(o runObs, v values, est Estimator) [3]float64 {
	if est == nil || !o.reestimated {
		return predict(o, v)
	}
	job := o.run.Job
	for name, x := range v.constants() {
		job = withConstant(job, name, x)
	}
	r, err := est(o.run, job)
	if err != nil {
		return predict(o, v)
	}
	return [3]float64{float64(r.AllocatedPeakBytes), float64(r.ReservedPeakBytes), float64(r.DevicePeakBytes)}
}

func (o runObs) estimates() [3]float64 { return [3]float64{o.estAlloc, o.estRes, o.estDev} }
func (o runObs) measured() [3]float64  { return [3]float64{o.measAlloc, o.measRes, o.measDev} }

// evaluate compares every run's estimates before and after the fit, and
// after a fit to the other runs only (leave-one-out). With an estimator
// the "after" figures are real estimates with the fitted constants.
func evaluate(obs []runObs, v values, minRuns int, est Estimator) ([]RunError, []LevelError) {
	var per []RunError
	sums := make([]levelSums, len(levels))
	for i, o := range obs {
		rest := append(append([]runObs(nil), obs[:i]...), obs[i+1:]...)
		loo, _ := fitTerms(rest, minRuns)
		before, after, held, meas := o.estimates(), reestimate(o, v, est), reestimate(o, loo, est), o.measured()
		for l, name := range levels {
			if meas[l] <= 0 {
				continue
			}
			e := RunError{
				Run: o.id, Level: name, Measured: units.Bytes(meas[l]),
				Before: units.FromFloat(before[l]), After: units.FromFloat(after[l]),
				BeforePct: pct(before[l], meas[l]), AfterPct: pct(after[l], meas[l]), LOOPct: pct(held[l], meas[l]),
			}
			per = append(per, e)
			sums[l].add(e)
		}
	}
	var out []LevelError
	for l, name := range levels {
		if sums[l].n > 0 {
			out = append(out, sums[l].result(name))
		}
	}
	return per, out
}

type levelSums struct {
	n                                    int
	absB, absA, absL, maxB, maxA, sB, sA float64
}

func (s *levelSums) add(e RunError) {
	s.n++
	s.absB += math.Abs(e.BeforePct)
	s.absA += math.Abs(e.AfterPct)
	s.absL += math.Abs(e.LOOPct)
	s.maxB = math.Max(s.maxB, math.Abs(e.BeforePct))
	s.maxA = math.Max(s.maxA, math.Abs(e.AfterPct))
	s.sB += e.BeforePct
	s.sA += e.AfterPct
}

func (s levelSums) result(level string) LevelError {
	n := float64(s.n)
	return LevelError{
		Level: level, Runs: s.n,
		MeanAbsBeforePct: round1(s.absB / n), MeanAbsAfterPct: round1(s.absA / n), MeanAbsLOOPct: round1(s.absL / n),
		MaxAbsBeforePct: round1(s.maxB), MaxAbsAfterPct: round1(s.maxA),
		BiasBeforePct: round1(s.sB / n), BiasAfterPct: round1(s.sA / n),
	}
}

// pct is 100 × (est − meas)/meas rounded to 0.1.
func pct(est, meas float64) float64 { return round1(100 * (est - meas) / meas) }

func round1(x float64) float64 { return math.Round(10*x) / 10 }
