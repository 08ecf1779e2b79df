package memory

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/units"
)

// resolvedModels are the models the resolved-job tests run every golden
// case on: dense, MoE, encoder-decoder and vision-language.
var resolvedModels = []string{"meta-llama/Llama-2-7b-hf", "Qwen/Qwen3-30B-A3B", "google-t5/t5-base", "Qwen/Qwen2-VL-7B-Instruct"}

// TestKeySetHoldsEveryKey checks that a KeySet has room for every job
// setting, and that its JSON form round-trips in field order.
func TestKeySetHoldsEveryKey(t *testing.T) {
	keys := JobKeys()
	if n := keys[len(keys)-1].index; n >= 64*keySetWords {
		t.Fatalf("job field %d does not fit a KeySet of %d words", n, keySetWords)
	}
	var s KeySet
	if !s.IsZero() || s.Keys() != nil {
		t.Fatalf("zero KeySet: %v", s.Keys())
	}
	s.add(keySeqLen)
	s.add(keyOptimizer)
	s.add(keyDecideOn)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `["optimizer","seq_len","decide_on"]`; got != want {
		t.Errorf("JSON %s, want %s (field order)", got, want)
	}
	var back KeySet
	if err := json.Unmarshal(b, &back); err != nil || back != s {
		t.Errorf("round trip: %v, %v", back.Keys(), err)
	}
	if err := json.Unmarshal([]byte(`["seq_len","bogus"]`), &back); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown key: err %v, want one naming it", err)
	}
	if !s.Has("seq_len") || s.Has("tp") || s.Has("nonsense") {
		t.Errorf("Has: %v", s.Keys())
	}
}

// TestResolvedJob checks that every result states its job resolved: a
// default estimate's job names the weights, optimizer, attention,
// checkpointing, sequence, batch, framework and layout it assumed, and
// lists them as assumed.
func TestResolvedJob(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	r := estimateOK(t, m, Job{})
	j := r.Job
	want := Job{Mode: Train, Dtype: "bf16", MasterWeights: "none", ComputeDtype: "bf16", Optimizer: "adamw_torch",
		MicroBatch: 1, GradAccum: 1, SeqLen: DefaultSeqLen, Attention: "sdpa", GradCheckpoint: "none", FusedLoss: "none",
		Framework: FrameworkHF, Method: MethodFull, NumGPUs: 1, Nodes: 1, DeviceMap: "none"}
	got := j
	got.Packed, got.LowCPUMemUsage = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("default job resolved to\n%+v\nwant\n%+v", got, want)
	}
	if j.Packed == nil || !*j.Packed || j.LowCPUMemUsage == nil || !*j.LowCPUMemUsage {
		t.Errorf("packed %v, low_cpu_mem_usage %v: want both true", j.Packed, j.LowCPUMemUsage)
	}
	for _, k := range []string{"dtype", "optimizer", "attn", "grad_checkpoint", "seq_len", "per_device_batch", "framework", "num_gpus", "packed", "device_map"} {
		if !r.Assumed.Has(k) {
			t.Errorf("%s not listed as assumed: %v", k, r.Assumed.Keys())
		}
	}
	// What the job states is not assumed, and keeps its spelling.
	r = estimateOK(t, m, Job{SeqLen: 512, Optimizer: "adamw", Attention: "flash_attention_2"})
	if r.Assumed.Has("seq_len") || r.Assumed.Has("optimizer") || r.Assumed.Has("attn") || r.Job.Optimizer != "adamw" || r.Job.Attention != "flash_attention_2" {
		t.Errorf("stated settings: job %+v, assumed %v", r.Job, r.Assumed.Keys())
	}
	// A multi-GPU job states its engine and layout.
	r = estimateOK(t, m, Job{SeqLen: 512, NumGPUs: 4})
	if r.Job.Engine != EngineDDP || r.Job.DP != 4 || r.Job.TP != 1 || !r.Assumed.Has("engine") || !r.Assumed.Has("dp") {
		t.Errorf("4 GPUs: job engine %q dp %d tp %d, assumed %v", r.Job.Engine, r.Job.DP, r.Job.TP, r.Assumed.Keys())
	}
	// Inference states its batch, prompt, dtypes, attention and engine.
	r = estimateOK(t, m, Job{Mode: Inference})
	if r.Job.Batch != 1 || r.Job.PromptLen != DefaultSeqLen || r.Job.KVCacheDtype != "bf16" || r.Job.InferenceEngine != engineHF ||
		r.Job.Attention != inferSDPA || !r.Assumed.Has("prompt_len") || !r.Assumed.Has("kv_cache_dtype") {
		t.Errorf("inference job %+v, assumed %v", r.Job, r.Assumed.Keys())
	}
	// Serving states vLLM's settings.
	r = estimateOK(t, m, Job{Mode: Serving, GPUMemory: 80 * units.GiB})
	if r.Job.MaxModelLen != r.Serving.MaxModelLen || r.Job.GPUMemoryUtilization != 0.9 || r.Job.BlockSize != r.Serving.BlockSize ||
		r.Job.InferenceEngine != engineVLLM || r.Job.DecideOn != DecideUpper || !r.Assumed.Has("gpu_memory_utilization") || !r.Assumed.Has("decide_on") {
		t.Errorf("serving job %+v, assumed %v", r.Job, r.Assumed.Keys())
	}
}

