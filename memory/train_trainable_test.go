package memory

import (
	"math"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
)

// TestTrainableErrors checks that a trainable set that cannot be right is
// an error naming the flag, not a silent estimate: a count above the
// model's parameters (which once overflowed to a negative count) and a
// module name that matches nothing (which trained nothing).
func TestTrainableErrors(t *testing.T) {
	m, err := model.Lookup("llama2-7b")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		job  Job
		want string
	}{
		{"count above total", Job{Method: "frozen", TrainableParams: math.MaxInt64, SeqLen: 512}, "<trainable_params>"},
		{"count one above total", Job{Method: "frozen", TrainableParams: m.TotalParams() + 1, SeqLen: 512}, "more than the model"},
		{"unknown module, frozen", Job{Method: "frozen", Trainable: []string{"nosuchmod"}, SeqLen: 512}, `<trainable="nosuchmod">`},
		{"unknown module, lora", Job{Method: "lora", Trainable: []string{"nosuchmod"}, SeqLen: 512}, "matches no module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Estimate(m, tc.job)
			if err == nil || !strings.Contains(marked(err), tc.want) {
				t.Errorf("error %v; want one mentioning %q", marked(err), tc.want)
			}
		})
	}
	// The boundary itself and real module names still work.
	for _, job := range []Job{
		{Method: "frozen", TrainableParams: m.TotalParams(), SeqLen: 512},
		{Method: "frozen", Trainable: []string{"lm_head", "mlp.down_proj"}, SeqLen: 512},
	} {
		r, err := Estimate(m, job)
		if err != nil || r.TrainableParams <= 0 || r.TrainableParams > r.TotalParams {
			t.Errorf("%+v: trainable %d of %d, err %v", job.Trainable, r.TrainableParams, r.TotalParams, err)
		}
	}
}

// TestLoRAModulesToSaveLayerRange checks that layers PEFT trains in full
// next to the adapters (--trainable layers:A-B) record the full-training
// inventory: the activations grow with the number of such layers, the
// same amount per layer.
func TestLoRAModulesToSaveLayerRange(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	acts := func(trainable ...string) float64 {
		t.Helper()
		r := estimateOK(t, m, Job{Method: "lora", SeqLen: 2048, Trainable: trainable})
		for _, c := range r.PerGPU.Components {
			if c.Name == "activations" {
				return float64(max(c.Bytes, c.MaxBytes))
			}
		}
		t.Fatal("no activations row")
		return 0
	}
	// Ranges above layer 0, so the lowest recording layer stays the same.
	base, two, four := acts(), acts("layers:8-9"), acts("layers:8-11")
	d2, d4 := two-base, four-base
	if d2 <= 0 {
		t.Fatalf("two fully trained layers add %.0f B of activations, want more", d2)
	}
	if r := d4 / d2; r < 1.99 || r > 2.01 {
		t.Errorf("four fully trained layers add %.0f B, two add %.0f B: want twice as much", d4, d2)
	}
}
