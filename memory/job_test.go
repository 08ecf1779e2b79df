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
