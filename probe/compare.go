package probe

import (
	"math"
	"slices"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// Row kinds of a [Comparison].
const (
	RowPeak      = "peak"
	RowPhase     = "phase"
	RowComponent = "component"
)

// Comparison sets an estimate against a measurement, row by row.
type Comparison struct {
	Rows []ComparisonRow `json:"rows"`
}

// ComparisonRow is one estimated figure and its measured counterpart.
type ComparisonRow struct {
	// Kind is "peak" (allocated, reserved, device), "phase" or "component".
	Kind           string      `json:"kind"`
	Name           string      `json:"name"`
	EstimatedBytes units.Bytes `json:"estimated_bytes"`
	MeasuredBytes  units.Bytes `json:"measured_bytes"`
	// ErrorPct is 100 × (estimated − measured) / measured: positive when
	// the estimate is too high.
	ErrorPct float64 `json:"error_pct"`
}

// componentMatch lists, for each directly measured component, the
// estimate's rows that together count the same tensors. The probe's
// "activations" is the memory a forward pass leaves allocated: the saved
// activations and what the loss keeps for backward (HF cross-entropy: fp32
// log-probabilities, 4·N·V bytes, MODEL.md §4.6). The estimate's "loss"
// row is the loss's peak including its transients, so it is left out and
// the measured figure runs higher by about what the loss keeps.
var componentMatch = []struct {
	measured string
	estimate []string
}{
	{"weights", []string{"weights", "adapter_weights", "lora_weights"}},
	{"gradients", []string{"gradients", "adapter_gradients"}},
	{"optimizer_states", []string{"optimizer_states", "adapter_optimizer_states"}},
	{"activations", []string{"activations", "checkpoints"}},
	{"cuda_context", []string{"cuda_context"}},
}

// phaseMatch maps a measured phase to the estimate's phases it covers.
// The script's backward phase runs to the end of backward (the estimate's
// backward and backward_end). Its forward phase includes the loss unless
// the script measured the loss as a phase of its own (a pre-hook on the
// output layer splits them where the estimate does, see
// script/probe.py LossPhase).
var phaseMatch = map[string][]string{
	"forward":  {"forward", "loss"},
	"backward": {"backward", "backward_end"},
}

// Compare returns the rows where both the estimate and the measurement
// have a figure: the three peaks, the phases and the measured components.
func Compare(est memory.PerGPU, m Measured) Comparison {
	var c Comparison
	c.add(RowPeak, "allocated", est.AllocatedPeakBytes, m.AllocatedPeakBytes)
	c.add(RowPeak, "reserved", est.ReservedPeakBytes, m.ReservedPeakBytes)
	c.add(RowPeak, "device", est.DevicePeakBytes, m.DevicePeakBytes)
	splitLoss := slices.ContainsFunc(m.Phases, func(p MeasuredPhase) bool { return p.Name == "loss" })
	for _, p := range m.Phases {
		names := phaseMatch[p.Name]
		if names == nil || (splitLoss && p.Name == "forward") {
			names = []string{p.Name}
		}
		var e units.Bytes
		for _, ep := range est.Phases {
			if slices.Contains(names, ep.Name) {
				e = max(e, ep.Bytes)
			}
		}
		c.add(RowPhase, p.Name, e, p.AllocatedPeakBytes)
	}
	for _, mc := range m.Components {
		for _, cm := range componentMatch {
			if cm.measured != mc.Name {
				continue
			}
			var e units.Bytes
			for _, ec := range est.Components {
				if slices.Contains(cm.estimate, ec.Name) {
					e = units.Add(e, ec.Bytes)
				}
			}
			c.add(RowComponent, mc.Name, e, mc.Bytes)
		}
	}
	return c
}

// add appends a row when both sides are known.
func (c *Comparison) add(kind, name string, est, meas units.Bytes) {
	if est <= 0 || meas <= 0 {
		return
	}
	c.Rows = append(c.Rows, ComparisonRow{Kind: kind, Name: name, EstimatedBytes: est, MeasuredBytes: meas, ErrorPct: errorPct(est, meas)})
}

// errorPct is 100 × (est − meas) / meas, rounded to 0.1.
func errorPct(est, meas units.Bytes) float64 {
	return math.Round(1000*(float64(est)-float64(meas))/float64(meas)) / 10
}
