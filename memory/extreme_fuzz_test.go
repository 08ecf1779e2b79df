package memory_test

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// extremeJobs are jobs at the edge of what the flags accept: a 1M-token
// sequence, a 1M-sample batch, huge adapter ranks, a million GPUs, every
// constant at its bound. Each must give an error or a result whose every
// number is finite and non-negative (byte counts saturate at
// units.MaxBytes instead of wrapping).
func extremeJobs() map[string]memory.Job {
	const big = 1 << 20
	no := false
	maxConsts := map[string]float64{}
	minConsts := map[string]float64{}
	for _, c := range memory.Constants() {
		maxConsts[c.Name], minConsts[c.Name] = c.Max, c.Min
	}
	return map[string]memory.Job{
		"train huge batch and sequence": {SeqLen: big, MicroBatch: big, GradAccum: big, AllowLong: true},
		"train fp32 eager":              {Dtype: "fp32", Attention: "eager", SeqLen: 1 << 22, MicroBatch: 4096, AllowLong: true},
		"train unpacked every-1":        {SeqLen: big, MicroBatch: 64, Packed: &no, GradCheckpoint: "every-1", AllowLong: true},
		"lora rank 512":                 {Method: "lora", LoRARank: 512, LoRATargets: []string{"all-linear"}, SeqLen: big, MicroBatch: big, AllowLong: true},
		"qlora rank 512":                {Method: "qlora", LoRARank: 512, LoRATargets: []string{"all-linear"}, MicroBatch: big, GradCheckpoint: "full"},
		"trainable params 2^30":         {Method: "frozen", TrainableParams: 1 << 30, SeqLen: 4096}, // more than the model is an error (TestTrainableErrors)
		"zero3 a million gpus":          {Engine: "deepspeed", ZeRO: 3, NumGPUs: big, OffloadOptimizer: "cpu", OffloadParams: "cpu", SeqLen: big, AllowLong: true},
		"fsdp2 context parallel":        {Engine: "fsdp2", NumGPUs: 1 << 16, CP: 1 << 8, SeqLen: 1 << 24, MicroBatch: 1 << 10, AllowLong: true},
		"deepspeed huge buckets":        {Engine: "deepspeed", ZeRO: 2, NumGPUs: 8, ReduceBucketSize: math.MaxInt64, AllgatherBucketSize: math.MaxInt64},
		"ddp huge bucket cap":           {Engine: "ddp", NumGPUs: 8, DDPBucketCapMB: 1e300},
		"constants at max":              {Constants: maxConsts, SeqLen: big, AllowLong: true},
		"constants at min":              {Constants: minConsts},
		"inference huge":                {Mode: memory.Inference, Batch: big, PromptLen: 1 << 24, GenLen: 1 << 24, AllowLong: true},
		"inference eager no cache":      {Mode: memory.Inference, Attention: "eager", NoKVCache: true, Batch: 1 << 12, PromptLen: big, AllowLong: true},
		"inference images":              {Mode: memory.Inference, ImagesPerSample: 1 << 16, ImageSize: 1 << 14, Batch: 64},
		"serving huge context":          {Mode: memory.Serving, MaxModelLen: 1 << 24, MaxNumSeqs: big, MaxNumBatchedTokens: 1 << 30, GPUMemory: units.MaxBytes, AllowLong: true},
		"serving tiny gpu":              {Mode: memory.Serving, GPUMemory: units.MiB, MaxModelLen: 4096},
		"serving fp8 full utilization":  {Mode: memory.Serving, GPU: "H100", GPUComputeCapability: 90, GPUMemory: 80 * units.GiB, KVCacheDtype: "fp8", GPUMemoryUtilization: 1, BlockSize: 1 << 10},
	}
}

// TestEstimateExtremeJobsEveryModel sweeps extreme jobs through
// memory.Estimate for every catalog model and checks every number of the
// result: components, phases, peaks, band, serving figures, host memory,
// per-stage results.
func TestEstimateExtremeJobsEveryModel(t *testing.T) {
	jobs := extremeJobs()
	answered := map[string]int{}
	for _, e := range model.Catalog() {
		m, err := model.Lookup(e.ID)
		if err != nil {
			t.Fatalf("catalog model %s: %v", e.ID, err)
		}
		for name, job := range jobs {
			t.Run(e.ID+"/"+name, func(t *testing.T) {
				if checkExtreme(t, m, job) {
					answered[name]++
				}
			})
		}
	}
	// A job every model rejects would check nothing.
	for name := range jobs {
		if answered[name] == 0 {
			t.Errorf("%s: no catalog model gave a result", name)
		}
	}
}

// checkExtreme estimates one job and checks its result or its error; it
// reports whether there was a result.
func checkExtreme(t *testing.T, m *model.Model, job memory.Job) bool {
	t.Helper()
	res, err := memory.Estimate(m, job) // a panic fails the test and names the subtest
	if err != nil {
		if strings.TrimSpace(err.Error()) == "" {
			t.Fatal("empty error message")
		}
		return false
	}
	for _, p := range badNumbers(reflect.ValueOf(res), "Result") {
		t.Error(p)
	}
	checkPeaks(t, "per_gpu", res.PerGPU)
	// A capped figure is not the job's memory: the result must say so.
	if p := res.PerGPU; max(p.AllocatedPeakBytes, p.ReservedPeakBytes, p.DevicePeakBytes) == units.MaxBytes &&
		!strings.Contains(strings.Join(res.Warnings, "\n"), "capped") {
		t.Errorf("a peak reached units.MaxBytes without a warning: %q", res.Warnings)
	}
	for _, s := range res.Stages {
		checkPeaks(t, fmt.Sprintf("stage %d", s.Stage), s.PerGPU)
	}
	return true
}

// checkPeaks asserts the order of the three peaks and of the band.
func checkPeaks(t *testing.T, where string, p memory.PerGPU) {
	t.Helper()
	if !(p.AllocatedPeakBytes <= p.ReservedPeakBytes && p.ReservedPeakBytes <= p.DevicePeakBytes) {
		t.Errorf("%s: peaks out of order: allocated %d, reserved %d, device %d", where, p.AllocatedPeakBytes, p.ReservedPeakBytes, p.DevicePeakBytes)
	}
	if b := p.Band; b != nil && !(b.LowBytes <= b.ExpectedBytes && b.ExpectedBytes <= b.HighBytes) {
		t.Errorf("%s: band out of order: %d ≤ %d ≤ %d", where, b.LowBytes, b.ExpectedBytes, b.HighBytes)
	}
}

// badNumbers walks v and names every integer that is negative and every
// float that is negative, NaN or infinite.
func badNumbers(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return badNumbers(v.Elem(), path)
	case reflect.Struct:
		var out []string
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Name == "Job" {
				continue // the job is the input, echoed
			}
			out = append(out, badNumbers(v.Field(i), path+"."+f.Name)...)
		}
		return out
	case reflect.Slice, reflect.Array:
		var out []string
		for i := range v.Len() {
			out = append(out, badNumbers(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	case reflect.Map:
		var out []string
		for _, k := range v.MapKeys() {
			out = append(out, badNumbers(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k))...)
		}
		return out
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Int() < 0 {
			return []string{fmt.Sprintf("%s = %d, negative", path, v.Int())}
		}
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return []string{fmt.Sprintf("%s = %v, want a finite non-negative number", path, f)}
		}
	}
	return nil
}
