package probe

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
)

// runScript runs the embedded probe script with the real python3 against
// the stand-in torch, transformers, peft and pynvml of testdata/fakepy
// (see its README): the control flow of the script is real, the numbers
// are a toy allocator's. extra are more script arguments, env more
// environment variables.
func runScript(t *testing.T, cfg []byte, job memory.Job, extra []string, env ...string) SyntheticResult {
	t.Helper()
	python := realPython(t)
	fake, err := filepath.Abs(filepath.Join("testdata", "fakepy"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args, err := WriteSynthetic(dir, SyntheticOptions{Config: cfg, Job: job, Warmup: 1, Steps: 2})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, append(append([]string{"-u"}, args...), extra...)...)
	cmd.Dir = dir
	// A PATH of the interpreter's folder alone keeps nvidia-smi away: the
	// script reads the driver from the stand-in NVML and the device
	// figure from mem_get_info.
	cmd.Env = append([]string{"PYTHONPATH=" + fake, "PATH=" + filepath.Dir(python), "HOME=" + dir}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	res, err := ParseSyntheticOutput(stdout.Bytes())
	if err != nil {
		t.Fatalf("%v (exit: %v)\nstderr:\n%s", err, runErr, stderr.String())
	}
	if res.OK != (runErr == nil) {
		t.Errorf("ok %v but the script's exit was %v", res.OK, runErr)
	}
	return res
}

// realPython is the interpreter python3 on PATH runs (a version manager's
// python3 may be a shell script that needs a full PATH).
// It is looked up once: a version manager's shim can take seconds.
func realPython(t *testing.T) string {
	t.Helper()
	pythonOnce.Do(func() {
		out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
		pythonPath, pythonErr = strings.TrimSpace(string(out)), err
	})
	if pythonErr != nil {
		t.Fatalf("the probe script's tests need python3 on PATH: %v", pythonErr)
	}
	return pythonPath
}

var (
	pythonOnce sync.Once
	pythonPath string
	pythonErr  error
)

func catalogConfig(t *testing.T, name string) []byte {
	t.Helper()
	cfg, err := model.CatalogConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func phaseNames(r SyntheticResult) string {
	var names []string
	for _, p := range r.Phases {
		names = append(names, p.Name)
	}
	return strings.Join(names, ",")
}

func TestScriptTrainsWithStandIns(t *testing.T) {
	job := memory.Job{SeqLen: 256, MicroBatch: 2, Method: "lora", LoRATargets: []string{"all-linear"}, GradCheckpoint: "full"}
	r := runScript(t, catalogConfig(t, "qwen2.5-0.5b"), job, nil, "FAKE_GPU_NAME=NVIDIA H200", "FAKE_NVML_DRIVER=575.51.03")
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	// The forward and the loss are separate phases, split by the hook on
	// the output layer.
	if got := phaseNames(r); got != "forward,loss,backward,step" {
		t.Errorf("phases %s, want forward,loss,backward,step", got)
	}
	d := r.Device
	if d.Name != "NVIDIA H200" || d.CUDATotalBytes != 80<<30 || d.CUDAFreeBytes <= 0 || d.CUDAFreeBytes >= d.CUDATotalBytes {
		t.Errorf("device %+v: want the name and the memory mem_get_info reports", d)
	}
	if r.Software.Driver != "575.51.03" || r.Software.PEFT == "" || r.Software.Transformers == "" {
		t.Errorf("software %+v: want the NVML driver and the package versions", r.Software)
	}
	for key, want := range map[string]any{"grad_checkpoint_use_reentrant": true, "use_cache": false, "method": "lora", "lora_target_modules": "all-linear"} {
		if got := r.Applied[key]; got != want {
			t.Errorf("applied[%s] = %v, want %v", key, got, want)
		}
	}
	if r.Params.Trainable <= 0 || r.Params.Trainable >= r.Params.Total {
		t.Errorf("params %+v: LoRA trains a part of the model", r.Params)
	}
	names := map[string]bool{}
	for _, c := range r.Components {
		names[c.Name] = c.Bytes > 0
	}
	for _, want := range []string{"weights", "activations", "gradients", "optimizer_states", "cuda_context"} {
		if !names[want] {
			t.Errorf("component %s missing or zero: %+v", want, r.Components)
		}
	}
}

func TestScriptOptimizersAndCompile(t *testing.T) {
	cfg := catalogConfig(t, "qwen2.5-0.5b")
	states := map[string]int64{}
	for _, opt := range []string{"sgd", "sgd_momentum", "adamw_torch", "adafactor"} {
		r := runScript(t, cfg, memory.Job{SeqLen: 128, Optimizer: opt}, nil)
		if err := r.Err(); err != nil {
			t.Fatalf("%s: %v", opt, err)
		}
		for _, c := range r.Components {
			if c.Name == "optimizer_states" {
				states[opt] = int64(c.Bytes)
			}
		}
	}
	if !(states["sgd"] == 0 && states["sgd_momentum"] > 0 && states["adamw_torch"] == 2*states["sgd_momentum"]) {
		t.Errorf("optimizer states %v: want none for sgd, one buffer for momentum, two for AdamW", states)
	}
	r := runScript(t, cfg, memory.Job{SeqLen: 128, Compile: true}, nil)
	if r.Applied["torch_compile"] != true || phaseNames(r) != "forward,backward,step" {
		t.Errorf("compiled: applied %v, phases %s: want torch_compile and the loss inside forward (no hook)", r.Applied, phaseNames(r))
	}
}

func TestScriptGeneratesWithStandIns(t *testing.T) {
	cfg := catalogConfig(t, "qwen2.5-0.5b")
	job := memory.Job{Mode: memory.Inference, Batch: 2, PromptLen: 64, GenLen: 4}
	for _, cache := range []string{"dynamic", "static"} {
		r := runScript(t, cfg, job, []string{"--cache-implementation", cache})
		if err := r.Err(); err != nil {
			t.Fatalf("%s: %v", cache, err)
		}
		if phaseNames(r) != "prefill,decode" || r.Applied["cache_implementation"] != cache {
			t.Errorf("%s: phases %s, applied %v", cache, phaseNames(r), r.Applied)
		}
		if (r.Applied["generate_compile"] == "disabled") != (cache == "static") {
			t.Errorf("%s: generate_compile %v: transformers compiles a static cache's decode unless disabled", cache, r.Applied["generate_compile"])
		}
	}
	job.GenLen = 0
	if r := runScript(t, cfg, job, nil); phaseNames(r) != "prefill" {
		t.Errorf("gen_len 0: phases %s, want prefill only", phaseNames(r))
	}
}

func TestScriptFeedsLLaVAImages(t *testing.T) {
	job := memory.Job{SeqLen: 128, Method: "lora", ImagesPerSample: 1}
	r := runScript(t, catalogConfig(t, "llava-1.5-7b"), job, nil)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	// CLIP ViT-L/14 at 336 px: 24² patches, the CLS position dropped.
	if got := r.Applied["image_tokens_per_image"]; got != float64(576) {
		t.Errorf("image tokens per image %v, want 576", got)
	}
	// Other VLM families are refused, not run on their text path.
	r = runScript(t, catalogConfig(t, "qwen2-vl-7b"), job, nil)
	if r.OK || r.ErrorKind != "unsupported" || !strings.Contains(r.Error, "LLaVA") {
		t.Errorf("images for Qwen2-VL: %s %q, want unsupported naming LLaVA", r.ErrorKind, r.Error)
	}
}

func TestScriptFailuresWithStandIns(t *testing.T) {
	cfg := catalogConfig(t, "qwen2.5-0.5b")
	tests := []struct {
		name, kind, module string
		job                memory.Job
		env                []string
		is                 error
	}{
		{name: "oom", kind: "oom", job: memory.Job{SeqLen: 4096, MicroBatch: 16}, env: []string{"FAKE_TORCH_TOTAL_BYTES=4000000000"}, is: ErrOOM},
		{name: "no bitsandbytes", kind: "missing_module", module: "bitsandbytes", job: memory.Job{SeqLen: 128, Method: "qlora"}, is: ErrMissingModule},
		{name: "no 8-bit optimizer", kind: "missing_module", module: "bitsandbytes", job: memory.Job{SeqLen: 128, Optimizer: "adamw_8bit"}, is: ErrMissingModule},
		{name: "no flash-attn", kind: "missing_module", module: "flash_attn", job: memory.Job{SeqLen: 128, Attention: "flash"}, is: ErrMissingModule},
		{name: "no cuda", kind: "no_cuda", job: memory.Job{SeqLen: 128}, env: []string{"FAKE_TORCH_NO_CUDA=1"}, is: ErrNoCUDA},
		{name: "crash", kind: "exception", job: memory.Job{SeqLen: 128}, env: []string{"FAKE_TORCH_CRASH=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runScript(t, cfg, tt.job, nil, tt.env...)
			if r.OK || r.ErrorKind != tt.kind || r.Module != tt.module {
				t.Fatalf("ok %v, error_kind %q, module %q (%s): want %q %q", r.OK, r.ErrorKind, r.Module, r.Error, tt.kind, tt.module)
			}
			err := r.Err()
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Err() = %v, want %v", err, tt.is)
			}
			if tt.kind == "oom" && (r.AllocatedPeakBytes <= 0 || r.Device.Name == "") {
				t.Errorf("an OOM keeps the peak up to the failure and the device: %+v", r)
			}
		})
	}
}
