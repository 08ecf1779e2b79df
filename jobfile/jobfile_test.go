package jobfile

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

func TestParseJobFile(t *testing.T) {
	tr, f := true, false
	for _, tc := range []struct {
		name, file, src string
		want            memory.Job
		model           string
		keys            []string
	}{
		{"json", "job.json", `{"model": "llama3-8b", "mode": "training", "seq_len": 4096, "per_device_batch": 2,
			"method": "lora", "lora_rank": 16, "lora_target_modules": ["q_proj", "v_proj"], "grad_checkpoint": true,
			"gpu_memory": "80GiB", "packed": false, "trainable_params": "1.5M", "constants": {"fragmentation": 0.1}}`,
			memory.Job{Mode: memory.Train, SeqLen: 4096, MicroBatch: 2, Method: "lora", LoRARank: 16,
				LoRATargets: []string{"q_proj", "v_proj"}, GradCheckpoint: "full", GPUMemory: 80 * units.GiB, Packed: &f,
				TrainableParams: 1_500_000, Constants: map[string]float64{"fragmentation": 0.1}},
			"llama3-8b", []string{"constants", "gpu_memory_bytes", "grad_checkpoint", "lora_rank", "lora_target_modules",
				"method", "mode", "packed", "per_device_batch", "seq_len", "trainable_params"}},
		{"yaml", "job.yaml", "model: qwen2.5-7b\nmode: inference\nbatch: 8\nprompt_len: 1000\ngen_len: 0\nkv_cache_dtype: fp8\ndouble_quant: true\nlora_target_modules: q_proj, k_proj\n",
			memory.Job{Mode: memory.Inference, Batch: 8, PromptLen: 1000, KVCacheDtype: "fp8", DoubleQuant: &tr, LoRATargets: []string{"q_proj", "k_proj"}},
			"qwen2.5-7b", []string{"batch", "double_quant", "gen_len", "kv_cache_dtype", "lora_target_modules", "mode", "prompt_len"}},
		{"distributed", "d.json", `{"engine": "deepspeed", "zero": 3, "num_gpus": 8, "offload_optimizer": "cpu", "fused_loss": true, "gpu_memory_bytes": 1024}`,
			memory.Job{Mode: memory.Train, Engine: "deepspeed", ZeRO: 3, NumGPUs: 8, OffloadOptimizer: "cpu", FusedLoss: "liger", GPUMemory: 1024},
			"", []string{"engine", "fused_loss", "gpu_memory_bytes", "num_gpus", "offload_optimizer", "zero"}},
		// A ZeRO-3 knob where 0 is a setting of its own: 0 is kept, not
		// taken for the default.
		{"zero-3 knobs", "z.json", `{"engine": "deepspeed", "zero": 3, "stage3_max_reuse_distance": 0, "stage3_prefetch_bucket_size": 5e7}`,
			memory.Job{Mode: memory.Train, Engine: "deepspeed", ZeRO: 3, MaxReuseDistance: new(int64(0)), PrefetchBucketSize: new(int64(5e7))},
			"", []string{"engine", "stage3_max_reuse_distance", "stage3_prefetch_bucket_size", "zero"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.src), tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Job); diff != "" {
				t.Errorf("job (-want +got):\n%s", diff)
			}
			if got.Model != tc.model || got.Layout != LayoutJob {
				t.Errorf("model %q layout %q", got.Model, got.Layout)
			}
			if diff := cmp.Diff(tc.keys, got.Keys); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseReportsEveryProblem checks that one file with many mistakes
// gets one error naming each of them.
func TestParseReportsEveryProblem(t *testing.T) {
	src := `{"model": 7, "seqlen": 4096, "per_device_batch": 0, "zero": 5, "packed": "yes", "lora_dropout": 1.5,
		"gpu_memory_utilization": 0, "mode": "dance", "grad_checkpoint": "sometimes", "optimizer": "adamx",
		"dtype": "fp7", "gpu_memory": "80G", "lora_target_modules": [1], "trainable_params": "lots",
		"constants": {"fragmentaton": 0.1, "cuda_context_mib": -5}, "seq_len": 1.5, "engine": "deepspeedd",
		"stage3_max_reuse_distance": -1}`
	_, err := Parse([]byte(src), "bad.json")
	var je *Error
	if !errors.As(err, &je) {
		t.Fatalf("want *Error, got %v", err)
	}
	want := map[string]string{
		"model":                      "want a model reference",
		"seqlen":                     `did you mean "seq_len"`,
		"per_device_batch":           "positive whole number",
		"zero":                       "want 0 to 3",
		"packed":                     "want true or false",
		"lora_dropout":               "[0, 1)",
		"gpu_memory_utilization":     "(0, 1]",
		"mode":                       "unknown mode",
		"grad_checkpoint":            "unknown mode",
		"optimizer":                  "adamx",
		"dtype":                      "fp7",
		"gpu_memory":                 "ambiguous",
		"lora_target_modules[0]":     "want a string",
		"trainable_params":           "lots",
		"constants.fragmentaton":     `did you mean "fragmentation"`,
		"constants.cuda_context_mib": "out of range",
		"seq_len":                    "whole number",
		"engine":                     "deepspeedd",
		"stage3_max_reuse_distance":  "from 0",
	}
	got := map[string]string{}
	for _, p := range je.Problems {
		got[p.Key] += p.Message
	}
	for k, w := range want {
		if !strings.Contains(got[k], w) {
			t.Errorf("problem %s = %q, want it to mention %q", k, got[k], w)
		}
	}
	if len(je.Problems) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(je.Problems), len(want), err)
	}
	if !strings.HasPrefix(err.Error(), "bad.json: 19 problems:") {
		t.Errorf("message starts %.40q", err.Error())
	}
}

