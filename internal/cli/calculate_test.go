package cli

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

func TestCalculate(t *testing.T) {
	p := writeJob(t, "calc.json", `{
  "model": {"name": "llama2-7b", "num_parameters": "7B", "num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "max_seq_len": 4096},
  "training": {"batch_size": 1, "optimizer": "adamw", "dtype": "bf16", "activation_checkpointing": 4},
  "engine": {"type": "deepspeed", "zero_stage": 3},
  "hardware": {"num_gpus": 8, "gpu_memory_gb": 80}}`)
	out, errOut, code := runCommand(t, "calculate", "--config", p)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"fit: device peak", "of 80.00 GiB per GPU", "fits", "model shape assumed", "32 layers, hidden 4096"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if !strings.Contains(errOut, "mixed precision") {
		t.Errorf("stderr lacks the dtype note: %s", errOut)
	}
	// The same job through gpumem's flags and the shape the note states.
	r := estimateJSON(t, "--config", p)
	if r.Job.ZeRO != 3 || r.Job.Engine != "deepspeed" || r.Job.MasterWeights != "fp32" || r.Job.GradCheckpoint != "full" || r.Job.SeqLen != 4096 {
		t.Errorf("job %+v", r.Job)
	}
	_, errOut, code = runCommand(t, "calculate")
	if code != ExitUsage || !strings.Contains(errOut, "--config") {
		t.Errorf("no --config: exit %d, %s", code, errOut)
	}
}

func TestQuick(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		engine string
		zero   int
		gpus   int
	}{
		{[]string{"7", "--gpus", "8", "--engine", "deepspeed"}, "deepspeed", 2, 8},
		{[]string{"70", "--gpus", "64", "--gpu-mem", "80", "--engine", "megatron"}, "megatron", 0, 64},
		{[]string{"0.5"}, "", 0, 1},
	} {
		o := &quickOptions{GPUs: 1, GPUMem: 80, Engine: "pytorch", Dtype: "bf16", SeqLen: 2048, Batch: 1, TP: 1, PP: 1}
		out, errOut, code := runCommand(t, append([]string{"quick"}, tc.args...)...)
		if code != 0 || !strings.Contains(out, "model shape assumed") || !strings.Contains(out, "fit: device peak") {
			t.Errorf("%v: exit %d, %s\n%s", tc.args, code, errOut, out)
		}
		for i := 1; i < len(tc.args); i += 2 {
			switch tc.args[i] {
			case "--gpus":
				o.GPUs, _ = strconv.Atoi(tc.args[i+1])
			case "--engine":
				o.Engine = tc.args[i+1]
			}
		}
		shape, job, err := quickJob(o, tc.args[0])
		if err != nil {
			t.Fatal(err)
		}
		if job.Engine != tc.engine || job.ZeRO != tc.zero || job.NumGPUs != tc.gpus || job.DP != tc.gpus || job.MasterWeights != "fp32" ||
			job.GPUMemory != 80*units.GiB || job.SeqLen != 2048 || job.Mode != memory.Train {
			t.Errorf("%v: job %+v", tc.args, job)
		}
		if shape.Params <= 0 {
			t.Errorf("%v: shape %+v", tc.args, shape)
		}
	}
	for _, args := range [][]string{{"seven"}, {"-3"}, {"7", "--engine", "jax"}, {"7", "--gpus", "0"}, {"7", "--dtype", "int4"}, {"7", "--gpu-mem", "0"},
		{"7", "--gpus", "8", "--tp", "3"}, {"7", "--gpus", "8", "--tp", "2"}, {"7", "--layouts", "-1"}} {
		_, errOut, code := runCommand(t, append([]string{"quick"}, args...)...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
}

// TestQuickLayouts checks that a quick estimate that does not fit lists
// layouts of the same engine and GPU count, and that the first listed
// layout really fits when estimated directly.
func TestQuickLayouts(t *testing.T) {
	out, errOut, code := runCommand(t, "quick", "70", "--gpus", "64", "--gpu-mem", "80", "--engine", "megatron", "--layouts", "3")
	if code != 0 || !strings.Contains(out, "does NOT fit") || !strings.Contains(out, "megatron layouts on 64 GPUs that fit") {
		t.Fatalf("exit %d, %s\n%s", code, errOut, out)
	}
	o := &quickOptions{GPUs: 64, GPUMem: 80, Engine: "megatron", Dtype: "bf16", SeqLen: 2048, Batch: 1, TP: 2, PP: 4}
	shape, job, err := quickJob(o, "70")
	if err != nil {
		t.Fatal(err)
	}
	job.ZeRO = 1 // distributed optimizer, as the listed layouts use
	m, _, err := shape.Model()
	if err != nil {
		t.Fatal(err)
	}
	res, err := memory.Estimate(m, job)
	if err != nil {
		t.Fatal(err)
	}
	if res.PerGPU.DevicePeakBytes > job.GPUMemory {
		t.Errorf("tp 2 × pp 4 with the distributed optimizer: %s does not fit %s", res.PerGPU.DevicePeakBytes, job.GPUMemory)
	}
	// The plain data-parallel layout of the same job must not fit (that is why layouts are listed).
	o.TP, o.PP = 1, 1
	_, dp, _ := quickJob(o, "70")
	if r, err := memory.Estimate(m, dp); err != nil || r.PerGPU.DevicePeakBytes <= dp.GPUMemory {
		t.Errorf("data parallel 70B on 64 GPUs unexpectedly fits: %v", err)
	}
}
