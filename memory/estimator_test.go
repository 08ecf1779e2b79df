package memory

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// TestResultCloneSharesNothing fills every pointer, slice and map of a
// Result (found by reflection, so a field added later is covered) and
// checks that Clone copies each of them.
func TestResultCloneSharesNothing(t *testing.T) {
	var r Result
	fill(reflect.ValueOf(&r).Elem())
	c := r.Clone()
	if !reflect.DeepEqual(r, c) {
		t.Fatal("clone differs from the original")
	}
	if path := shared(reflect.ValueOf(r), reflect.ValueOf(c), "Result"); path != "" {
		t.Errorf("Clone shares %s with the original", path)
	}
}

// fill sets every pointer, slice and map under v to a non-empty value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range v.Len() {
			fill(v.Index(i))
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.String:
		v.SetString("x")
	}
}

// shared returns the path of the first pointer, slice or map a and b
// have in common, or "".
func shared(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		if !a.IsNil() && a.Pointer() == b.Pointer() {
			return path
		}
	}
	switch a.Kind() {
	case reflect.Pointer:
		if !a.IsNil() {
			return shared(a.Elem(), b.Elem(), path)
		}
	case reflect.Slice:
		for i := range a.Len() {
			if p := shared(a.Index(i), b.Index(i), path+"[]"); p != "" {
				return p
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				if p := shared(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
					return p
				}
			}
		}
	}
	return ""
}

