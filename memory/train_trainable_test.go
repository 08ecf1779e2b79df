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
		{"count above total", Job{Method: "frozen", TrainableParams: math.MaxInt64, SeqLen: 512}, "--trainable-params"},
		{"count one above total", Job{Method: "frozen", TrainableParams: m.TotalParams() + 1, SeqLen: 512}, "more than the model"},
		{"unknown module, frozen", Job{Method: "frozen", Trainable: []string{"nosuchmod"}, SeqLen: 512}, `--trainable "nosuchmod"`},
		{"unknown module, lora", Job{Method: "lora", Trainable: []string{"nosuchmod"}, SeqLen: 512}, "matches no module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Estimate(m, tc.job)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want one mentioning %q", err, tc.want)
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
