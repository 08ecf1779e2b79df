package memory

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

var update = flag.Bool("update", false, "update the golden files in testdata/golden")

// goldenDir holds one file per catalog model: the JSON of every golden
// job's result (or its error) on that model.
const goldenDir = "testdata/golden"

// goldenCase is one job of the golden corpus.
type goldenCase struct {
	name string
	job  Job
}

// goldenRecord is what a golden file stores for one case.
type goldenRecord struct {
	Case   string  `json:"case"`
	Error  string  `json:"error,omitempty"`
	Result *Result `json:"result,omitempty"`
}

// goldenCases covers the training, inference and serving paths: methods,
// precisions, optimizers, checkpointing, attention, frameworks, engines
// and parallel layouts, explanations, constants and GPU facts.
func goldenCases() []goldenCase {
	yes, no := true, false
	return []goldenCase{
		{"train-defaults", Job{}},
		{"train-full-bf16-flash-ckpt", Job{SeqLen: 2048, MicroBatch: 2, GradCheckpoint: "full", Attention: "flash", AllowLong: true}},
		{"train-amp-eager-fused-accum", Job{Dtype: "fp32", ComputeDtype: "bf16", Attention: "eager", Optimizer: "adamw_torch_fused",
			SeqLen: 512, MicroBatch: 4, GradAccum: 4, AllowLong: true, GPUComputeCapability: 90}},
		{"train-mixed-torchtune-8bit-selective", Job{Dtype: "bf16", MasterWeights: "fp32", Optimizer: "adamw_8bit", GradCheckpoint: "selective",
			Framework: "torchtune", FusedLoss: "chunked", Compile: true, SeqLen: 1024, AllowLong: true, Packed: &no}},
		{"train-lora-paged-explain", Job{Method: "lora", LoRARank: 64, LoRAAlpha: 128, LoRATargets: []string{"all-linear"}, LoRADropout: 0.05,
			Optimizer: "paged_adamw_8bit", SeqLen: 1024, MicroBatch: 2, AllowLong: true, GPUMemory: 24 * units.GiB, Explain: true,
			Constants: map[string]float64{"fragmentation": 0.08, "activation_scale": 1.1}}},
		{"train-dora-liger", Job{Method: "lora", PEFTVariant: "dora", LoRARank: 8, FusedLoss: "liger", Attention: "sdpa",
			GradCheckpoint: "every-2", SeqLen: 768, AllowLong: true, Optimizer: "adafactor"}},
		{"train-qlora-nf4", Job{Method: "qlora", QuantType: "nf4", DoubleQuant: &yes, LoRARank: 16, GradCheckpoint: "full",
			Software: []string{"bnb<0.43.2"}, Optimizer: "paged_adamw_32bit", SeqLen: 512, MicroBatch: 2, AllowLong: true, Packed: &no}},
		{"train-frozen-litgpt-torch1", Job{Trainable: []string{"top:2"}, Optimizer: "sgd_momentum", Framework: "litgpt",
			Software: []string{"torch1"}, Dtype: "fp16", SeqLen: 256, AllowLong: true, Attention: "eager"}},
		{"train-zero3-offload-explain", Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 16, Nodes: 2, OffloadOptimizer: "cpu",
			SeqLen: 2048, MicroBatch: 1, GradCheckpoint: "full", Attention: "flash", AllowLong: true, Explain: true, GPUMemory: 80 * units.GiB}},
		{"train-zero2-muon", Job{Engine: "deepspeed", ZeRO: 2, NumGPUs: 4, Optimizer: "muon", SeqLen: 1024, AllowLong: true, Framework: "hf"}},
		{"train-fsdp2-torchtitan", Job{Engine: "fsdp2", NumGPUs: 8, Framework: "torchtitan", Compile: true, ActivationOffload: true,
			GradCheckpoint: "selective", SeqLen: 4096, AllowLong: true, GPUComputeCapability: 90}},
		{"train-fsdp-hybrid", Job{Engine: "fsdp", FSDPStrategy: "hybrid_shard", NumGPUs: 16, Nodes: 2, SeqLen: 1024, AllowLong: true}},
		{"train-megatron-tp-pp", Job{Engine: "megatron", NumGPUs: 8, TP: 2, PP: 2, SP: true, SeqLen: 2048, MicroBatch: 1, GradAccum: 8,
			AllowLong: true, GradCheckpoint: "selective"}},
		{"train-ddp-bucket-view-opt-in-bwd", Job{Engine: "ddp", NumGPUs: 4, GradientAsBucketView: true, OptimizerInBwd: true,
			SeqLen: 512, AllowLong: true, TaskHead: "sequence_classification"}},
		{"train-vlm-images", Job{ImagesPerSample: 2, SeqLen: 512, AllowLong: true, Method: "lora"}},
		{"train-deepspeed-pp4", Job{Engine: "deepspeed", ZeRO: 1, NumGPUs: 8, PP: 4, GradAccum: 16, SeqLen: 1024, AllowLong: true}},
		{"train-fsdp2-count-only", Job{Method: "frozen", TrainableParams: 1000000, Engine: "fsdp2", NumGPUs: 2, SeqLen: 512, AllowLong: true}},
		{"train-lora-modules-to-save", Job{Method: "lora", LoRATargets: []string{"all-linear"}, Trainable: []string{"lm_head", "embedding"},
			SeqLen: 512, AllowLong: true, Optimizer: "adamw_torch"}},
		{"train-galore-amp-sdpa-unpacked", Job{Dtype: "fp32", Optimizer: "galore_adamw", Attention: "sdpa", Packed: &no, SeqLen: 1024,
			AllowLong: true, Framework: "hf"}},
		{"train-peft-ia3", Job{Method: "ia3", SeqLen: 512, AllowLong: true}},
		{"train-peft-loha-explain", Job{Method: "lora", PEFTVariant: "loha", LoRARank: 8, SeqLen: 512, AllowLong: true, Explain: true}},
		{"train-prefix-tuning-eager", Job{Method: "prefix-tuning", NumVirtualTokens: 16, Attention: "eager", SeqLen: 256, MicroBatch: 2,
			Packed: &no, AllowLong: true}},
		{"train-qlora-fsdp-sharded", Job{Method: "qlora", Engine: "fsdp", NumGPUs: 4, SeqLen: 1024, GradCheckpoint: "full",
			LoRATargets: []string{"all-linear"}, AllowLong: true}},
		{"train-torchao-8bit-float8", Job{Optimizer: "adamw_torch_8bit", Float8: "tensorwise", Float8AllGather: true, Engine: "fsdp2",
			NumGPUs: 8, Framework: "torchtitan", SeqLen: 2048, GradCheckpoint: "full", AllowLong: true, GPUComputeCapability: 90}},
		{"infer-hf-fp8-kv-explain", Job{Mode: Inference, Batch: 4, PromptLen: 1024, GenLen: 256, KVCacheDtype: "fp8", Explain: true}},
		{"infer-eager-int4", Job{Mode: Inference, Batch: 8, PromptLen: 2048, GenLen: 512, Attention: "eager", Dtype: "int4",
			Software: []string{"transformers<4.45"}}},
		{"infer-no-kv-tp", Job{Mode: Inference, Batch: 2, PromptLen: 512, NoKVCache: true, TP: 2, GPUComputeCapability: 80}},
		{"infer-pp2-prefill-only", Job{Mode: Inference, Batch: 2, PromptLen: 512, PP: 2}},
		{"infer-legacy-cache-sdpa", Job{Mode: Inference, Batch: 3, PromptLen: 300, GenLen: 40, Attention: "sdpa",
			Software: []string{"transformers<4.36"}}},
		{"infer-nf4", Job{Mode: Inference, Batch: 2, PromptLen: 128, GenLen: 16, Dtype: "nf4"}},
		{"infer-nf4-images", Job{Mode: Inference, Batch: 2, PromptLen: 128, GenLen: 16, Dtype: "nf4", ImagesPerSample: 2}},
		{"serve-vllm", Job{Mode: Serving, MaxModelLen: 4096, GPU: "H100-SXM", GPUMemory: 80 * units.GiB, GPUComputeCapability: 90,
			CUDAGraphs: true, GPUMemoryUtilization: 0.9}},
		{"serve-vllm-tp-fp8", Job{Mode: Serving, MaxModelLen: 8192, TP: 2, KVCacheDtype: "fp8", GPUMemory: 40 * units.GiB,
			MaxNumSeqs: 64, BlockSize: 32, Software: []string{"vllm<0.8"}, AllowLong: true}},
	}
}

