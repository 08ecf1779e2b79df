package calibrate

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/probe"
	"github.com/gpumem/gpumem/units"
)

// truth is how the synthetic GPU behaves.
type truth struct {
	scale    float64 // activations really are scale × the estimate's
	frag     float64 // reserved = allocated × (1 + frag)
	overhead float64 // device − reserved, MiB
	noise    float64 // relative noise on each measurement
}

var stack = probe.Software{Torch: "2.5.1+cu124", CUDA: "12.4", Transformers: "4.46.3"}

// syntheticRuns makes n runs estimated with the default constants and
// measured on a GPU that behaves as t says.
func syntheticRuns(t *testing.T, n int, mode memory.Mode, tr truth, seed uint64) []Run {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	runs := make([]Run, n)
	for i := range runs {
		job := memory.Job{Mode: mode, GPU: "H100-SXM"}
		ov, err := memory.RuntimeOverheads(job)
		if err != nil {
			t.Fatal(err)
		}
		w := units.Bytes((2 + 28*rng.Float64()) * float64(units.GiB))
		act := units.Bytes((1 + 19*rng.Float64()) * float64(units.GiB))
		alloc := w + act
		res := ov.Reserved(alloc)
		est := memory.PerGPU{
			AllocatedPeakBytes: alloc, ReservedPeakBytes: res, DevicePeakBytes: ov.Device(res),
			Components: []memory.Component{
				{Name: "weights", Bytes: w, Level: "allocated"},
				{Name: "activations", Bytes: act, Level: "allocated"},
			},
		}
		jitter := func() float64 { return 1 + tr.noise*rng.NormFloat64() }
		ma := (float64(w) + tr.scale*float64(act)) * jitter()
		if mode != memory.Train {
			ma = float64(alloc) * jitter() // no activation scale outside training
		}
		mr := ma * (1 + tr.frag) * jitter()
		md := mr + tr.overhead*float64(units.MiB)*jitter()
		runs[i] = Run{
			ID: string(mode) + "-" + string(rune('a'+i%26)), GPU: "NVIDIA H100 80GB HBM3", Software: stack, Job: job, Estimate: est,
			Measured: probe.Measured{AllocatedPeakBytes: units.Bytes(ma), ReservedPeakBytes: units.Bytes(mr), DevicePeakBytes: units.Bytes(md)},
		}
	}
	return runs
}

func TestFitRecoversConstants(t *testing.T) {
	tests := []struct {
		name  string
		tr    truth
		n     int
		want  map[string]float64
		tol   map[string]float64
		notIn []string
	}{
		{
			name: "exact", n: 6, tr: truth{scale: 1.3, frag: 0.08, overhead: 500 + 32 + 300},
			want: map[string]float64{"activation_scale": 1.3, "fragmentation": 0.08, "misc_overhead_mib": 300},
			tol:  map[string]float64{"activation_scale": 1e-6, "fragmentation": 1e-6, "misc_overhead_mib": 0.25},
		},
		{
			name: "noisy", n: 40, tr: truth{scale: 0.85, frag: 0.05, overhead: 500 + 32 + 120, noise: 0.01},
			want:  map[string]float64{"activation_scale": 0.85, "fragmentation": 0.05, "misc_overhead_mib": 120},
			tol:   map[string]float64{"activation_scale": 0.03, "fragmentation": 0.006, "misc_overhead_mib": 60},
			notIn: []string{"cuda_context_mib"},
		},
		{
			// Less device overhead than the modelled context + workspace:
			// misc stays 0 and the context is lowered to 400 − 32 MiB.
			name: "small context", n: 5, tr: truth{scale: 1, frag: 0.06, overhead: 400},
			want: map[string]float64{"activation_scale": 1, "fragmentation": 0.06, "misc_overhead_mib": 0, "cuda_context_mib": 368},
			tol:  map[string]float64{"activation_scale": 1e-6, "fragmentation": 1e-6, "misc_overhead_mib": 0, "cuda_context_mib": 0.25},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := syntheticRuns(t, tt.n, memory.Train, tt.tr, 42)
			p, err := Fit(runs, FitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Constants) != len(tt.want) {
				t.Errorf("constants %v, want exactly %v", p.Constants, tt.want)
			}
			for name, want := range tt.want {
				got, ok := p.Constants[name]
				if !ok || math.Abs(got-want) > tt.tol[name] {
					t.Errorf("%s = %v (set %v), want %v ± %v", name, got, ok, want, tt.tol[name])
				}
			}
			for _, name := range tt.notIn {
				if _, ok := p.Constants[name]; ok {
					t.Errorf("%s set, want it left alone", name)
				}
			}
			if p.GPU != "H100-SXM" || p.Name != "H100-SXM, torch 2.5, CUDA 12.4" || p.Fit.Runs != tt.n {
				t.Errorf("profile header: gpu %q name %q runs %d", p.GPU, p.Name, p.Fit.Runs)
			}
			if err := p.Validate(); err != nil {
				t.Errorf("fitted profile does not validate: %v", err)
			}
			// Every level gets better, in sample and out of sample.
			for _, l := range p.Fit.Levels {
				if l.Runs != tt.n {
					t.Errorf("%s: %d runs, want %d", l.Level, l.Runs, tt.n)
				}
				if tt.tr.scale != 1 && !(l.MeanAbsAfterPct < l.MeanAbsBeforePct && l.MeanAbsLOOPct < l.MeanAbsBeforePct) {
					t.Errorf("%s: error before %.1f %%, after %.1f %%, leave-one-out %.1f %%: want both lower", l.Level, l.MeanAbsBeforePct, l.MeanAbsAfterPct, l.MeanAbsLOOPct)
				}
				if tt.tr.noise == 0 && l.MaxAbsAfterPct > 0.1 {
					t.Errorf("%s: exact data left %.2f %% error", l.Level, l.MaxAbsAfterPct)
				}
			}
		})
	}
}

