package web

import (
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
)

func TestJobFromQuery(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		query string
		want  memory.Job
	}{
		{"seq_len=4096&per_device_batch=2", memory.Job{SeqLen: 4096, MicroBatch: 2}},
		{"seq-len=128&grad-accum=4", memory.Job{SeqLen: 128, GradAccum: 4}},
		{"mode=inference&batch=8&prompt_len=100&gen_len=0", memory.Job{Mode: memory.Inference, Batch: 8, PromptLen: 100}},
		{"lora_target_modules=q_proj,v_proj&lora_target_modules=o_proj", memory.Job{LoRATargets: []string{"q_proj", "v_proj", "o_proj"}}},
		{"packed=false&double_quant=true", memory.Job{Packed: &no, DoubleQuant: &yes}},
		{"torch_compile&sp=1&no_kv_cache=off", memory.Job{Compile: true, SP: true}},
		{"gpu_memory_utilization=0.85&lora_dropout=0.05", memory.Job{GPUMemoryUtilization: 0.85, LoRADropout: 0.05}},
		{"gpu_memory_bytes=85520809984&trainable_params=1000", memory.Job{GPUMemory: 85520809984, TrainableParams: 1000}},
		{"constants.fragmentation=0.1&constants.cuda_context_mib=400", memory.Job{Constants: map[string]float64{"fragmentation": 0.1, "cuda_context_mib": 400}}},
		{"model=llama3-8b&seq_len=2", memory.Job{SeqLen: 2}},
		{"seq_len=1&seq_len=2", memory.Job{SeqLen: 2}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := jobFromQuery(q, "model")
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("job (-want +got):\n%s", d)
			}
		})
	}
}

func TestJobFromQueryErrors(t *testing.T) {
	for _, tc := range []struct{ query, field string }{
		{"seq_len=4k", "seq_len"},
		{"seq_len=1e3", "seq_len"},
		{"per_device_batch=99999999999999999999", "per_device_batch"},
		{"lora_dropout=nan", "lora_dropout"},
		{"gpu_memory_utilization=inf", "gpu_memory_utilization"},
		{"packed=maybe", "packed"},
		{"constants.x=abc", "constants.x"},
		{"seqlen=1", "seqlen"},
		{"model=x", "model"}, // not skipped unless the caller says so
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			_, err := jobFromQuery(q)
			var e *Error
			if !errors.As(err, &e) || e.Field != tc.field || e.status != 400 {
				t.Errorf("error %v, want a 400 about %s", err, tc.field)
			}
		})
	}
}

// TestQueryCoversJob makes sure every job option can be given in a query
// (the page's shareable links carry them there).
func TestQueryCoversJob(t *testing.T) {
	for _, k := range memory.JobKeys() {
		key := k.Name
		if key == "constants" {
			continue // given as constants.NAME
		}
		val := "1"
		if key == "stack" {
			val = "torch=2.4"
		}
		q := url.Values{key: {val}}
		if _, err := jobFromQuery(q); err != nil {
			// String fields take "1" as a value too; only a type the query cannot express fails.
			t.Errorf("%s=%s: %v", key, val, err)
		}
	}
}

// TestFieldOf checks that an error's field is the key of the field error
// it wraps, "model" for the model's errors, and never read from the
// message's words.
func TestFieldOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{memory.FieldErrorf("tp", "{tp=%d} does not divide num_attention_heads 32 of x", 3), "tp"},
		{fmt.Errorf("inference estimate: %w", memory.FieldErrorf("kv_cache_dtype", "{kv_cache_dtype}: unknown dtype")), "kv_cache_dtype"},
		{fmt.Errorf("x: %w", memory.FieldErrorf("batch", "{batch=%d}: must not be negative", -1)), "batch"},
		{fmt.Errorf("load x: %w", model.ErrNotFound), "model"},
		{fmt.Errorf("load x: %w", &model.ConfigError{File: "config.json", Key: "hidden_size", Want: "a positive integer"}), "model"},
		{errors.New("--tp 3 does not divide num_attention_heads 32 of x"), ""},
		{errors.New("something went wrong"), ""},
	} {
		if got := fieldOf(tc.err); got != tc.want {
			t.Errorf("fieldOf(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
