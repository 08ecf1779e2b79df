package memory

import (
	"reflect"
	"strings"
	"testing"

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

// TestEstimatorAllocations checks that a single-GPU and a sharded
// training estimate allocate nothing once the Estimator has run once.
func TestEstimatorAllocations(t *testing.T) {
	e := NewEstimator(catalogModel(t, "meta-llama/Llama-2-7b-hf"))
	for _, job := range []Job{
		{SeqLen: 4096, MicroBatch: 2, GradCheckpoint: "full", Attention: "flash"},
		{SeqLen: 4096, Engine: "deepspeed", ZeRO: 3, NumGPUs: 64, OffloadOptimizer: "cpu", GPUMemory: 80 * units.GiB},
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