// The fit's idea of how constants change the estimate is the estimator's:
// applying the profile and recomputing reserved and device with
// memory.Overheads gives the "after" figures.
func TestFitPredictionMatchesEstimator(t *testing.T) {
	runs := syntheticRuns(t, 8, memory.Train, truth{scale: 1.2, frag: 0.1, overhead: 900, noise: 0.02}, 3)
	p, err := Fit(runs, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byRun := map[string]map[string]RunError{}
	for _, e := range p.Fit.PerRun {
		if byRun[e.Run] == nil {
			byRun[e.Run] = map[string]RunError{}
		}
		byRun[e.Run][e.Level] = e
	}
	for _, r := range runs {
		job := r.Job
		if err := p.Apply(&job); err != nil {
			t.Fatal(err)
		}
		ov, err := memory.RuntimeOverheads(job)
		if err != nil {
			t.Fatal(err)
		}
		act := r.Estimate.Components[1].Bytes
		alloc := r.Estimate.Components[0].Bytes + units.FromFloat(float64(act)*p.Constants["activation_scale"])
		res := ov.Reserved(alloc)
		dev := ov.Device(res)
		got := byRun[r.ID]
		for level, want := range map[string]units.Bytes{"allocated": alloc, "reserved": res, "device": dev} {
			if d := math.Abs(float64(got[level].After - want)); d > float64(units.MiB) {
				t.Errorf("%s %s: fit predicts %v, estimator with the profile gives %v", r.ID, level, got[level].After, want)
			}
		}
	}
}

func TestFitInferenceFragmentation(t *testing.T) {
	runs := append(syntheticRuns(t, 4, memory.Train, truth{scale: 1.1, frag: 0.07, overhead: 600}, 1),
		syntheticRuns(t, 3, memory.Inference, truth{frag: 0.01, overhead: 600}, 2)...)
	p, err := Fit(runs, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"activation_scale": 1.1, "fragmentation": 0.07, "fragmentation_inference": 0.01, "misc_overhead_mib": 68} {
		if got := p.Constants[name]; math.Abs(got-want) > 1e-3*math.Max(1, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for _, term := range p.Fit.Terms {
		if term.Constant == "activation_scale" && term.Runs != 4 {
			t.Errorf("activation_scale fitted from %d runs, want the 4 training runs", term.Runs)
		}
	}
}

func TestFitNotEnoughRuns(t *testing.T) {
	runs := syntheticRuns(t, 1, memory.Train, truth{scale: 1, frag: 0.06, overhead: 600}, 1)
	_, err := Fit(runs, FitOptions{})
	if !errors.Is(err, ErrNothingToFit) || !strings.Contains(err.Error(), "each term needs 2 runs") {
		t.Fatalf("error = %v, want ErrNothingToFit explaining the run count", err)
	}
	// A device-only run (probe -- command) fits no term either.
	runs = syntheticRuns(t, 3, memory.Train, truth{scale: 1, frag: 0.06, overhead: 600}, 1)
	for i := range runs {
		runs[i].Measured.AllocatedPeakBytes, runs[i].Measured.ReservedPeakBytes = 0, 0
	}
	if _, err := Fit(runs, FitOptions{}); !errors.Is(err, ErrNothingToFit) {
		t.Fatalf("device-only runs: error = %v, want ErrNothingToFit", err)
	}
	// With MinRuns 1 a single run is enough.
	one := syntheticRuns(t, 1, memory.Train, truth{scale: 1.5, frag: 0.06, overhead: 600}, 1)
	p, err := Fit(one, FitOptions{MinRuns: 1})
	if err != nil || math.Abs(p.Constants["activation_scale"]-1.5) > 1e-6 {
		t.Fatalf("MinRuns 1: %v, %v", p.Constants, err)
	}
	for _, term := range p.Fit.Terms {
		if term.StdErr != nil {
			t.Errorf("%s: one run leaves no degree of freedom, want no standard error, got %v", term.Constant, *term.StdErr)
		}
	}
}

func TestFitClamps(t *testing.T) {
	// Activations twenty times the estimate: the fitted scale is outside
	// the constant's range [0.1, 10] and is clamped, with a note.
	runs := syntheticRuns(t, 3, memory.Train, truth{scale: 20, frag: 0.06, overhead: 600}, 5)
	p, err := Fit(runs, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Constants["activation_scale"]; got != 10 {
		t.Errorf("activation_scale = %v, want clamped to 10", got)
	}
	if term := p.Fit.Terms[0]; term.Constant != "activation_scale" || !strings.Contains(term.Note, "fitted 20 is outside [0.1, 10]; clamped") {
		t.Errorf("term %+v: want the clamp noted", term)
	}
}

func TestFitMixedGroups(t *testing.T) {
	runs := syntheticRuns(t, 3, memory.Train, truth{scale: 1, frag: 0.06, overhead: 600}, 1)
	runs[0].GPU, runs[0].Job.GPU = "NVIDIA A100-SXM4-80GB", "A100-80GB"
	_, err := Fit(runs, FitOptions{})
	if err == nil || !contains(err.Error(), "A100-SXM-80GB (torch 2.5, CUDA 12.4): 1 runs", "H100-SXM (torch 2.5, CUDA 12.4): 2 runs", "--gpu") {
		t.Fatalf("error = %v, want the groups listed", err)
	}
	if got := Select(runs, "h100"); len(got) != 2 {
		t.Errorf("Select(h100) kept %d runs, want 2", len(got))
	}
	runs[1].Software.Torch = "2.6.0"
	if _, err := Fit(Select(runs, "H100-SXM"), FitOptions{}); err == nil || !strings.Contains(err.Error(), "torch 2.6") {
		t.Fatalf("mixed stacks: error = %v", err)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestRunGPUFacts(t *testing.T) {
	// Runs recorded before jobs carried GPU facts name the board only: the
	// catalog fills them, so the H20 (absent from the estimator's old
	// table) gets its sm90 workspace; stated facts and unknown boards stay.
	tests := []struct {
		job    memory.Job
		cc     int
		hasMem bool
	}{
		{memory.Job{GPU: "H20"}, 90, true},
		{memory.Job{GPU: "NVIDIA A100-SXM4-40GB"}, 80, true},
		{memory.Job{GPU: "H20", GPUComputeCapability: 80}, 80, false},
		{memory.Job{GPU: "lab board"}, 0, false},
		{memory.Job{}, 0, false},
	}
	for _, tt := range tests {
		got := Run{Job: tt.job}.withGPUFacts().Job
		if got.GPUComputeCapability != tt.cc || (got.GPUMemory > 0) != tt.hasMem {
			t.Errorf("%q: cc %d memory %d, want cc %d and memory set %v", tt.job.GPU, got.GPUComputeCapability, got.GPUMemory, tt.cc, tt.hasMem)
		}
	}
	if k := (Run{GPU: "NVIDIA H100 80GB HBM3", Job: memory.Job{GPU: "h100"}}).Kind(); k != "H100-SXM" {
		t.Errorf("Kind = %q, want the catalog name H100-SXM", k)
	}
	if k := (Run{GPU: " lab board "}).Kind(); k != "lab board" {
		t.Errorf("Kind = %q, want the device name as given", k)
	}
}
