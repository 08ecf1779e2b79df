package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// fakePython installs the fake python3 printing testdata/py/<scenario>.out
// and the fake nvidia-smi with one idle GPU.
func fakePython(t *testing.T, scenario string) {
	t.Helper()
	fakeSMI(t, "idle", false)
	installFake(t, "fake-python3", "python3")
	abs, err := filepath.Abs(filepath.Join("testdata", "py", scenario+".out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_PY_SCENARIO", abs)
	t.Setenv("FAKE_PY_STDERR", "")
	t.Setenv("FAKE_PY_EXIT", "0")
	t.Setenv("FAKE_PY_RECORD", "")
}

var testConfig = []byte(`{"architectures": ["LlamaForCausalLM"], "hidden_size": 3072}`)

func TestRunSyntheticOK(t *testing.T) {
	fakePython(t, "ok")
	rec := t.TempDir()
	t.Setenv("FAKE_PY_RECORD", rec)
	job := memory.Job{Method: "lora", LoRARank: 32, SeqLen: 768, MicroBatch: 4, Dtype: "bf16"}
	run, err := RunSynthetic(context.Background(), SyntheticOptions{Config: testConfig, Job: job, Warmup: 1, Steps: 4, Device: 2, Probe: Options{Interval: fast}})
	if err != nil {
		t.Fatal(err)
	}
	r := run.Result
	if !r.OK || r.AllocatedPeakBytes != 7516192768 || r.ReservedPeakBytes != 8000000000 || r.Software.Torch != "2.5.1" || len(r.Phases) != 3 || r.Params.Trainable != 9175040 {
		t.Errorf("result not decoded as written: %+v", r)
	}
	// The script got the job and config as given and the step counts.
	args, _ := os.ReadFile(filepath.Join(rec, "args"))
	if !contains(string(args), "probe.py --config", "--warmup 1 --steps 4 --device 2") {
		t.Errorf("script arguments = %q", args)
	}
	var gotJob memory.Job
	raw, _ := os.ReadFile(filepath.Join(rec, "job.json"))
	if err := json.Unmarshal(raw, &gotJob); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(job, gotJob); diff != "" {
		t.Errorf("job the script read (-want +got):\n%s", diff)
	}
	if cfg, _ := os.ReadFile(filepath.Join(rec, "config.json")); !bytes.Equal(cfg, testConfig) {
		t.Errorf("config the script read = %q", cfg)
	}
	m := run.Measured()
	if m.AllocatedPeakBytes != r.AllocatedPeakBytes || m.DevicePeakBytes != 8589934592 || len(m.Components) != 5 {
		t.Errorf("Measured() = %+v", m)
	}
}

func TestRunSyntheticFailures(t *testing.T) {
	tests := []struct {
		scenario string
		exit     string
		stderr   string
		is       error
		want     []string
	}{
		{scenario: "missing-torch", exit: "3", is: ErrMissingModule, want: []string{"cannot import torch", "install PyTorch with CUDA support"}},
		{scenario: "missing-peft", exit: "3", is: ErrMissingModule, want: []string{"pip install peft"}},
		{scenario: "no-cuda", exit: "3", is: ErrNoCUDA, want: []string{"is_available() is False", "install a CUDA build of PyTorch"}},
		{scenario: "oom", exit: "3", is: ErrOOM, want: []string{"allocated peak 78.23 GiB", "Tried to allocate 2.00 GiB"}},
		{scenario: "malformed", want: []string{"probe JSON (stdout line 1)", "allocated_peak_bytes", "string"}},
		{scenario: "truncated", want: []string{"probe JSON (stdout line 1)", "unexpected EOF"}},
		{scenario: "reserved-below", want: []string{"reserved_peak_bytes 1000 is below allocated_peak_bytes 2000"}},
		{scenario: "wrong-schema", want: []string{`schema "gpumem-probe/9": want "gpumem-probe/1"`}},
		{
			scenario: "crash", exit: "1", is: ErrNoResult,
			stderr: "Traceback (most recent call last):\n  File \"probe.py\", line 1\nRuntimeError: CUDA error: an illegal memory access was encountered",
			want:   []string{"exited with status 1", "no result line", "  RuntimeError: CUDA error: an illegal memory access"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			fakePython(t, tt.scenario)
			if tt.exit != "" {
				t.Setenv("FAKE_PY_EXIT", tt.exit)
			}
			t.Setenv("FAKE_PY_STDERR", tt.stderr)
			run, err := RunSynthetic(context.Background(), SyntheticOptions{Config: testConfig, Probe: Options{Interval: fast}})
			if err == nil {
				t.Fatalf("want an error, got %+v", run.Result)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v: want it to wrap %v", err, tt.is)
			}
			if !contains(err.Error(), tt.want...) {
				t.Errorf("error %q: want it to contain %q", err, tt.want)
			}
			if tt.scenario == "oom" && run.Result.AllocatedPeakBytes != 84000000000 {
				t.Errorf("OOM result keeps the peak before the failure: got %v", run.Result.AllocatedPeakBytes)
			}
		})
	}
}

func TestRunSyntheticMissingPython(t *testing.T) {
	fakeSMI(t, "idle", false)
	t.Setenv("PATH", filepath.Dir(mustLookPath(t, "nvidia-smi")))
	_, err := RunSynthetic(context.Background(), SyntheticOptions{Config: testConfig})
	if !errors.Is(err, ErrNoPython) || !strings.Contains(err.Error(), "pip install torch") {
		t.Fatalf("error = %v, want ErrNoPython with install advice", err)
	}
	_, err = RunSynthetic(context.Background(), SyntheticOptions{Config: testConfig, Python: "python3.99"})
	if err == nil || !strings.Contains(err.Error(), "--python python3.99") {
		t.Fatalf("error = %v, want the --python value named", err)
	}
	if _, err := RunSynthetic(context.Background(), SyntheticOptions{}); err == nil || !strings.Contains(err.Error(), "no config.json") {
		t.Fatalf("error = %v, want a missing config named", err)
	}
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("%s not on PATH", name)
	return ""
}

func TestParseSyntheticOutputTakesLastResult(t *testing.T) {
	out := "{\"schema\":\"gpumem-probe/1\",\"ok\":false,\"error_kind\":\"exception\",\"error\":\"first\"}\nnoise\n" +
		"{\"schema\":\"gpumem-probe/1\",\"ok\":false,\"error_kind\":\"bad_job\",\"error\":\"second\"}\n"
	res, err := ParseSyntheticOutput([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != "second" {
		t.Errorf("got %q, want the last result line", res.Error)
	}
	if err := res.Err(); err == nil || !strings.Contains(err.Error(), "probe script failed (bad_job): second") {
		t.Errorf("Err() = %v", err)
	}
}

func TestParseSyntheticOutputRejects(t *testing.T) {
	tests := map[string]string{
		"no kind":         `{"schema":"gpumem-probe/1","ok":false}`,
		"negative comp":   `{"schema":"gpumem-probe/1","ok":true,"allocated_peak_bytes":1,"reserved_peak_bytes":1,"phases":[{"name":"forward"}],"components":[{"name":"weights","bytes":-1}]}`,
		"unnamed phase":   `{"schema":"gpumem-probe/1","ok":true,"allocated_peak_bytes":1,"reserved_peak_bytes":1,"phases":[{"name":""}]}`,
		"no phases":       `{"schema":"gpumem-probe/1","ok":true,"allocated_peak_bytes":1,"reserved_peak_bytes":1}`,
		"zero peak":       `{"schema":"gpumem-probe/1","ok":true,"phases":[{"name":"forward"}]}`,
		"float bytes":     `{"schema":"gpumem-probe/1","ok":true,"allocated_peak_bytes":1.5}`,
		"negative device": `{"schema":"gpumem-probe/1","ok":false,"error_kind":"oom","device_peak_bytes":-4}`,
	}
	for name, line := range tests {
		if _, err := ParseSyntheticOutput([]byte(line + "\n")); err == nil || !strings.Contains(err.Error(), "probe JSON (stdout line 1)") {
			t.Errorf("%s: error = %v, want the probe JSON line named", name, err)
		}
	}
}

func FuzzParseSyntheticOutput(f *testing.F) {
	for _, name := range []string{"ok", "oom", "malformed", "truncated"} {
		b, err := os.ReadFile(filepath.Join("testdata", "py", name+".out"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		res, err := ParseSyntheticOutput(in)
		if err != nil {
			return
		}
		if res.AllocatedPeakBytes < 0 || res.ReservedPeakBytes < 0 || (res.OK && res.ReservedPeakBytes < res.AllocatedPeakBytes) {
			t.Fatalf("accepted inconsistent peaks %+v", res)
		}
	})
}

// The script and the Go decoder must agree on the schema: every JSON key
// the decoder reads is written by the script.
func TestScriptWritesSchemaKeys(t *testing.T) {
	script := string(SyntheticScript)
	keys := []string{SyntheticSchema, "allocated_peak_bytes", "reserved_peak_bytes", "device_peak_bytes", "device_source",
		"allocated_end_bytes", "device_bytes", "error_kind", "missing_module", "no_cuda", "\"oom\"", "total_bytes", "capability",
		"\"weights\"", "\"gradients\"", "\"optimizer_states\"", "\"activations\"", "\"cuda_context\"", "\"forward\"", "\"backward\"",
		"\"step\"", "\"prefill\"", "\"decode\"", "\"trainable\"", "\"warmup\"", "\"measured\"", "\"transformers\"", "\"alloc_conf\"",
		"\"loss\"", "\"cuda_free_bytes\"", "\"cuda_total_bytes\"", "\"accelerate\"", "\"driver\""}
	for _, k := range keys {
		if !strings.Contains(script, k) {
			t.Errorf("probe.py does not mention %s", k)
		}
	}
	// Every job field the script reads exists in memory.Job's JSON.
	for _, field := range []string{"mode", "dtype", "compute_dtype", "optimizer", "per_device_batch", "grad_accum", "seq_len",
		"attn", "grad_checkpoint", "method", "lora_rank", "lora_alpha", "lora_target_modules", "lora_dropout", "peft_variant",
		"adapter_dtype", "quant_type", "double_quant", "trainable", "images_per_sample", "image_size", "batch", "prompt_len", "gen_len",
		"torch_compile", "no_kv_cache"} {
		if !strings.Contains(script, `job.get("`+field+`")`) && !strings.Contains(script, `job["`+field+`"]`) {
			t.Errorf("test lists %q but probe.py does not read it", field)
		}
		if !jobHasTag(field) {
			t.Errorf("probe.py reads %q, which is not a memory.Job JSON key", field)
		}
	}
}

func TestCompare(t *testing.T) {
	est := memory.PerGPU{
		AllocatedPeakBytes: 8 * units.GiB, ReservedPeakBytes: 9 * units.GiB, DevicePeakBytes: 0,
		Phases: []memory.Phase{{Name: "forward", Bytes: 6 * units.GiB}, {Name: "loss", Bytes: 7 * units.GiB}, {Name: "backward", Bytes: 8 * units.GiB}},
		Components: []memory.Component{
			{Name: "weights", Bytes: 6 * units.GiB}, {Name: "lora_weights", Bytes: units.GiB},
			{Name: "activations", Bytes: units.GiB}, {Name: "loss", Bytes: units.GiB},
		},
	}
	m := Measured{
		AllocatedPeakBytes: 10 * units.GiB, ReservedPeakBytes: 9 * units.GiB, DevicePeakBytes: 11 * units.GiB,
		Phases:     []MeasuredPhase{{Name: "forward", AllocatedPeakBytes: 7 * units.GiB}, {Name: "step", AllocatedPeakBytes: 5 * units.GiB}},
		Components: []MeasuredComponent{{Name: "weights", Bytes: 8 * units.GiB}, {Name: "activations", Bytes: 4 * units.GiB}, {Name: "gradients", Bytes: units.GiB}},
	}
	want := []ComparisonRow{
		{Kind: RowPeak, Name: "allocated", EstimatedBytes: 8 * units.GiB, MeasuredBytes: 10 * units.GiB, ErrorPct: -20},
		{Kind: RowPeak, Name: "reserved", EstimatedBytes: 9 * units.GiB, MeasuredBytes: 9 * units.GiB, ErrorPct: 0},
		// forward is compared with the larger of the estimate's forward and loss phases.
		{Kind: RowPhase, Name: "forward", EstimatedBytes: 7 * units.GiB, MeasuredBytes: 7 * units.GiB, ErrorPct: 0},
		{Kind: RowComponent, Name: "weights", EstimatedBytes: 7 * units.GiB, MeasuredBytes: 8 * units.GiB, ErrorPct: -12.5},
		// The estimate's loss row (a peak with transients) is not added to activations.
		{Kind: RowComponent, Name: "activations", EstimatedBytes: units.GiB, MeasuredBytes: 4 * units.GiB, ErrorPct: -75},
	}
	if diff := cmp.Diff(want, Compare(est, m).Rows); diff != "" {
		t.Errorf("Compare (-want +got):\n%s", diff)
	}

	// A measurement with a loss phase of its own compares forward with
	// forward and loss with loss; backward covers backward_end.
	est.Phases = append(est.Phases, memory.Phase{Name: "backward_end", Bytes: 9 * units.GiB})
	m = Measured{Phases: []MeasuredPhase{
		{Name: "forward", AllocatedPeakBytes: 6 * units.GiB}, {Name: "loss", AllocatedPeakBytes: 8 * units.GiB},
		{Name: "backward", AllocatedPeakBytes: 9 * units.GiB},
	}}
	want = []ComparisonRow{
		{Kind: RowPhase, Name: "forward", EstimatedBytes: 6 * units.GiB, MeasuredBytes: 6 * units.GiB, ErrorPct: 0},
		{Kind: RowPhase, Name: "loss", EstimatedBytes: 7 * units.GiB, MeasuredBytes: 8 * units.GiB, ErrorPct: -12.5},
		{Kind: RowPhase, Name: "backward", EstimatedBytes: 9 * units.GiB, MeasuredBytes: 9 * units.GiB, ErrorPct: 0},
	}
	if diff := cmp.Diff(want, Compare(est, m).Rows); diff != "" {
		t.Errorf("Compare with a measured loss phase (-want +got):\n%s", diff)
	}
}

// jobHasTag reports whether memory.Job has a field with JSON key name.
func jobHasTag(name string) bool {
	typ := reflect.TypeOf(memory.Job{})
	for i := 0; i < typ.NumField(); i++ {
		tag := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]
		if tag == name {
			return true
		}
	}
	return false
}

func TestWriteSynthetic(t *testing.T) {
	dir := t.TempDir()
	job := memory.Job{SeqLen: 512, Method: "lora"}
	args, err := WriteSynthetic(dir, SyntheticOptions{Config: testConfig, Job: job, Steps: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := "probe.py --config config.json --job job.json --warmup 2 --steps 5 --device 0"
	if got := strings.Join(args, " "); got != want {
		t.Errorf("args %q, want %q", got, want)
	}
	script, _ := os.ReadFile(filepath.Join(dir, "probe.py"))
	cfg, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	if !bytes.Equal(script, SyntheticScript) || !bytes.Equal(cfg, testConfig) {
		t.Error("files differ from the embedded script and the config")
	}
	if _, err := WriteSynthetic(filepath.Join(dir, "missing", "dir"), SyntheticOptions{Config: testConfig}); err == nil {
		t.Error("missing directory: want an error")
	}
}
