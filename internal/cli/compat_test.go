package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// estimateJSON runs gpumem estimate with args and decodes its JSON.
func estimateJSON(t *testing.T, args ...string) memory.Result {
	t.Helper()
	out, errOut, code := runCommand(t, append(append([]string{"estimate"}, args...), "--format", "json")...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	var r memory.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return r
}

// TestCompatSpellingsAreAliases checks that each other tool's spelling
// gives exactly the job (and estimate) of gpumem's own flags.
func TestCompatSpellingsAreAliases(t *testing.T) {
	for _, tc := range []struct {
		name         string
		other, ours  []string
		wantInResult func(memory.Job) bool
	}{
		{"llm estimator", []string{"llama2-7b", "--dtype", "bf16", "--seq-len", "2048", "--per-device-batch", "2", "--grad-accum", "4",
			"--flashattn", "true", "--grad-checkpoint", "true", "--lora", "true", "--lora-target-modules", "q_proj", "k_proj", "v_proj", "o_proj",
			"--fused-loss", "--estimate-only"},
			[]string{"--model", "llama2-7b", "--dtype", "bf16", "--seq-len", "2048", "--per-device-batch", "2", "--grad-accum", "4",
				"--attn", "flash", "--grad-checkpoint", "full", "--method", "lora", "--lora-target-modules", "q_proj,k_proj,v_proj,o_proj",
				"--fused-loss", "liger"}, nil},
		{"qlora and offload", []string{"llama2-7b", "--qlora", "true", "--zero", "2", "--dp", "4", "--num-gpus", "4", "--engine", "deepspeed",
			"--cpu-offload-optimizer", "--seq-len", "1024"},
			[]string{"llama2-7b", "--method", "qlora", "--zero", "2", "--dp", "4", "--num-gpus", "4", "--engine", "deepspeed",
				"--offload-optimizer", "cpu", "--seq-len", "1024"}, nil},
		{"calculator", []string{"llama3-8b", "--precision", "fp16", "--batch-size", "2", "--seq-length", "1024", "--gradient-checkpointing",
			"--mode", "training", "--optimizer", "sgd-momentum"},
			[]string{"llama3-8b", "--dtype", "fp16", "--per-device-batch", "2", "--seq-len", "1024", "--grad-checkpoint", "full",
				"--optimizer", "sgd-momentum"}, func(j memory.Job) bool { return j.Optimizer == "sgd-momentum" && j.GradCheckpoint == "full" }},
		{"calculator inference", []string{"llama3-8b", "--mode", "inference", "--no-kv-cache", "--seq-length", "512", "--precision", "float16"},
			[]string{"llama3-8b", "--mode", "inference", "--no-kv-cache", "--seq-len", "512", "--dtype", "float16"},
			func(j memory.Job) bool { return j.NoKVCache && j.Mode == memory.Inference }},
		{"megatron spellings", []string{"llama2-7b", "--tensor-parallel-size", "2", "--pipeline-parallel-size", "2", "--data-parallel-size", "2",
			"--micro-batch-size", "1", "--gradient-accumulation-steps", "8", "--num-gpus", "8", "--engine", "megatron", "--seq_len", "2048"},
			[]string{"llama2-7b", "--tp", "2", "--pp", "2", "--dp", "2", "--per-device-batch", "1", "--grad-accum", "8", "--num-gpus", "8",
				"--engine", "megatron", "--seq-len", "2048"}, func(j memory.Job) bool { return j.TP == 2 && j.PP == 2 && j.DP == 2 }},
		{"gradient checkpointing spaced", []string{"llama2-7b", "--gradient-checkpointing", "false", "--seq-len", "512"},
			[]string{"llama2-7b", "--seq-len", "512"}, func(j memory.Job) bool { return j.GradCheckpoint == "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := estimateJSON(t, tc.other...)
			want := estimateJSON(t, tc.ours...)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("other spelling differs from gpumem's (-ours +other):\n%s", diff)
			}
			if tc.wantInResult != nil && !tc.wantInResult(got.Job) {
				t.Errorf("job %+v lacks the expected settings", got.Job)
			}
		})
	}
}

func TestCompatConflictsNameBothSides(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"precision vs dtype", []string{"--precision", "fp16", "--dtype", "bf16"}, []string{"--precision fp16", "--dtype bf16"}},
		{"two seq spellings", []string{"--seq-length", "1024", "--sequence-length", "2048"}, []string{"--sequence-length 2048", "--seq-length 1024"}},
		{"tp spellings", []string{"--tp", "2", "--tensor-parallel-size", "4"}, []string{"--tensor-parallel-size 4", "--tp 2"}},
		{"offload", []string{"--cpu-offload-optimizer", "--offload-optimizer", "nvme"}, []string{"--cpu-offload-optimizer", "--offload-optimizer nvme"}},
		{"fused loss vs liger", []string{"--fused-loss", "chunked", "--liger", "true"}, []string{"--liger", "--fused-loss chunked"}},
		{"misc overhead vs set", []string{"--misc-overhead-gib", "2", "--set", "misc_overhead_mib=100"}, []string{"--misc-overhead-gib", "--set misc_overhead_mib=100"}},
		{"fragmentation vs set", []string{"--fragmentation-gib", "2", "--set", "fragmentation=0.1"}, []string{"--fragmentation-gib", "--set fragmentation"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCommand(t, append([]string{"estimate", "llama2-7b"}, tc.args...)...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d: %s", code, ExitUsage, errOut)
			}
			for _, w := range append(tc.want, "disagree") {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
}

func TestCompatAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"probe", []string{"--probe", "true"}, ExitUsage, "gpumem probe"},
		{"grad ckpt reduction", []string{"--grad-ckpt-reduction", "0.35"}, ExitUsage, "no faithful mapping"},
		{"attn fa", []string{"--attn-act-factor-fa", "0.8"}, ExitUsage, "activation_scale"},
		{"attn no fa", []string{"--attn-act-factor-no-fa", "4"}, ExitUsage, "no faithful mapping"},
		{"mlp", []string{"--mlp-act-factor", "6"}, ExitUsage, "no faithful mapping"},
		{"negative misc", []string{"--misc-overhead-gib", "-1"}, ExitUsage, "non-negative"},
		{"fragmentation when serving", []string{"--mode", "serving", "--gpu", "h100", "--fragmentation-gib", "2"}, ExitUsage, "no fragmentation term"},
		{"load full model", []string{"--load-full-model"}, 0, "never loads weights"},
		{"probe false is fine", []string{"--probe", "false"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCommand(t, append([]string{"estimate", "llama2-7b", "--seq-len", "512"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, tc.code, errOut, tc.want)
			}
		})
	}
}

