package trainconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpumem/gpumem/memory"
)

// fuzzSeeds adds every example config to a fuzz corpus.
func fuzzSeeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.*")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"zero_optimization": {"stage": "auto", "reduce_bucket_size": -1e300}, "fp16": {"enabled": "maybe"}}`))
	f.Add([]byte("model:\n  _component_: [1]\ndataset: [{packed: 3}]\n"))
	f.Add([]byte("fsdp: [offload, 7]\nfsdp_config: {fsdp_version: 9}\nper_device_train_batch_size: .inf\n"))
}

// checkConfig asserts what holds for any parsed config: keys name
// memory.Job fields, Apply copies no more than them, warnings are
// produced without panicking.
func checkConfig(t *testing.T, c *Config) {
	t.Helper()
	for _, k := range c.Keys {
		if _, ok := memory.LookupJobKey(k); !ok {
			t.Errorf("key %q is not a memory.Job field", k)
		}
	}
	var j memory.Job
	if done := c.Apply(&j, nil); len(done) != len(c.Keys) {
		t.Errorf("applied %d of %d keys", len(done), len(c.Keys))
	}
	_ = c.Warnings()
	if j.MicroBatch < 0 || j.GradAccum < 0 || j.SeqLen < 0 || j.NumGPUs < 0 || j.ZeRO < 0 || j.ZeRO > 3 ||
		j.ReduceBucketSize < 0 || j.LoRADropout < 0 || j.LoRADropout >= 1 {
		t.Errorf("out-of-range value in %+v", j)
	}
}

func FuzzParse(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz")
		if err != nil {
			return
		}
		checkConfig(t, c)
	})
}

func FuzzParseDeepSpeed(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseDeepSpeed(data, "fuzz")
		if err != nil {
			return
		}
		checkConfig(t, c)
	})
}

func FuzzParseEachFormat(f *testing.F) {
	fuzzSeeds(f)
	formats := []Format{TrainingArgs, Accelerate, LLaMAFactory, Axolotl, Torchtune}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range formats {
			c, err := ParseAs(data, "fuzz", format)
			if err != nil {
				return
			}
			checkConfig(t, c)
		}
	})
}