// TestEstimatorOverwrites documents the contract: the result belongs to
// the Estimator and the next call overwrites it.
func TestEstimatorOverwrites(t *testing.T) {
	e := NewEstimator(catalogModel(t, "meta-llama/Llama-2-7b-hf"))
	a, err := e.Estimate(&Job{Method: "lora", SeqLen: 1024})
	if err != nil {
		t.Fatal(err)
	}
	kept := a.Clone()
	b, err := e.Estimate(&Job{Method: "lora", SeqLen: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if a != b || kept.PerGPU.AllocatedPeakBytes >= b.PerGPU.AllocatedPeakBytes {
		t.Errorf("want the second call to reuse the result and a larger peak: kept %d, now %d",
			kept.PerGPU.AllocatedPeakBytes, b.PerGPU.AllocatedPeakBytes)
	}
	if _, err := e.Estimate(&Job{Mode: "bogus"}); err == nil {
		t.Error("bogus mode: want an error")
	}
	if _, err := NewEstimator(nil).Estimate(&Job{}); err == nil {
		t.Error("nil model: want an error")
	}
}

// TestEstimatorAllocations checks that a single-GPU, a sharded and a
// pipeline training estimate allocate nothing once the Estimator has run
// once.
func TestEstimatorAllocations(t *testing.T) {
	e := NewEstimator(catalogModel(t, "meta-llama/Llama-2-7b-hf"))
	for _, job := range []Job{
		{SeqLen: 4096, MicroBatch: 2, GradCheckpoint: "full", Attention: "flash"},
		{SeqLen: 4096, Engine: "deepspeed", ZeRO: 3, NumGPUs: 64, OffloadOptimizer: "cpu", GPUMemory: 80 * units.GiB},
		{SeqLen: 4096, Engine: "megatron", NumGPUs: 64, PP: 8, TP: 2, GradAccum: 8, GradCheckpoint: "selective"},
	} {
		if _, err := e.Estimate(&job); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(20, func() { _, _ = e.Estimate(&job) }); n != 0 {
			t.Errorf("%+v: %.1f allocations per estimate, want 0", job, n)
		}
	}
}

func BenchmarkEstimatorTraining(b *testing.B) {
	e := NewEstimator(catalogModel(b, "meta-llama/Llama-2-7b-hf"))
	job := Job{SeqLen: 4096, MicroBatch: 2, GradCheckpoint: "full", Attention: "flash"}
	if _, err := e.Estimate(&job); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Estimate(&job); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEstimatorPipeline(b *testing.B) {
	e := NewEstimator(catalogModel(b, "meta-llama/Llama-2-7b-hf"))
	job := Job{SeqLen: 4096, Engine: "megatron", NumGPUs: 64, PP: 8, TP: 2, GradAccum: 8, GradCheckpoint: "selective"}
	if _, err := e.Estimate(&job); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Estimate(&job); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGPUWarningWithPipeline checks that the warning about a GPU named
// without its facts reaches the result whichever pipeline stage peaks.
func TestGPUWarningWithPipeline(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	for _, seq := range []int{256, 4096} {
		r, err := Estimate(m, Job{Engine: "megatron", NumGPUs: 2, PP: 2, SeqLen: seq, GradAccum: 4, GPU: "H100-SXM"})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, w := range r.Warnings {
			found = found || strings.Contains(w, `gpu "H100-SXM"`)
		}
		if !found {
			t.Errorf("seq %d (peak stage %d): no GPU warning in %q", seq, r.Parallel.PeakStage, r.Warnings)
		}
	}
}

// TestWholeModelSumsMatchModuleSums checks the shortcut of full training
// on a rank that holds every module whole (wholeDense: the model table's
// totals times the element widths) against summing module by module, for
// every catalog model, precision recipe and dense optimizer state size.
func TestWholeModelSumsMatchModuleSums(t *testing.T) {
	jobs := []Job{
		{SeqLen: 512},
		{SeqLen: 512, Dtype: "fp32", ComputeDtype: "bf16", Optimizer: "amsgrad"},
		{SeqLen: 512, Dtype: "bf16", MasterWeights: "fp32", Optimizer: "lion"},
		{SeqLen: 512, Dtype: "fp16", Optimizer: "sgd", Engine: "ddp", NumGPUs: 4},
		{SeqLen: 512, Engine: "deepspeed", ZeRO: 3, NumGPUs: 8, Optimizer: "adamw_torch_fused"},
		{SeqLen: 512, Engine: "fsdp", NumGPUs: 8, GradAccum: 4},
	}
	shortcuts := 0
	for _, e := range model.Catalog() {
		m := catalogModel(t, e.ID)
		for _, job := range jobs {
			job.AllowLong = true
			var fast, slow setup
			if err := fast.init(m, job); err != nil {
				t.Fatalf("%s %+v: %v", e.ID, job, err)
			}
			if err := slow.init(m, job); err != nil {
				t.Fatal(err)
			}
			slow.slowSums = true
			if !fast.wholeDense() {
				continue
			}
			shortcuts++
			fp, sp := fast.countParams(), slow.countParams()
			if fp != sp {
				t.Errorf("%s %+v: countParams\n shortcut %+v\n  modules %+v", e.ID, job, fp, sp)
			}
			if fs, ss := fast.modelStates(&fp), slow.modelStates(&sp); fs != ss {
				t.Errorf("%s %+v: modelStates\n shortcut %+v\n  modules %+v", e.ID, job, fs, ss)
			}
		}
	}
	if shortcuts < 100 {
		t.Errorf("the shortcut was taken %d times, want it exercised on most models", shortcuts)
	}
}

// TestEstimatorLoRATargetsReused checks that an Estimator, which reuses
// the modules matched for the previous job's LoRA targets, matches again
// when the targets change, including when the caller rewrites the same
// target slice in place.
func TestEstimatorLoRATargetsReused(t *testing.T) {
	m := catalogModel(t, "Qwen/Qwen2-VL-7B-Instruct")
	e := NewEstimator(m)
	targets := []string{"q_proj", "v_proj"}
	steps := []func(){
		func() {},
		func() { targets[1] = "down_proj" },
		func() { targets[0] = "all-linear" },
		func() { targets[0], targets[1] = "gate_proj", "up_proj" },
		func() { targets = targets[:1] },
		func() { targets = nil },
	}
	var prev int64
	for i, step := range steps {
		step()
		job := Job{Method: "lora", SeqLen: 1024, LoRATargets: targets}
		want, werr := Estimate(m, job)
		got, gerr := e.Estimate(&job)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("step %d %q: Estimate error %v, Estimator error %v", i, targets, werr, gerr)
		}
		if werr != nil {
			continue
		}
		if got.TrainableParams != want.TrainableParams || got.PerGPU.AllocatedPeakBytes != want.PerGPU.AllocatedPeakBytes {
			t.Errorf("step %d %q: Estimator %d trainable, %d bytes; Estimate %d trainable, %d bytes", i, targets,
				got.TrainableParams, got.PerGPU.AllocatedPeakBytes, want.TrainableParams, want.PerGPU.AllocatedPeakBytes)
		}
		if i > 0 && want.TrainableParams == prev {
			t.Errorf("step %d %q: the same trainable count as the step before; the targets should change it", i, targets)
		}
		prev = want.TrainableParams
	}
}
