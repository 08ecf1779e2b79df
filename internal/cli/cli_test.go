package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/report"
)

// runCommand runs the CLI with args and returns stdout, stderr and the exit code.
func runCommand(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &Factory{
		IO:     &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Getenv: func(string) string { return "" },
		Now:    func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) },
	}
	code := Main(context.Background(), args, f)
	return out.String(), errOut.String(), code
}

func TestVersionAndHelp(t *testing.T) {
	out, _, code := runCommand(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "gpumem ") {
		t.Errorf("--version: code %d, out %q", code, out)
	}
	out, _, code = runCommand(t, "help")
	if code != 0 || !strings.Contains(out, "estimate") || !strings.Contains(out, "params") {
		t.Errorf("help: code %d, out %q", code, out)
	}
	out, _, code = runCommand(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: code %d, first bytes %.80q", code, out)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"unknown flag", []string{"params", "--no-such-flag"}, "unknown flag"},
		{"bad format", []string{"models", "--format", "yaml"}, "--format"},
		{"bad units", []string{"models", "--units", "furlongs"}, "--units"},
		{"bad mode", []string{"estimate", "--model", "gpt2", "--mode", "dance"}, "--mode"},
		{"zero batch", []string{"estimate", "--model", "gpt2", "--per-device-batch", "0"}, "--per-device-batch"},
		{"negative seq", []string{"estimate", "--model", "gpt2", "--seq-len", "-5"}, "--seq-len"},
		{"bad zero", []string{"estimate", "--model", "gpt2", "--zero", "4"}, "--zero"},
		{"bad gc", []string{"estimate", "--model", "gpt2", "--grad-checkpoint", "sometimes"}, "--grad-checkpoint"},
		{"bad set", []string{"estimate", "--model", "gpt2", "--set", "fragmentation"}, "--set"},
		{"bad set value", []string{"estimate", "--model", "gpt2", "--set", "fragmentation=lots"}, "--set"},
		{"bad gpu memory", []string{"estimate", "--model", "gpt2", "--gpu-memory", "80G"}, "ambiguous"},
		{"conflicting batch", []string{"estimate", "--model", "gpt2", "--batch-size", "2", "--per-device-batch", "4"}, "disagree"},
		{"conflicting method", []string{"estimate", "--model", "gpt2", "--method", "full", "--lora", "true"}, "disagree"},
		{"model twice", []string{"params", "gpt2", "--model", "llama2-7b"}, "model given twice"},
		{"no model", []string{"params"}, "no model given"},
		{"bad util", []string{"estimate", "--model", "gpt2", "--gpu-memory-utilization", "1.5"}, "--gpu-memory-utilization"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCommand(t, tc.args...)
			if code != ExitUsage {
				t.Errorf("exit code %d, want %d (stderr %q)", code, ExitUsage, errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q does not mention %q", errOut, tc.want)
			}
			if strings.Contains(errOut, "goroutine") || strings.Contains(errOut, "panic") {
				t.Errorf("stderr looks like a crash: %q", errOut)
			}
		})
	}
}

