package jobfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpumem/gpumem/memory"
)

// TestKeySpellings checks the spellings a key may have: as written, in
// another case, with dashes; null leaves a key unset; two spellings of
// one key are a problem.
func TestKeySpellings(t *testing.T) {
	tr := true
	for _, tc := range []struct {
		name, src string
		want      memory.Job
		keys      []string
		problem   string // substring of the error, "" for none
	}{
		{"as written", `{"seq_len": 512, "per_device_batch": 2}`,
			memory.Job{Mode: memory.Train, SeqLen: 512, MicroBatch: 2}, []string{"per_device_batch", "seq_len"}, ""},
		{"any case", `{"Seq_Len": 512, "PACKED": true, "Mode": "inference", "Batch": 2}`,
			memory.Job{Mode: memory.Inference, SeqLen: 512, Packed: &tr, Batch: 2}, []string{"batch", "mode", "packed", "seq_len"}, ""},
		{"dashes", `{"seq-len": 512, "per-device-batch": 2, "gpu-memory": "1GiB"}`,
			memory.Job{Mode: memory.Train, SeqLen: 512, MicroBatch: 2, GPUMemory: 1 << 30}, []string{"gpu_memory_bytes", "per_device_batch", "seq_len"}, ""},
		{"null is unset", `{"seq_len": null, "packed": null, "lora_target_modules": null, "model": null, "per_device_batch": 2}`,
			memory.Job{Mode: memory.Train, MicroBatch: 2}, []string{"per_device_batch"}, ""},
		{"two spellings", `{"seq_len": 512, "seq-len": 1024}`, memory.Job{}, nil, `seq_len is given twice (also as "seq-len")`},
		{"unknown stays unknown", `{"seq_length": 512}`, memory.Job{}, nil, `seq_length: unknown key (did you mean "seq_len"?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.src), "job.json")
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("err = %v, want one containing %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, f.Job); d != "" {
				t.Errorf("job (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.keys, f.Keys); d != "" {
				t.Errorf("keys (-want +got):\n%s", d)
			}
		})
	}
}

// TestParseJSON checks the request form of Parse: JSON only, extra keys
// handed back, the same problems as a file.
func TestParseJSON(t *testing.T) {
	f, extra, err := ParseJSON([]byte(`{"model": "llama3-8b", "GPUs": ["h100"], "seq_len": 512}`), "request body", "gpus")
	if err != nil {
		t.Fatal(err)
	}
	if f.Model != "llama3-8b" || f.Job.SeqLen != 512 || f.Name != "request body" {
		t.Errorf("file %+v", f)
	}
	if d := cmp.Diff(map[string]any{"gpus": []any{"h100"}}, extra); d != "" {
		t.Errorf("extra (-want +got):\n%s", d)
	}
	if _, extra, err := ParseJSON([]byte(`{"model": "gpt2"}`), "b", "gpus"); err != nil || extra != nil {
		t.Errorf("no extra keys: %v, %v", extra, err)
	}

	// Without "gpus" among the extra keys it is an unknown key.
	src := []byte(`{"model": "llama3-8b", "gpus": ["h100"], "per_device_batch": 0, "trainable_params": "1.2M"}`)
	_, _, err = ParseJSON(src, "request body")
	var je *Error
	if !errors.As(err, &je) {
		t.Fatalf("err = %v, want *Error", err)
	}
	_, ferr := Parse(src, "request body.json")
	var fe *Error
	if !errors.As(ferr, &fe) {
		t.Fatalf("Parse err = %v", ferr)
	}
	if d := cmp.Diff(fe.Problems, je.Problems); d != "" {
		t.Errorf("problems of ParseJSON and Parse differ (-Parse +ParseJSON):\n%s", d)
	}
	if len(je.Problems) != 2 || je.Problems[0].Key != "gpus" || je.Problems[1].Key != "per_device_batch" {
		t.Errorf("problems %v, want gpus and per_device_batch", je.Problems)
	}

	// YAML is not a request body.
	if _, _, err := ParseJSON([]byte("model: gpt2\n"), "request body"); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("YAML body: err = %v", err)
	}

	// The calculator layout is read too.
	f, _, err = ParseJSON([]byte(calcFile), "request body")
	if err != nil || f.Layout != LayoutCalculator || f.Shape == nil {
		t.Errorf("calculator body: %+v, %v", f, err)
	}
}

// TestTrainBatchNeedsInference checks that "batch", the inference batch,
// is refused in a training job whether the mode is written or default.
func TestTrainBatchNeedsInference(t *testing.T) {
	for _, src := range []string{`{"batch": 4}`, `{"mode": "train", "batch": 4}`} {
		_, err := Parse([]byte(src), "job.json")
		if err == nil || !strings.Contains(err.Error(), "batch: is the inference batch") {
			t.Errorf("%s: err = %v", src, err)
		}
	}
	if _, err := Parse([]byte(`{"mode": "serve", "batch": 4}`), "job.json"); err != nil {
		t.Errorf("serving batch: %v", err)
	}
}
