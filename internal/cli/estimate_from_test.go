package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/memory"
)

// writeFiles writes name → content files into a temporary directory and
// returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const testDSConfig = `{
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": 4,
  "bf16": {"enabled": true},
  "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, "reduce_bucket_size": "auto",
    "stage3_max_reuse_distance": 5e8, "zero_hpz_partition_size": 1},
  "zero_optimisation": {"stage": 2}
}`

const testLlamaFactory = `model_name_or_path: meta-llama/Llama-2-7b-hf
stage: sft
finetuning_type: lora
lora_target: all
deepspeed: ds/z2.json
cutoff_len: 1024
per_device_train_batch_size: 2
bf16: true
`

const testZ2 = `{"zero_optimization": {"stage": 2, "overlap_comm": true}, "bf16": {"enabled": "auto"}}`

// estimateFromJSON runs estimate with --format json and decodes the result.
func estimateFromJSON(t *testing.T, args ...string) (memory.Result, string, int) {
	t.Helper()
	out, errOut, code := runCommand(t, append([]string{"estimate", "--format", "json"}, args...)...)
	var r memory.Result
	if code == 0 {
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("decode %q: %v", out, err)
		}
	}
	return r, errOut, code
}

func TestEstimateFromConfigs(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"ds.json":            testDSConfig,
		"lf/train.yaml":      testLlamaFactory,
		"lf/ds/z2.json":      testZ2,
		"lf/missing.yaml":    strings.Replace(testLlamaFactory, "ds/z2.json", "ds/none.json", 1),
		"accelerate.yaml":    "distributed_type: MULTI_GPU\nnum_processes: 4\nmixed_precision: bf16\n",
		"torchtune.yaml":     "model:\n  _component_: torchtune.models.llama2.lora_llama2_7b\n  lora_rank: 8\nbatch_size: 2\n",
		"training_args.json": `{"per_device_train_batch_size": 2, "gradient_checkpointing": true, "bf16": true, "optim": "adamw_torch_fused"}`,
	})
	p := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name  string
		args  []string
		check func(r memory.Result) string
	}{
		{"deepspeed", []string{"llama2-7b", "--seq-len", "512", "--num-gpus", "8", "--deepspeed", p("ds.json")}, func(r memory.Result) string {
			j := r.Job
			if j.Engine != "deepspeed" || j.ZeRO != 3 || j.GradAccum != 4 || j.Dtype != "bf16" || j.OffloadOptimizer != "cpu" || r.Host == nil {
				return "want ZeRO-3, accumulation 4, bf16, the optimizer offloaded to the host"
			}
			w := strings.Join(r.Warnings, "\n")
			if !strings.Contains(w, "zero_optimisation") || !strings.Contains(w, "zero_optimization.zero_hpz_partition_size") {
				return "want the unknown and the unmodelled keys named in the warnings"
			}
			if j.MaxReuseDistance == nil || *j.MaxReuseDistance != 5e8 || strings.Contains(w, "stage3_max_reuse_distance") {
				return "want stage3_max_reuse_distance read, not warned about"
			}
			return ""
		}},
		{"flags win", []string{"llama2-7b", "--seq-len", "512", "--num-gpus", "8", "--deepspeed", p("ds.json"), "--zero", "2",
			"--grad-accum", "1", "--offload-optimizer", "none"}, func(r memory.Result) string {
			if r.Job.ZeRO != 2 || r.Job.GradAccum != 1 || r.Job.OffloadOptimizer != "none" {
				return "want the flags' ZeRO-2, no accumulation, no offload"
			}
			return ""
		}},
		{"llama-factory with its deepspeed file", []string{"--num-gpus", "4", "--from", p("lf/train.yaml")}, func(r memory.Result) string {
			j := r.Job
			if r.Model != "meta-llama/Llama-2-7b-hf" || j.Method != "lora" || j.Engine != "deepspeed" || j.ZeRO != 2 ||
				j.OverlapComm == nil || !*j.OverlapComm || j.SeqLen != 1024 || j.MicroBatch != 2 || j.GradCheckpoint != "full" {
				return "want the model, LoRA, ZeRO-2 with overlap_comm from the referenced file, seq 1024, batch 2, checkpointing"
			}
			return ""
		}},
		{"missing referenced deepspeed file", []string{"--num-gpus", "4", "--from", p("lf/missing.yaml")}, func(r memory.Result) string {
			if !strings.Contains(strings.Join(r.Warnings, "\n"), "ds/none.json not found") {
				return "want a warning naming the missing file"
			}
			return ""
		}},
		{"accelerate", []string{"llama2-7b", "--seq-len", "512", "--training-args", p("accelerate.yaml")}, func(r memory.Result) string {
			if r.Job.Engine != "ddp" || r.Job.NumGPUs != 4 || r.Job.Dtype != "fp32" || r.Job.ComputeDtype != "bf16" || r.Parallel == nil || r.Parallel.DP != 4 {
				return "want DDP over 4 GPUs, AMP"
			}
			return ""
		}},
		{"training args", []string{"llama2-7b", "--seq-len", "512", "--training-args", p("training_args.json")}, func(r memory.Result) string {
			if r.Job.MicroBatch != 2 || r.Job.GradCheckpoint != "full" || r.Job.Optimizer != "adamw_torch_fused" {
				return "want batch 2, checkpointing, fused AdamW"
			}
			return ""
		}},
		{"torchtune", []string{"llama2-7b", "--seq-len", "512", "--from", p("torchtune.yaml")}, func(r memory.Result) string {
			if r.Job.Framework != "torchtune" || r.Job.Method != "lora" || r.Job.LoRARank != 8 || r.Job.MicroBatch != 2 {
				return "want torchtune LoRA r8 batch 2"
			}
			return ""
		}},
		{"buffer flags", []string{"llama2-7b", "--seq-len", "512", "--num-gpus", "8", "--engine", "deepspeed", "--zero", "2",
			"--reduce-bucket-size", "5e7", "--overlap-comm", "--stage3-max-live-parameters", "100000000",
			"--stage3-max-reuse-distance", "2e8", "--stage3-prefetch-bucket-size", "0"}, func(r memory.Result) string {
			j := r.Job
			if j.ReduceBucketSize != 5e7 || j.OverlapComm == nil || !*j.OverlapComm || j.MaxLiveParameters == nil || *j.MaxLiveParameters != 1e8 ||
				j.MaxReuseDistance == nil || *j.MaxReuseDistance != 2e8 || j.PrefetchBucketSize == nil || *j.PrefetchBucketSize != 0 ||
				j.ParamPersistenceThreshold != nil || j.SubGroupSize != 0 {
				return "want the bucket sizes and overlap_comm from the flags"
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, errOut, code := estimateFromJSON(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if msg := tt.check(r); msg != "" {
				b, _ := json.Marshal(r.Job)
				t.Errorf("%s; job %s, warnings %q", msg, b, r.Warnings)
			}
		})
	}
}

func TestEstimateFromErrors(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"accelerate.yaml": "distributed_type: DEEPSPEED\nnum_processes: 2\n",
		"broken.json":     `{"zero_optimization": `,
		"torchtune.yaml":  "model:\n  _component_: torchtune.models.llama2.llama2_7b\n",
		"unknown.yaml":    "hello: world\n",
		"args-bad.json":   `{"per_device_train_batch_size": 4, "bf16": true, "fp16": true}`,
	})
	p := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"wrong flag for the format", []string{"llama2-7b", "--deepspeed", p("accelerate.yaml")}, 2, []string{"--deepspeed", "accelerate", "--training-args"}},
		{"broken json", []string{"llama2-7b", "--deepspeed", p("broken.json")}, 1, []string{"--deepspeed", "broken.json"}},
		{"missing file", []string{"llama2-7b", "--from", p("nope.yaml")}, 1, []string{"--from", "nope.yaml"}},
		{"unknown format", []string{"llama2-7b", "--from", p("unknown.yaml")}, 1, []string{"--from", "not a recognised training config"}},
		{"no model", []string{"--from", p("torchtune.yaml")}, 2, []string{"no model given"}},
		// A recognised file keeps its own errors under another format's
		// flag (it is not re-read as a DeepSpeed config).
		{"bad TrainingArguments given to --deepspeed", []string{"llama2-7b", "--deepspeed", p("args-bad.json")}, 1, []string{"--deepspeed", "fp16: true: want false when bf16 is true"}},
		{"bad element count", []string{"llama2-7b", "--reduce-bucket-size", "lots"}, 2, []string{"reduce-bucket-size"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCommand(t, append([]string{"estimate"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
}