// TestGolden runs Estimate over every catalog model and the golden jobs
// and compares the JSON of each result, byte for byte, with
// testdata/golden (go test ./memory -update rewrites it).
func TestGolden(t *testing.T) {
	entries := model.Catalog()
	if len(entries) == 0 {
		t.Fatal("empty model catalog")
	}
	want := map[string]bool{}
	for _, e := range entries {
		name := strings.ReplaceAll(e.ID, "/", "__") + ".json"
		want[name] = true
		t.Run(e.ID, func(t *testing.T) {
			got := goldenRun(t, e.ID)
			path := filepath.Join(goldenDir, name)
			if *update {
				if err := os.MkdirAll(goldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			old, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./memory -run TestGolden -update to create it)", err)
			}
			if !bytes.Equal(got, old) {
				t.Errorf("%s differs from the golden file:\n%s", e.ID, firstDiff(old, got))
			}
		})
	}
	files, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !want[f.Name()] && !*update {
			t.Errorf("%s/%s belongs to no catalog model", goldenDir, f.Name())
		}
	}
}

// goldenRun estimates every golden case on one catalog model, each on a
// freshly loaded model, and checks that estimating the cases in turn on
// one shared model gives the same answers (no state kept between calls).
func goldenRun(t *testing.T, id string) []byte {
	t.Helper()
	fresh := goldenJSON(t, func() *model.Model { return catalogModel(t, id) })
	shared := catalogModel(t, id)
	if again := goldenJSON(t, func() *model.Model { return shared }); !bytes.Equal(fresh, again) {
		t.Errorf("%s: estimates on a reused model differ from fresh ones:\n%s", id, firstDiff(fresh, again))
	}
	// One Estimator for all the cases, twice over: reusing its memory
	// must not change an answer, and a clone must survive the next call.
	e := NewEstimator(shared)
	for pass := range 2 {
		if got := goldenRender(t, func(j *Job) (*Result, error) {
			r, err := e.Estimate(j)
			if err != nil {
				return nil, err
			}
			c := r.Clone()
			return &c, nil
		}); !bytes.Equal(fresh, got) {
			t.Errorf("%s: Estimator pass %d differs from Estimate:\n%s", id, pass+1, firstDiff(fresh, got))
		}
	}
	return fresh
}

// goldenJSON runs the golden cases on the models load returns and
// renders their results and errors.
func goldenJSON(t *testing.T, load func() *model.Model) []byte {
	t.Helper()
	return goldenRender(t, func(j *Job) (*Result, error) {
		r, err := Estimate(load(), *j)
		return &r, err
	})
}

// goldenRender runs the golden cases through est and renders their
// results and errors.
func goldenRender(t *testing.T, est func(*Job) (*Result, error)) []byte {
	t.Helper()
	cases := goldenCases()
	recs := make([]goldenRecord, 0, len(cases))
	for _, c := range cases {
		r, err := est(&c.job)
		rec := goldenRecord{Case: c.name}
		if err != nil {
			rec.Error = err.Error()
		} else {
			rec.Result = r
		}
		recs = append(recs, rec)
	}
	out, err := json.MarshalIndent(recs, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// firstDiff shows the first differing line of two golden texts with some
// context.
func firstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n want " + w + "\n  got " + g
		}
	}
	return "(same lines, different bytes)"
}
