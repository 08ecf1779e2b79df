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
		{"mlp factor vs set", []string{"--mlp-act-factor", "6", "--set", "mlp_act_factor=5"}, []string{"--mlp-act-factor", "--set mlp_act_factor=5"}},
		{"retention vs set", []string{"--grad-ckpt-reduction", "0.35", "--set", "grad_ckpt_reduction=0.5"}, []string{"--grad-ckpt-reduction", "--set grad_ckpt_reduction=0.5"}},
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
		{"grad ckpt reduction above 1", []string{"--grad-ckpt-reduction", "1.5"}, ExitUsage, "--grad-ckpt-reduction: want a value in (0, 1]"},
		{"grad ckpt reduction 0", []string{"--grad-ckpt-reduction", "0"}, ExitUsage, "grad_ckpt_reduction"},
		{"attn fa negative", []string{"--attn-act-factor-fa", "-0.8"}, ExitUsage, "--attn-act-factor-fa: want a value in (0, 1000]"},
		{"attn no fa 0", []string{"--attn-act-factor-no-fa", "0"}, ExitUsage, "--attn-act-factor-no-fa"},
		{"mlp too large", []string{"--mlp-act-factor", "1e9"}, ExitUsage, "--mlp-act-factor"},
		{"mlp not a number", []string{"--mlp-act-factor", "six"}, ExitUsage, "mlp-act-factor"},
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

// TestActivationFlagsSetConstants checks that each of the LLM/VLM
// estimator's activation flags is --set of its constant: the same
// estimate, the constant recorded in the job, and only the activations
// row (and the totals) changed, by the amount the factor gives.
func TestActivationFlagsSetConstants(t *testing.T) {
	// SmolLM2-135M: hidden 576, 30 layers; bf16, 512 tokens.
	const model, hidden, tokensLayers = "HuggingFaceTB/SmolLM2-135M-Instruct", 576, 512 * 30
	base := []string{model, "--seq-len", "512", "--per-device-batch", "1", "--framework", "hf", "--optimizer", "adamw_torch"}
	for _, tc := range []struct {
		name      string
		flags     []string
		constant  string
		value     float64
		derived   float64 // the replaced part, B/token/layer; 0: compare checkpointing
		replaced  float64 // what replaces it, B/token/layer
		extraBase []string
	}{
		// Derived attention part with flash: norm 8·576, q 2·576, k and v
		// 2·192 each, kernel output 2·576, logsumexp 4·9 = 7716 B.
		{"attention, flash", []string{"--attn-act-factor-fa", "0.8"}, "attn_act_factor_fa", 0.8, 7716, 0.8 * hidden * 2, []string{"--attn", "flash"}},
		// Eager: norm 8·576, q/k/v at query width 3·2·576, o_proj input
		// copy 2·576 = 9216 B (the s² terms stay).
		{"attention, eager", []string{"--attn-act-factor-no-fa", "4"}, "attn_act_factor_no_fa", 4, 9216, 4 * hidden * 2, []string{"--attn", "eager"}},
		// MLP: norm 8·576, gate, SiLU, up, down input 4·2·1536 = 16896 B.
		{"mlp", []string{"--mlp-act-factor", "6"}, "mlp_act_factor", 6, 16896, 6 * hidden * 2, []string{"--attn", "flash"}},
		// Checkpointing keeps 0.35 of the 7716 + 16896 B/token/layer
		// instead of 30 bf16 layer inputs (2·576 B/token each).
		{"checkpointing", []string{"--grad-ckpt-reduction", "0.35"}, "grad_ckpt_reduction", 0.35, 2 * hidden, 0.35 * (7716 + 16896), []string{"--attn", "flash", "--grad-checkpoint", "full"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, base...), tc.extraBase...)
			plain := estimateJSON(t, args...)
			flagged := estimateJSON(t, append(append([]string{}, args...), tc.flags...)...)
			set := estimateJSON(t, append(append([]string{}, args...), "--set", tc.constant+"="+fmtFloat(tc.value))...)
			if diff := cmp.Diff(set.PerGPU, flagged.PerGPU); diff != "" {
				t.Errorf("%v differs from --set %s (-set +flag):\n%s", tc.flags, tc.constant, diff)
			}
			if got := flagged.Job.Constants[tc.constant]; got != tc.value {
				t.Errorf("job constants %v, want %s=%v", flagged.Job.Constants, tc.constant, tc.value)
			}
			phase := func(r memory.Result) units.Bytes {
				for _, p := range r.PerGPU.Phases {
					if p.Name == memory.PhaseForward {
						return p.Bytes
					}
				}
				t.Fatal("no forward phase")
				return 0
			}
			d := float64(phase(flagged)) - float64(phase(plain))
			if want := (tc.replaced - tc.derived) * tokensLayers; d < want-2 || d > want+2 {
				t.Errorf("forward phase moved by %.0f B, want %.0f", d, want)
			}
		})
	}
}

// TestConstantsListsActivationFactors checks that gpumem constants
// lists the activation factors as derived by default.
func TestConstantsListsActivationFactors(t *testing.T) {
	out, errOut, code := runCommand(t, "constants")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, name := range []string{"attn_act_factor_fa", "attn_act_factor_no_fa", "mlp_act_factor", "grad_ckpt_reduction"} {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, name+" ") {
				line = l
			}
		}
		if !strings.Contains(line, "0 = derived") || !strings.Contains(line, "derived by default") {
			t.Errorf("constants row of %s = %q, want it marked derived", name, line)
		}
	}
	out, _, _ = runCommand(t, "constants", "--format", "json")
	var cs []memory.ConstantInfo
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cs {
		if c.Derived {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d derived constants in the JSON, want 4", n)
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
		"data_types.json":       `{"q6_x": 0.8203125}`,
		"gpu_types.json":        `[{"name": "X1", "vendor": "AMD", "memory_bytes": 34359738368, "arch": "cdna9"}]`,
		"display_settings.json": `{"format": "markdown", "units": "si"}`,
	})
	out, errOut, code := runCommand(t, "estimate", "--list-types", "--config-dir", dir)
	if code != 0 || !strings.Contains(out, "| q6_x ") || !strings.Contains(out, "6.56") || !strings.Contains(out, "| nf4 ") {
		t.Errorf("--list-types: exit %d, %s\n%s", code, errOut, out)
	}
	out, errOut, code = runCommand(t, "estimate", "llama2-7b", "--show-detailed", "--config-dir", dir, "--format", "table", "--seq-len", "512")
	if code != 0 || !strings.Contains(out, "q6_x") || !strings.Contains(out, "GB") || strings.Contains(out, "GiB") || !strings.Contains(out, "bf16") {
		t.Errorf("--show-detailed: exit %d, %s\n%s", code, errOut, out)
	}
	r := estimateJSON(t, "llama2-7b", "--config-dir", dir, "--gpu", "x1", "--seq-len", "512")
	if r.Job.GPUMemory != 32*units.GiB {
		t.Errorf("--gpu x1 from gpu_types.json: GPUMemory %d", r.Job.GPUMemory)
	}
	// A type only data_types.json defines has no layout to estimate with.
	// (q6_k itself is now llama.cpp's Q6_K mix, which gpumem sizes.)
	_, errOut, code = runCommand(t, "estimate", "llama2-7b", "--config-dir", dir, "--dtype", "q6_x")
	if code != ExitUsage || !strings.Contains(errOut, "data_types.json") {
		t.Errorf("--dtype q6_x: exit %d, %s", code, errOut)
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
