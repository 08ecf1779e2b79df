package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/plan"
)

func TestFitOneGPU(t *testing.T) {
	out, errOut, code := runCommand(t, "fit", "Qwen/Qwen2.5-0.5B", "--gpu", "h100", "--seq-len", "1024")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"on H100-SXM (79.65 GiB): fits", "█", "weights", "largest per-device batch that fits:", "longest sequence length that fits:", "fewest GPUs that fit: 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestFitJSON(t *testing.T) {
	out, errOut, code := runCommand(t, "fit", "--model", "Qwen/Qwen2.5-0.5B", "--gpu", "NVIDIA L4", "--seq-len", "1024", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep plan.Assessment
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if rep.GPU.Name != "L4" || rep.Fit.Verdict == "" || rep.MaxBatch == nil || rep.MaxBatch.Value < 1 || rep.Result.PerGPU.DevicePeakBytes != rep.Fit.NeedBytes {
		t.Errorf("report %+v", rep)
	}
	// The batch answer is larger with a shorter sequence.
	out2, _, _ := runCommand(t, "fit", "--model", "Qwen/Qwen2.5-0.5B", "--gpu", "l4", "--seq-len", "256", "--format", "json")
	var rep2 plan.Assessment
	if err := json.Unmarshal([]byte(out2), &rep2); err != nil {
		t.Fatal(err)
	}
	if rep2.MaxBatch.Value < rep.MaxBatch.Value {
		t.Errorf("max batch %d at 256 tokens < %d at 1024", rep2.MaxBatch.Value, rep.MaxBatch.Value)
	}
}

func TestFitFailIfNoFit(t *testing.T) {
	out, _, code := runCommand(t, "fit", "llama2-7b", "--gpu", "t4", "--seq-len", "2048", "--fail-if-no-fit", "--ascii")
	if code != ExitNoFit {
		t.Fatalf("exit %d, want %d\n%s", code, ExitNoFit, out)
	}
	if !strings.Contains(out, "does not fit") || strings.ContainsRune(out, '█') || !strings.Contains(out, "#") || !strings.Contains(out, "--zero 3") {
		t.Errorf("output:\n%s", out)
	}
	out, _, code = runCommand(t, "fit", "llama2-7b", "--gpu", "t4,b200", "--seq-len", "2048", "--fail-if-no-fit")
	if code != 0 {
		t.Errorf("fits on B200 but exit %d", code)
	}
	if !strings.Contains(out, "T4 does not compute in bf16 natively") {
		t.Errorf("no bf16 note for the T4:\n%s", out)
	}
}

func TestFitRecommendationTable(t *testing.T) {
	out, errOut, code := runCommand(t, "fit", "llama3-8b", "--mode", "inference", "--batch-size", "2", "--prompt-len", "2048", "--gen-len", "256", "--gpu", "l4,h100,t4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// 16 GB of bf16 weights: fits an L4 and an H100 (the smaller first),
	// needs two T4s.
	l4, h100, t4 := strings.Index(out, "L4 "), strings.Index(out, "H100-SXM"), strings.Index(out, "T4 ")
	if l4 < 0 || h100 < 0 || t4 < 0 || !(l4 < h100 && h100 < t4) {
		t.Errorf("want L4, H100, T4 in that order:\n%s", out)
	}
	out, _, code = runCommand(t, "fit", "llama3-8b", "--mode", "inference", "--batch-size", "2", "--prompt-len", "2048", "--format", "json")
	var rep struct {
		Model           string                `json:"model"`
		Recommendations []plan.Recommendation `json:"recommendations"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	recs := rep.Recommendations
	if rep.Model != "meta-llama/Meta-Llama-3-8B" {
		t.Errorf("model %q", rep.Model)
	}
	if len(recs) < 30 {
		t.Errorf("%d recommendations without --gpu, want the whole catalog", len(recs))
	}
}

func TestFitSweep(t *testing.T) {
	out, errOut, code := runCommand(t, "fit", "Qwen/Qwen2.5-0.5B", "--gpu", "l4,t4", "--sweep", "seq-len", "--sweep-min", "512", "--sweep-max", "8192")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"512", "8192", "allocated", "device", "l4", "t4"} {
		if !strings.Contains(out, want) {
			t.Errorf("sweep table lacks %q:\n%s", want, out)
		}
	}
	svg := filepath.Join(t.TempDir(), "mem.svg")
	_, errOut, code = runCommand(t, "fit", "Qwen/Qwen2.5-0.5B", "--gpu", "l4", "--sweep", "batch", "--sweep-max", "16", "--plot-out", svg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(svg)
	if err != nil || !strings.Contains(string(data), "<svg") || !strings.Contains(string(data), "L4 (22.49 GiB)") {
		t.Errorf("plot file: %v, %d bytes", err, len(data))
	}
}

func TestFitServing(t *testing.T) {
	out, errOut, code := runCommand(t, "fit", "llama3-8b", "--mode", "serving", "--gpu", "h100", "--max-model-len", "8192")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"serving on H100-SXM", "longest max_model_len that fits:", "KV cache pool:", "concurrent sequences of 8192 tokens", "tensor parallel"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestFitUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown gpu", []string{"fit", "gpt2", "--gpu", "tpu-v5"}, "unknown GPU"},
		{"ambiguous gpu", []string{"fit", "gpt2", "--gpu", "a100"}, "ambiguous"},
		{"bad sweep", []string{"fit", "gpt2", "--sweep", "layers"}, "--sweep"},
		{"plot without sweep", []string{"fit", "gpt2", "--plot-out", "x.svg"}, "--sweep"},
		{"bad plot ext", []string{"fit", "gpt2", "--sweep", "batch", "--plot-out", "x.gif"}, "--plot-out"},
		{"bad range", []string{"fit", "gpt2", "--sweep", "batch", "--sweep-min", "8", "--sweep-max", "2"}, "--sweep-min"},
		{"memory for two", []string{"fit", "gpt2", "--gpu", "h100,l4", "--gpu-memory", "80GiB"}, "--gpu-memory"},
		{"max gpus", []string{"fit", "gpt2", "--max-gpus", "0"}, "--max-gpus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCommand(t, tc.args...)
			if code != ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q, want code %d mentioning %q", code, errOut, ExitUsage, tc.want)
			}
		})
	}
}
