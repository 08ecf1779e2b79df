package memory

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
)

// marked renders err with each setting it names in angle brackets
// ("<tp=3>", "<seq_len>"), so that a test can ask whether a message names
// a setting rather than whether a word occurs in it.
func marked(err error) string {
	if err == nil {
		return ""
	}
	return RenderError(err, func(key, value string) string {
		if value == "" {
			return "<" + key + ">"
		}
		return "<" + key + "=" + value + ">"
	})
}

// fieldKey is the Key of the field error err is or wraps, or "".
func fieldKey(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Key
	}
	return ""
}

// flagName names settings as a command line might, to test rendering.
func flagName(key, value string) string {
	if value == "" {
		return "--" + key
	}
	return "--" + key + " " + value
}

func TestFieldErrorRender(t *testing.T) {
	inner := errors.New("unknown dtype \"fp12\"")
	tests := []struct {
		name       string
		err        *FieldError
		json, flag string
	}{
		{"key", FieldErrorf("seq_len", "{seq_len}: want a positive length, got %d", -5),
			"seq_len: want a positive length, got -5", "--seq_len: want a positive length, got -5"},
		{"key and value", FieldErrorf("zero", "{zero=%d} with {pp=%d}: stages 0 and 1 only", 2, 4),
			"zero=2 with pp=4: stages 0 and 1 only", "--zero 2 with --pp 4: stages 0 and 1 only"},
		{"literal value", FieldErrorf("seq_len", "pass {allow_long=true} to estimate anyway"),
			"pass allow_long=true to estimate anyway", "pass --allow_long true to estimate anyway"},
		{"quoted value", FieldErrorf("trainable", "{trainable=%q}: matches nothing", "x}y"),
			`trainable="x}y": matches nothing`, `--trainable "x}y": matches nothing`},
		{"wrapped", FieldErrorf("dtype", "{dtype}: %w", inner),
			`dtype: unknown dtype "fp12"`, `--dtype: unknown dtype "fp12"`},
		{"not keys", FieldErrorf("tp", "{Tp} {tp!} {} {%d} {tp", 3),
			"{Tp} {tp!} {} {3} {tp", "{Tp} {tp!} {} {3} {tp"},
		{"percent in an argument", FieldErrorf("constants", "{constants}: %s", "100%"),
			"constants: 100%", "--constants: 100%"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.json {
				t.Errorf("Error() = %q, want %q", got, tt.json)
			}
			if got := tt.err.Render(flagName); got != tt.flag {
				t.Errorf("Render(flag) = %q, want %q", got, tt.flag)
			}
		})
	}
}

func TestFieldErrorUnwrap(t *testing.T) {
	base := errors.New("base")
	if err := FieldErrorf("dtype", "{dtype}: %w", base); !errors.Is(err, base) {
		t.Errorf("%v does not wrap its %%w argument", err)
	}
	if err := FieldErrorf("dtype", "{dtype}: %v", base); errors.Is(err, base) {
		t.Errorf("%v wraps a %%v argument", err)
	}
	if err := FieldErrorf("dtype", "{dtype}: bad"); err.Unwrap() != nil {
		t.Errorf("%v wraps %v", err, err.Unwrap())
	}
}

