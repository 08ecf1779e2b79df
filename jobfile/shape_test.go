package jobfile

import (
	"math"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/memory"
)

func totalParams(t *testing.T, s Shape) (int64, Shape) {
	t.Helper()
	m, note, err := s.Model()
	if err != nil {
		t.Fatalf("%+v: %v", s, err)
	}
	if !strings.Contains(note, "model shape assumed") {
		t.Errorf("note %q does not say the shape was assumed", note)
	}
	var n int64
	for _, mod := range m.Modules {
		n += mod.Params
	}
	c, _ := s.solve()
	if m.Text.Layers != c.Layers || m.Text.Hidden != c.Hidden || m.Text.Intermediate != c.Intermediate && c.Experts == 0 {
		t.Errorf("model %+v does not have the solved shape %+v", m.Text, c)
	}
	return n, c
}

// TestShapeRule checks that a size alone gives a model of about that
// size with Llama-like proportions.
func TestShapeRule(t *testing.T) {
	for _, p := range []int64{125e6, 1e9, 7e9, 13e9, 70e9, 405e9} {
		n, c := totalParams(t, Shape{Params: p})
		if rel := math.Abs(float64(n)-float64(p)) / float64(p); rel > 0.05 {
			t.Errorf("%d: built %d parameters (%.1f%% off)", p, n, 100*rel)
		}
		if c.Hidden%256 != 0 || c.Intermediate%256 != 0 || c.Hidden/c.Heads != 128 || c.KVHeads != c.Heads || c.Vocab != 32000 {
			t.Errorf("%d: shape %+v breaks the rule", p, c)
		}
	}
	// Llama-2-7B's proportions come back for 6.74B.
	_, c := totalParams(t, Shape{Params: 6_738_415_616})
	if c.Hidden != 4096 || c.Layers != 32 {
		t.Errorf("6.74B: hidden %d, layers %d; want 4096 and 32", c.Hidden, c.Layers)
	}
}

func TestShapeGivenDimensions(t *testing.T) {
	// Llama-2-7B's dimensions with its size: the FFN width is solved.
	n, c := totalParams(t, Shape{Params: 6_738_415_616, Layers: 32, Hidden: 4096, Heads: 32})
	if c.Intermediate != 11008 || n != 6_738_415_616 {
		t.Errorf("Llama-2-7B dims: FFN %d, %d params; want 11008 and 6738415616", c.Intermediate, n)
	}
	// A fully given shape needs no size.
	if n, _ := totalParams(t, Shape{Layers: 2, Hidden: 256, Heads: 2, Intermediate: 512, Vocab: 1000}); n != 2*(4*256*256+3*256*512+2*256)+2*1000*256+256 {
		t.Errorf("explicit shape: %d params", n)
	}
	// MoE: Mixtral-like, and with a shared expert.
	for _, s := range []Shape{{Params: 47e9, Experts: 8, ExpertsPerToken: 2, Hidden: 4096, KVHeads: 8}, {Params: 14e9, Experts: 60, ExpertsPerToken: 4, SharedFFN: 5632, Hidden: 2048}} {
		m, _, err := s.Model()
		if err != nil || m.Text.MoE == nil || m.Text.MoE.Experts != s.Experts {
			t.Errorf("MoE %+v: %v", s, err)
		}
	}
}

func TestShapeErrors(t *testing.T) {
	for _, tc := range []struct {
		s    Shape
		want string
	}{
		{Shape{}, "give num_parameters"},
		{Shape{Params: 7e9, Hidden: 4096, Heads: 30}, "not a multiple"},
		{Shape{Params: 7e9, Heads: 32, KVHeads: 5}, "num_key_value_heads"},
		{Shape{Params: 1e14}, "out of range"},
		{Shape{Layers: 100000, Hidden: 256}, "too large"},
	} {
		if _, _, err := tc.s.Model(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
	}
}

// TestSyntheticModelEstimates checks that the synthetic model goes
// through the estimators like a catalog model.
func TestSyntheticModelEstimates(t *testing.T) {
	m, _, err := Shape{Params: 7e9}.Model()
	if err != nil {
		t.Fatal(err)
	}
	small, _, _ := Shape{Params: 1e9}.Model()
	j := memory.Job{SeqLen: 2048}
	r7, err := memory.Estimate(m, j)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := memory.Estimate(small, j)
	if err != nil {
		t.Fatal(err)
	}
	if !(r1.PerGPU.DevicePeakBytes < r7.PerGPU.DevicePeakBytes) {
		t.Errorf("1B (%d) not below 7B (%d)", r1.PerGPU.DevicePeakBytes, r7.PerGPU.DevicePeakBytes)
	}
}
