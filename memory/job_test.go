package memory

import (
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{
		"": Train, "train": Train, "Training": Train, " infer ": Inference, "INFERENCE": Inference, "serve": Serving, "serving": Serving,
	} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"fly", "trains", "vllm"} {
		if _, err := ParseMode(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "train, inference or serving") {
			t.Errorf("ParseMode(%q): err = %v, want one naming the value and the modes", bad, err)
		}
	}
}

func TestParseGradCheckpoint(t *testing.T) {
	for in, want := range map[string]string{
		"true": "full", "FULL": "full", "no": "", "": "", " none ": "", "selective": "selective", "op": "op", "SAC": "sac", "every-3": "every-3",
	} {
		if got, err := ParseGradCheckpoint(in); err != nil || got != want {
			t.Errorf("ParseGradCheckpoint(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"every-0", "every-x", "partial", "layer"} {
		_, err := ParseGradCheckpoint(bad)
		if fieldKey(err) != "grad_checkpoint" || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "every-N") {
			t.Errorf("ParseGradCheckpoint(%q): err = %v, want a grad_checkpoint error naming the value and the spellings", bad, err)
		}
	}
}

// TestParsedGradCheckpointIsEstimated checks that every value
// ParseGradCheckpoint returns is one the estimator accepts.
func TestParsedGradCheckpointIsEstimated(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	for _, in := range []string{"true", "no", "selective", "op", "sac", "every-3"} {
		gc, err := ParseGradCheckpoint(in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Estimate(m, Job{SeqLen: 512, GradCheckpoint: gc}); err != nil {
			t.Errorf("%q → %q: %v", in, gc, err)
		}
	}
}