// TestRenderError checks that field errors are rendered wherever they
// sit in a chain of wrappers, nested field errors included.
func TestRenderError(t *testing.T) {
	inner := FieldErrorf("tp", "{tp=%d} does not divide the %d KV heads", 3, 8)
	outer := FieldErrorf("kv_cache_dtype", "{kv_cache_dtype}: %w", inner)
	tests := []struct {
		err  error
		want string
	}{
		{inner, "--tp 3 does not divide the 8 KV heads"},
		{fmt.Errorf("serving estimate: %w", inner), "serving estimate: --tp 3 does not divide the 8 KV heads"},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", outer)), "a: b: --kv_cache_dtype: --tp 3 does not divide the 8 KV heads"},
		{errors.Join(errors.New("x"), inner), "x\n--tp 3 does not divide the 8 KV heads"},
		{errors.New("plain"), "plain"},
	}
	for _, tt := range tests {
		if got := RenderError(tt.err, flagName); got != tt.want {
			t.Errorf("RenderError(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestFieldErrorKeys checks the key of the errors that bad jobs get: the
// setting a front end points at (the API's "field", the CLI's flag).
func TestFieldErrorKeys(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	tests := []struct {
		job  Job
		want string
	}{
		{Job{SeqLen: -1}, "seq_len"},
		{Job{SeqLen: 8192}, "seq_len"},
		{Job{MicroBatch: -1}, "per_device_batch"},
		{Job{GradAccum: -1}, "grad_accum"},
		{Job{OptimizerInBwd: true, GradAccum: 2}, "optimizer_in_backward"},
		{Job{Attention: "ring"}, "attn"},
		{Job{Optimizer: "adamx"}, "optimizer"},
		{Job{Dtype: "fp12"}, "dtype"},
		{Job{Dtype: "fp8"}, "dtype"},
		{Job{Method: "prefix"}, "method"},
		{Job{Method: "frozen"}, "method"},
		{Job{Trainable: []string{"nosuchmod"}}, "trainable"},
		{Job{TrainableParams: -1, Method: "frozen"}, "trainable_params"},
		{Job{Method: "lora", LoRARank: 1 << 20}, "lora_rank"},
		{Job{Method: "lora", LoRATargets: []string{"nope"}}, "lora_target_modules"},
		{Job{Method: "lora", LoRADropout: 1}, "lora_dropout"},
		{Job{Engine: "horovod"}, "engine"},
		{Job{ZeRO: 2}, "zero"},
		{Job{TP: 3, NumGPUs: 3}, "tp"},
		{Job{NumGPUs: 8, TP: 3}, "num_gpus"},
		{Job{VirtualStages: -1}, "virtual_pipeline_stages"},
		{Job{PP: 2, PipelineSchedule: "interleaved"}, "virtual_pipeline_stages"},
		{Job{PP: 64}, "pp"},
		{Job{Engine: "ddp", NumGPUs: 2, DDPBucketCapMB: math.NaN()}, "ddp_bucket_cap_mb"},
		{Job{Constants: map[string]float64{"nosuch": 1}}, "constants"},
		{Job{ImagesPerSample: 1}, "images_per_sample"},
		{Job{Mode: Inference, PromptLen: 8, GenLen: 1 << 20}, "prompt_len"},
		{Job{Mode: Inference, SeqLen: 1 << 20}, "seq_len"},
		{Job{Mode: Inference, PromptLen: 8, KVCacheDtype: "int3"}, "kv_cache_dtype"},
		{Job{Mode: Inference, PromptLen: 8, Batch: -2}, "batch"},
		{Job{Mode: Serving, MaxModelLen: 1024}, "gpu"},
		{Job{Mode: Serving, GPUMemory: 80 << 30, MaxModelLen: 1 << 20}, "max_model_len"},
		{Job{Mode: "dance"}, "mode"},
		{Job{GPUComputeCapability: 900}, "gpu_compute_capability"},
	}
	for _, tt := range tests {
		_, err := Estimate(m, tt.job)
		if got := fieldKey(err); got != tt.want {
			t.Errorf("%+v: key %q (%v), want %q", tt.job, got, err, tt.want)
		}
	}
}

// settingRE is a second reading of the template syntax, for the fuzz
// test to compare with: {key} or {key=value}, the value running to the
// next closing brace.
var settingRE = regexp.MustCompile(`\{([a-z][a-z0-9_]*)(?:=([^}]*))?\}`)

// FuzzExpandKeys checks the template reader on any text: it never
// panics, passes the namer only keys it may name, and finds the same
// settings as a regular expression does.
func FuzzExpandKeys(f *testing.F) {
	for _, s := range []string{"{seq_len}: want %d", "{tp=%d} and {pp=%d}", "{", "}{", "{Tp}", "{a={b}}", "{x=}", "{{a}", "no settings"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, format string) {
		name := func(key, value string) string { return "<" + key + "|" + value + ">" }
		got := expandKeys(format, func(key, value string) string {
			if !isKey(key) || strings.Contains(value, "}") {
				t.Errorf("%q: namer called with key %q, value %q", format, key, value)
			}
			return name(key, value)
		})
		want := settingRE.ReplaceAllStringFunc(format, func(m string) string {
			sub := settingRE.FindStringSubmatch(m)
			return name(sub[1], sub[2])
		})
		if got != want {
			t.Errorf("%q expanded to %q, want %q", format, got, want)
		}
	})
}