// TestResolvedJobReestimates estimates every golden job, then its
// resolved job: the figures must not move (the resolved job is what was
// estimated), and the second job must resolve to itself.
func TestResolvedJobReestimates(t *testing.T) {
	for _, id := range resolvedModels {
		m := catalogModel(t, id)
		for _, c := range goldenCases() {
			r, err := Estimate(m, c.job)
			if err != nil {
				continue
			}
			r2, err := Estimate(m, r.Job)
			if err != nil {
				t.Errorf("%s %s: resolved job fails: %v\n%+v", id, c.name, err, r.Job)
				continue
			}
			p, p2 := r.PerGPU, r2.PerGPU
			if p.AllocatedPeakBytes != p2.AllocatedPeakBytes || p.ReservedPeakBytes != p2.ReservedPeakBytes ||
				p.DevicePeakBytes != p2.DevicePeakBytes || p.PeakPhase != p2.PeakPhase || !slices.Equal(p.Phases, p2.Phases) {
				t.Errorf("%s %s: resolved job moves the peaks: %d/%d/%d at %s → %d/%d/%d at %s", id, c.name,
					p.AllocatedPeakBytes, p.ReservedPeakBytes, p.DevicePeakBytes, p.PeakPhase,
					p2.AllocatedPeakBytes, p2.ReservedPeakBytes, p2.DevicePeakBytes, p2.PeakPhase)
			}
			if !reflect.DeepEqual(r2.Job, r.Job) {
				t.Errorf("%s %s: the resolved job resolves to another:\n%+v\n%+v", id, c.name, r.Job, r2.Job)
			}
			if !r2.Assumed.IsZero() {
				t.Errorf("%s %s: the resolved job still assumes %v", id, c.name, r2.Assumed.Keys())
			}
			if (r.Loading == nil) != (r2.Loading == nil) || r.Loading != nil && *r.Loading != *r2.Loading {
				t.Errorf("%s %s: loading %+v → %+v", id, c.name, r.Loading, r2.Loading)
			}
		}
	}
}

// TestPeakHighMatchesBand checks the upper edge of the band that
// Estimator.Peak computes without the breakdown against the band of the
// full estimate, to the byte, and the loading peak likewise.
func TestPeakHighMatchesBand(t *testing.T) {
	for _, id := range resolvedModels {
		m := catalogModel(t, id)
		e := NewEstimator(m)
		for _, c := range goldenCases() {
			if c.job.Mode != "" && c.job.Mode != Train {
				continue
			}
			job := c.job
			r, err := Estimate(m, job)
			if err != nil {
				continue
			}
			p, err := e.Peak(&job)
			if err != nil {
				t.Errorf("%s %s: Peak: %v", id, c.name, err)
				continue
			}
			if p.HighBytes != r.PerGPU.Band.HighBytes || p.DeviceBytes != r.PerGPU.DevicePeakBytes {
				t.Errorf("%s %s: Peak high %d device %d, Estimate band high %d device %d", id, c.name,
					p.HighBytes, p.DeviceBytes, r.PerGPU.Band.HighBytes, r.PerGPU.DevicePeakBytes)
			}
			if p.LoadingBytes != r.Loading.DeviceBytes {
				t.Errorf("%s %s: Peak loading %d, Estimate %d", id, c.name, p.LoadingBytes, r.Loading.DeviceBytes)
			}
		}
	}
}

// TestDefaultsDocumented checks that docs/DEFAULTS.md lists every
// setting an estimate can assume: the union of the assumed keys of every
// golden job on the resolved-job models, and of the loading switches of
// each engine.
func TestDefaultsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/DEFAULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	jobs := []Job{{Engine: "fsdp", NumGPUs: 2}, {Engine: "deepspeed", ZeRO: 3, NumGPUs: 2}, {Mode: Serving, GPUMemory: 80 * units.GiB}}
	for _, c := range goldenCases() {
		jobs = append(jobs, c.job)
	}
	for _, id := range resolvedModels {
		m := catalogModel(t, id)
		for _, j := range jobs {
			if r, err := Estimate(m, j); err == nil {
				for _, k := range r.Assumed.Keys() {
					seen[k] = true
				}
			}
		}
	}
	if len(seen) < 30 {
		t.Fatalf("only %d assumed keys seen: %v", len(seen), seen)
	}
	for k := range seen {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("docs/DEFAULTS.md does not list %s", k)
		}
	}
}