func TestParseRejectsNonObjects(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"array.json", `[1, 2]`, "want a JSON object"},
		{"two.json", `{} {}`, "more than one value"},
		{"broken.json", `{"seq_len": `, "not valid JSON"},
		{"list.yaml", "- a\n- b\n", "want a YAML mapping"},
		{"tabs.yaml", "a:\n\t- b", "not valid YAML"},
		{"batch.json", `{"mode": "train", "batch": 4}`, "per_device_batch"},
		{"both.json", `{"gpu_memory": "1GiB", "gpu_memory_bytes": 5}`, "not both"},
	} {
		_, err := Parse([]byte(tc.src), tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), tc.name) {
			t.Errorf("%s: error %v, want it to name the file and mention %q", tc.name, err, tc.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "job.yml")
	if err := os.WriteFile(p, []byte("model: llama2-7b\nseq_len: 512\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p)
	if err != nil || f.Model != "llama2-7b" || f.Job.SeqLen != 512 || f.Value("seq_len") != "512" || f.Value("dtype") != "" {
		t.Fatalf("Load = %+v, %v", f, err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, MaxSize+10), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("big file: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestValueRoundTrip(t *testing.T) {
	_, err := Parse([]byte(`{"packed": false, "lora_target_modules": ["a", "b"], "lora_dropout": 0.05, "gpu_memory": "1GiB", "compile": 1}`), "v.json")
	if err == nil {
		t.Fatal("want an error for the unknown key compile")
	}
	f, err := Parse([]byte(`{"packed": false, "lora_target_modules": ["a", "b"], "lora_dropout": 0.05, "gpu_memory": "1GiB", "torch_compile": true,
		"stage3_max_reuse_distance": 0}`), "v.json")
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"packed": "false", "lora_target_modules": "a,b", "lora_dropout": "0.05",
		"gpu_memory_bytes": "1073741824", "torch_compile": "true", "stage3_max_reuse_distance": "0"} {
		if got := f.Value(key); got != want {
			t.Errorf("Value(%s) = %q, want %q", key, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"model": "llama3-8b", "seq_len": 4096, "method": "lora"}`,
		`{"model": {"num_parameters": "7B"}, "zero": 3, "constants": {"fragmentation": 0.1}}`,
		`{"model": {"num_parameters": 1e15}, "training": {"batch_size": 2}, "engine": {"type": "deepspeed", "zero_stage": 2}}`,
		"model: llama2-7b\nseq_len: 12\n",
		`{"gpu_memory": "80GiB", "trainable_params": "1.2M", "lora_target_modules": "q,k"}`,
		`[]`, `{"a": {"b": [1, {"c": null}]}}`,
		`{"stage3_max_reuse_distance": 0, "stage3_prefetch_bucket_size": -3}`,
		"constants:\n  fragmentation: .nan\nseq_len: .inf\n",
		"seq_len: 1\nseq_len: 2\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"f.json", "f.yaml"} {
			jf, err := Parse(data, name)
			if err != nil {
				var je *Error
				if errors.As(err, &je) && len(je.Problems) == 0 {
					t.Fatalf("error without problems: %v", err)
				}
				checkMessages(t, err)
				continue
			}
			j := jf.Job
			for _, n := range []int{j.MicroBatch, j.GradAccum, j.SeqLen, j.NumGPUs, j.TP, j.PP, j.DP, j.Batch, j.PromptLen, j.GenLen} {
				if n < 0 {
					t.Fatalf("negative setting in %+v", j)
				}
			}
			if j.GPUMemory < 0 || j.TrainableParams < 0 || j.ZeRO < 0 || j.ZeRO > 3 {
				t.Fatalf("impossible value in %+v", j)
			}
			for _, p := range []*int64{j.PrefetchBucketSize, j.MaxLiveParameters, j.MaxReuseDistance, j.ParamPersistenceThreshold} {
				if p != nil && *p < 0 {
					t.Fatalf("negative ZeRO-3 size in %+v", j)
				}
			}
			if jf.Shape != nil {
				if m, _, err := jf.Shape.Model(); err == nil && m == nil {
					t.Fatal("nil model without error")
				}
			}
		}
	})
}

func TestParseConstants(t *testing.T) {
	c, err := ParseConstants([]byte("fragmentation: 0.1\nCUDA_CONTEXT_MIB: 600\n"), "p.yaml")
	if err != nil || c["fragmentation"] != 0.1 || c["cuda_context_mib"] != 600 || len(c) != 2 {
		t.Errorf("ParseConstants = %v, %v", c, err)
	}
	_, err = ParseConstants([]byte(`{"fragmentaton": 1, "nccl_mib": "lots", "workspace_mib": 1e9}`), "p.json")
	var je *Error
	if !errors.As(err, &je) || len(je.Problems) != 3 || !strings.Contains(err.Error(), `did you mean "fragmentation"`) {
		t.Errorf("ParseConstants errors: %v", err)
	}
}

func FuzzParseConstants(f *testing.F) {
	for _, s := range []string{`{"fragmentation": 0.1}`, "cuda_context_mib: 600\n", `{"x": [1]}`, `1`} {
		f.Add([]byte(s))
	}
	infos := map[string]memory.ConstantInfo{}
	for _, c := range memory.Constants() {
		infos[c.Name] = c
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConstants(data, "c.yaml")
		if err != nil {
			return
		}
		for name, v := range c {
			info, ok := infos[name]
			if !ok || v < info.Min || v > info.Max {
				t.Fatalf("accepted %s = %v", name, v)
			}
		}
	})
}

// wantGot finds a message saying it wanted what it got ("want a number,
// got a number"), which tells the user nothing.
var wantGot = regexp.MustCompile(`want (an? [a-z ]+), got (an? [a-z ]+)$`)

// checkMessages fails on a problem whose message names the same thing as
// wanted and as found.
func checkMessages(t *testing.T, err error) {
	t.Helper()
	var je *Error
	if !errors.As(err, &je) {
		return
	}
	for _, p := range je.Problems {
		if m := wantGot.FindStringSubmatch(p.Message); m != nil && m[1] == m[2] {
			t.Fatalf("%s: %q says it wanted what it got", p.Key, p.Message)
		}
	}
}

// A NaN or infinite constant is named as such, not as "a number".
func TestNonFiniteNumbers(t *testing.T) {
	_, err := Parse([]byte("model: gpt2\nconstants:\n  fragmentation: .nan\n  cuda_context_mib: -.inf\n"), "job.yaml")
	for _, want := range []string{"constants.fragmentation: want a finite number, got NaN", "constants.cuda_context_mib: want a finite number, got -Inf"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
	checkMessages(t, err)
}