func TestTuningFlagsMapOntoConstants(t *testing.T) {
	base := estimateJSON(t, "llama2-7b", "--seq-len", "1024")
	r := estimateJSON(t, "llama2-7b", "--seq-len", "1024", "--fragmentation-gib", "5", "--misc-overhead-gib", "3")
	p := r.PerGPU
	if p.AllocatedPeakBytes != base.PerGPU.AllocatedPeakBytes {
		t.Errorf("allocated peak changed: %d -> %d", base.PerGPU.AllocatedPeakBytes, p.AllocatedPeakBytes)
	}
	if d := p.ReservedPeakBytes - p.AllocatedPeakBytes - 5*units.GiB; d < -2 || d > 2 {
		t.Errorf("reserved - allocated = %d, want 5 GiB", p.ReservedPeakBytes-p.AllocatedPeakBytes)
	}
	var misc units.Bytes
	for _, c := range p.Components {
		if c.Name == "misc" {
			misc = c.Bytes
		}
	}
	if misc != 3*units.GiB {
		t.Errorf("misc = %d, want 3 GiB", misc)
	}
	if r.Job.Constants["misc_overhead_mib"] != 3072 {
		t.Errorf("constants = %v", r.Job.Constants)
	}
}

func TestRewriteSpacedLists(t *testing.T) {
	root := NewRootCmd(&Factory{IO: &IOStreams{}})
	for _, tc := range []struct{ in, want string }{
		{"estimate --lora-target-modules q_proj k_proj v_proj --seq-len 5", "estimate --lora-target-modules=q_proj,k_proj,v_proj --seq-len 5"},
		{"estimate --lora-target-modules q_proj v_proj llama2-7b", "estimate --lora-target-modules=q_proj,v_proj llama2-7b"},
		{"estimate --lora-target-modules q_proj ./cfg.json", "estimate --lora-target-modules q_proj ./cfg.json"},
		{"estimate --fused-loss chunked --gradient-checkpointing true", "estimate --fused-loss=chunked --gradient-checkpointing=true"},
		{"estimate --fused-loss llama2-7b", "estimate --fused-loss llama2-7b"},
		{"estimate --trainable lm_head layers.30-31 org/model", "estimate --trainable=lm_head,layers.30-31 org/model"},
	} {
		got := strings.Join(rewriteBoolArgs(root, strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("rewrite(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func writeConfigDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestConfigDir(t *testing.T) {
	dir := writeConfigDir(t, map[string]string{
		"data_types.json":       `{"q6_k": 0.8203125}`,
		"gpu_types.json":        `[{"name": "X1", "vendor": "AMD", "memory_bytes": 34359738368, "arch": "cdna9"}]`,
		"display_settings.json": `{"format": "markdown", "units": "si"}`,
	})
	out, errOut, code := runCommand(t, "estimate", "--list-types", "--config-dir", dir)
	if code != 0 || !strings.Contains(out, "| q6_k ") || !strings.Contains(out, "6.56") || !strings.Contains(out, "| nf4 ") {
		t.Errorf("--list-types: exit %d, %s\n%s", code, errOut, out)
	}
	out, errOut, code = runCommand(t, "estimate", "llama2-7b", "--show-detailed", "--config-dir", dir, "--format", "table", "--seq-len", "512")
	if code != 0 || !strings.Contains(out, "q6_k") || !strings.Contains(out, "GB") || strings.Contains(out, "GiB") || !strings.Contains(out, "bf16") {
		t.Errorf("--show-detailed: exit %d, %s\n%s", code, errOut, out)
	}
	r := estimateJSON(t, "llama2-7b", "--config-dir", dir, "--gpu", "x1", "--seq-len", "512")
	if r.Job.GPUMemory != 32*units.GiB {
		t.Errorf("--gpu x1 from gpu_types.json: GPUMemory %d", r.Job.GPUMemory)
	}
	_, errOut, code = runCommand(t, "estimate", "llama2-7b", "--config-dir", dir, "--dtype", "q6_k")
	if code != ExitUsage || !strings.Contains(errOut, "data_types.json") {
		t.Errorf("--dtype q6_k: exit %d, %s", code, errOut)
	}
	bad := writeConfigDir(t, map[string]string{"display_settings.json": `{"colour": "red"}`})
	_, errOut, code = runCommand(t, "estimate", "llama2-7b", "--config-dir", bad)
	if code == 0 || !strings.Contains(errOut, "display_settings.json") || !strings.Contains(errOut, "colour") {
		t.Errorf("bad display settings: exit %d, %s", code, errOut)
	}
	_, errOut, code = runCommand(t, "estimate", "llama2-7b", "--config-dir", filepath.Join(dir, "nope"))
	if code != ExitUsage || !strings.Contains(errOut, "not a folder") {
		t.Errorf("missing dir: exit %d, %s", code, errOut)
	}
}