func TestRewriteBoolArgs(t *testing.T) {
	root := NewRootCmd(&Factory{IO: &IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}})
	got := rewriteBoolArgs(root, []string{"estimate", "--flashattn", "true", "--lora", "FALSE", "--seq-len", "5", "--model", "true"})
	want := []string{"estimate", "--flashattn=true", "--lora=false", "--seq-len", "5", "--model", "true"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseGradCheckpoint(t *testing.T) {
	for in, want := range map[string]string{"": "", "true": "full", "False": "none", "full": "full", "selective": "selective", "every-2": "every-2", "none": "none"} {
		got, err := parseGradCheckpoint(in)
		if err != nil || got != want {
			t.Errorf("parseGradCheckpoint(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"every-0", "every-x", "maybe"} {
		if _, err := parseGradCheckpoint(in); err == nil {
			t.Errorf("parseGradCheckpoint(%q): want an error", in)
		}
	}
}

func TestEstimateFlagsMapOntoJob(t *testing.T) {
	opts := &estimateOptions{}
	fs := pflag.NewFlagSet("estimate", pflag.ContinueOnError)
	addEstimateFlags(fs, opts)
	err := fs.Parse([]string{"--batch-size", "4", "--seq_len", "2048", "--tensor-parallel-size", "2", "--flashattn",
		"--qlora", "--lora-target-modules", "q_proj,v_proj", "--grad-checkpoint", "true", "--set", "fragmentation=0.1",
		"--gpu-memory", "80GiB", "--packed=false"})
	if err != nil {
		t.Fatal(err)
	}
	if err := opts.finish(fs); err != nil {
		t.Fatal(err)
	}
	j := opts.Job
	if j.MicroBatch != 4 || j.SeqLen != 2048 || j.TP != 2 || j.Attention != "flash" || j.Method != "qlora" ||
		len(j.LoRATargets) != 2 || j.GradCheckpoint != "full" || j.Constants["fragmentation"] != 0.1 ||
		j.GPUMemory != 80<<30 || j.Packed == nil || *j.Packed {
		b, _ := json.Marshal(j)
		t.Errorf("job = %s", b)
	}
}

func TestInferenceBatchSize(t *testing.T) {
	opts := &estimateOptions{}
	fs := pflag.NewFlagSet("estimate", pflag.ContinueOnError)
	addEstimateFlags(fs, opts)
	if err := fs.Parse([]string{"--mode", "inference", "--batch-size", "8"}); err != nil {
		t.Fatal(err)
	}
	if err := opts.finish(fs); err != nil {
		t.Fatal(err)
	}
	if opts.Job.Batch != 8 || opts.Job.MicroBatch != 0 {
		t.Errorf("inference --batch-size 8: Batch %d, MicroBatch %d", opts.Job.Batch, opts.Job.MicroBatch)
	}
}

func TestListingCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"optimizers"}, []string{"adamw_torch", "paged_adamw_8bit", "adafactor", "lion", "muon"}},
		{[]string{"constants"}, []string{"fragmentation", "cuda_context_mib", "activation_scale"}},
		{[]string{"models", "qwen3"}, []string{"Qwen/Qwen3-8B", "qwen3-8b"}},
		{[]string{"models", "--filter", "mixtral", "--format", "markdown"}, []string{"| mistralai/Mixtral-8x7B-v0.1 |"}},
	} {
		out, errOut, code := runCommand(t, tc.args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", tc.args, code, errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q", tc.args, w)
			}
		}
	}
	out, _, _ := runCommand(t, "models", "qwen3", "--format", "json")
	var rows []report.ModelRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) < 5 {
		t.Fatalf("models json: %v, %d rows", err, len(rows))
	}
	for _, r := range rows {
		if !strings.Contains(strings.ToLower(r.ID+r.ModelType+strings.Join(r.Aliases, "")), "qwen3") || r.TotalParams <= 0 {
			t.Errorf("row %+v does not match the filter or has no params", r)
		}
	}
}

func TestEstimateTables(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"estimate", "llama2-7b", "--seq-len", "1024"}, []string{"weights", "optimizer_states", "allocated peak", "reserved peak", "device peak", "phases (allocated)"}},
		{[]string{"estimate", "llama3.1-8b", "--mode", "serving", "--gpu", "h100", "--max-model-len", "32768", "--seq-len", "4096"}, []string{"The KV cache pool is", "At 4,096 tokens per sequence", "max_model_len fits: one request of max_model_len 32,768 tokens", "vLLM would print:", "Maximum concurrency for 32,768 tokens per request"}},
		{[]string{"estimate", "llama2-7b", "--seq-len", "1024", "--explain"}, []string{"how each component was computed", "source:"}},
		{[]string{"estimate", "llama2-7b", "--seq-len", "1024", "--format", "markdown"}, []string{"| component |", "| **allocated peak** |"}},
	} {
		out, errOut, code := runCommand(t, tc.args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", tc.args, code, errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
	}
}

func TestEstimatePipelineStagesTable(t *testing.T) {
	out, errOut, code := runCommand(t, "estimate", "llama3.1-70b", "--engine", "megatron", "--tp", "4", "--pp", "4",
		"--num-gpus", "32", "--seq-len", "4096", "--grad-accum", "8")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"layout: megatron on 32 GPUs: dp 2 × tp 4 × pp 4", "pipeline stages", "0 (peak)", "head + loss", "embedding"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if n := strings.Count(out, "\n   "); n < 3 {
		t.Errorf("expected a row per stage:\n%s", out)
	}
}
