package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/jobfile"
	"github.com/gpumem/gpumem/memory"
)

func writeJob(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestJobFileEqualsFlags checks that a job file gives the estimate of
// the same settings typed as flags.
func TestJobFileEqualsFlags(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		flags               []string
	}{
		{"yaml lora", "job.yaml", "model: llama3-8b\nmethod: lora\nlora_rank: 16\nlora_target_modules: [q_proj, v_proj]\nseq_len: 4096\n" +
			"per_device_batch: 2\ngrad_checkpoint: true\ngpu_memory: 80GiB\npacked: false\ntorch_compile: true\nconstants:\n  fragmentation: 0.08\n",
			[]string{"--model", "llama3-8b", "--method", "lora", "--lora-rank", "16", "--lora-target-modules", "q_proj,v_proj", "--seq-len", "4096",
				"--per-device-batch", "2", "--grad-checkpoint", "full", "--gpu-memory", "80GiB", "--packed=false", "--compile", "--set", "fragmentation=0.08"}},
		{"json inference", "job.json", `{"model": "qwen2.5-7b", "mode": "inference", "batch": 4, "prompt_len": 1000, "gen_len": 200, "kv_cache_dtype": "fp8"}`,
			[]string{"--model", "qwen2.5-7b", "--mode", "inference", "--batch-size", "4", "--prompt-len", "1000", "--gen-len", "200", "--kv-cache-dtype", "fp8"}},
		{"distributed", "d.json", `{"model": "llama2-7b", "engine": "deepspeed", "zero": 3, "num_gpus": 8, "seq_len": 2048, "virtual_pipeline_stages": 1, "task_head": "none"}`,
			[]string{"--model", "llama2-7b", "--engine", "deepspeed", "--zero", "3", "--num-gpus", "8", "--seq-len", "2048", "--virtual-stages", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeJob(t, tc.file, tc.content)
			got := estimateJSON(t, "--config", p)
			want := estimateJSON(t, tc.flags...)
			if strings.Contains(tc.content, "task_head") {
				if got.Job.TaskHead != "none" {
					t.Errorf("task_head not applied: %+v", got.Job)
				}
				want.Job.TaskHead = "none"
				want = estimateJSON(t, tc.flags...) // the flags cannot say task_head: compare the job only
				want.Job.TaskHead = "none"
				if diff := cmp.Diff(want.Job, got.Job); diff != "" {
					t.Errorf("job (-flags +file):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("file differs from flags (-flags +file):\n%s", diff)
			}
		})
	}
}

func TestFlagsOverrideJobFile(t *testing.T) {
	p := writeJob(t, "job.json", `{"model": "llama3-8b", "seq_len": 4096, "per_device_batch": 2, "dtype": "fp16", "attn": "eager",
		"method": "full", "constants": {"fragmentation": 0.08, "cuda_context_mib": 600}}`)
	r := estimateJSON(t, "--config", p, "--seq-length", "1024", "--batch-size", "4", "--precision", "bf16", "--flashattn", "--lora",
		"--set", "fragmentation=0.1", "llama2-7b")
	j := r.Job
	if r.Model != "meta-llama/Llama-2-7b-hf" || j.SeqLen != 1024 || j.MicroBatch != 4 || j.Dtype != "bf16" || j.Attention != "flash" ||
		j.Method != "lora" || j.Constants["fragmentation"] != 0.1 || j.Constants["cuda_context_mib"] != 600 {
		t.Errorf("flags did not override the file: model %s, job %+v", r.Model, j)
	}
}

func TestJobFileErrors(t *testing.T) {
	bad := writeJob(t, "bad.json", `{"model": "llama2-7b", "seqlen": 5, "zero": 9}`)
	_, errOut, code := runCommand(t, "estimate", "--config", bad)
	if code != ExitError || !strings.Contains(errOut, "2 problems") || !strings.Contains(errOut, `did you mean "seq_len"`) || !strings.Contains(errOut, "zero") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	_, errOut, code = runCommand(t, "estimate", "--config", filepath.Join(t.TempDir(), "none.json"))
	if code != ExitError || !strings.Contains(errOut, "--config") {
		t.Errorf("missing file: exit %d: %s", code, errOut)
	}
}

func TestJobFileSyntheticModel(t *testing.T) {
	p := writeJob(t, "s.json", `{"model": {"name": "my-7b", "num_parameters": "7B"}, "seq_len": 2048}`)
	r := estimateJSON(t, "--config", p)
	if r.Model != "my-7b" || r.TotalParams < 6.8e9 || r.TotalParams > 7.2e9 {
		t.Errorf("synthetic model %s with %d params", r.Model, r.TotalParams)
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "model shape assumed") {
		t.Errorf("warnings %q do not say the shape was assumed", r.Warnings)
	}
}

func TestConstantsProfile(t *testing.T) {
	prof := writeJob(t, "c.yaml", "fragmentation: 0.2\ncuda_context_mib: 700\nnccl_mib: 100\n")
	job := writeJob(t, "j.json", `{"model": "llama2-7b", "seq_len": 512, "constants": {"cuda_context_mib": 900, "workspace_mib": 16}}`)
	r := estimateJSON(t, "--config", job, "--constants", prof, "--set", "fragmentation=0.1")
	want := map[string]float64{"fragmentation": 0.1, "cuda_context_mib": 700, "nccl_mib": 100, "workspace_mib": 16}
	if diff := cmp.Diff(want, r.Job.Constants); diff != "" {
		t.Errorf("precedence --set > --constants > job file (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--constants", writeJob(t, "bad.json", `{"fragmentaton": 0.2, "cuda_context_mib": -1}`)}, ExitError,
			[]string{"2 problems", `did you mean "fragmentation"`, "cuda_context_mib: -1 is out of range"}},
		{[]string{"--set", "fragmentaton=0.1"}, ExitUsage, []string{`--set fragmentaton: unknown constant (did you mean "fragmentation"?`}},
		{[]string{"--set", "fragmentation=5"}, ExitUsage, []string{"out of range [0, 2]"}},
	} {
		_, errOut, code := runCommand(t, append([]string{"estimate", "llama2-7b"}, tc.args...)...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d: %s", tc.args, code, tc.code, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q: %s", tc.args, w, errOut)
			}
		}
	}
	out, errOut, code := runCommand(t, "constants", "--constants", prof, "--set", "fragmentation=0.1", "--format", "json")
	var vals []constantValue
	if err := json.Unmarshal([]byte(out), &vals); code != 0 || err != nil {
		t.Fatalf("constants: exit %d, %v: %s", code, err, errOut)
	}
	got := map[string]float64{}
	for _, v := range vals {
		if v.Overridden {
			got[v.Name] = v.Value
		}
	}
	if diff := cmp.Diff(map[string]float64{"fragmentation": 0.1, "cuda_context_mib": 700, "nccl_mib": 100}, got); diff != "" {
		t.Errorf("constants values (-want +got):\n%s", diff)
	}
	out, _, _ = runCommand(t, "constants", "--set", "cuda_context_mib=600")
	if !strings.Contains(out, "600 *") {
		t.Errorf("constants table does not mark the override:\n%s", out)
	}
}

// TestEveryJobKeyReachesTheJob checks that each memory.Job key a job file
// may set is either carried by a flag or copied onto the job.
func TestEveryJobKeyReachesTheJob(t *testing.T) {
	opts := &estimateOptions{}
	fs := pflag.NewFlagSet("estimate", pflag.ContinueOnError)
	addEstimateFlags(fs, opts)
	typ := reflect.TypeOf(memory.Job{})
	for i := 0; i < typ.NumField(); i++ {
		key, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if key == "" || key == "-" {
			continue
		}
		if fs.Lookup(flagForKey(key)) == nil && !jobKeyNoFlag[key] {
			t.Logf("%s has no flag: copied from the file", key)
		}
	}
	f, err := jobfile.Parse([]byte(`{"task_head": "none", "seq_len": 128}`), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := opts.applyJobFile(fs, f); err != nil {
		t.Fatal(err)
	}
	if err := opts.finish(fs); err != nil {
		t.Fatal(err)
	}
	opts.finishJobFile(f)
	if opts.Job.TaskHead != "none" || opts.Job.SeqLen != 128 {
		t.Errorf("job %+v", opts.Job)
	}
}
