package memory

import (
	"reflect"
	"testing"

	"github.com/gpumem/gpumem/model"
)

// stageTabJobs are distributed jobs whose stages cut the model in
// different places: pipelines with and without tied embeddings' copies,
// uneven layer splits, tensor and expert parallelism.
var stageTabJobs = []Job{
	{SeqLen: 512, Engine: "megatron", NumGPUs: 4, PP: 2, TP: 2, GradAccum: 4},
	{SeqLen: 512, Engine: "megatron", NumGPUs: 3, PP: 3, GradAccum: 6},
	{SeqLen: 512, Engine: "megatron", NumGPUs: 8, PP: 4, TP: 2, GradAccum: 8, GradCheckpoint: "selective"},
	{SeqLen: 512, Engine: "megatron", NumGPUs: 8, TP: 8},
	{SeqLen: 512, Engine: "megatron", NumGPUs: 8, PP: 2, EP: 2, GradAccum: 4},
}

// eachStageTabJob sets up every stageTabJobs job on every catalog model
// and calls fn with it; jobs a model rejects (more stages than layers, EP
// without experts) are passed over, and the callers check that enough
// remain.
func eachStageTabJob(t *testing.T, fn func(m *model.Model, job Job, s *setup)) {
	t.Helper()
	for _, e := range model.Catalog() {
		m := catalogModel(t, e.ID)
		for _, job := range stageTabJobs {
			job.AllowLong = true
			var s setup
			if err := s.init(m, job); err != nil {
				continue
			}
			fn(m, job, &s)
		}
	}
}

// TestStageFracMatchesRankFrac checks the rank fractions fillFracs
// reads from the model table's module places against rankFrac, which
// compares the modules' names, on every stage of every catalog model.
func TestStageFracMatchesRankFrac(t *testing.T) {
	places := map[modPlace]int{}
	zeros, splits := 0, 0
	eachStageTabJob(t, func(m *model.Model, job Job, s *setup) {
		rows := s.tab.rows()
		for stage := range s.dist.pp {
			s.setStage(stage)
			unit := true
			for i := range m.Modules {
				mod := &m.Modules[i]
				want := s.rankFrac(mod)
				if got := s.fracs[i]; got != want {
					t.Errorf("%s %+v stage %d: module %s: fraction %v, rankFrac %v", m.ID, job, stage, mod.Name, got, want)
				}
				unit = unit && want == 1
				places[rows[i].place]++
				if want == 0 {
					zeros++
				} else if want < 1 {
					splits++
				}
			}
			if s.unitFracs != unit {
				t.Errorf("%s %+v stage %d: unitFracs %v, want %v", m.ID, job, stage, s.unitFracs, unit)
			}
		}
	})
	for _, p := range []modPlace{placeFirst, placeLayers, placeHead, placeEmbed} {
		if places[p] == 0 {
			t.Errorf("no module placed %d: the comparison misses that case", p)
		}
	}
	if zeros == 0 || splits == 0 {
		t.Errorf("%d modules off their stage, %d split: want both cases exercised", zeros, splits)
	}
}

// TestModelTrainableShortcut checks the whole model's trainable count of
// a distributed full-training job (the model table's total) against
// summing every trainable tensor group with whole modules.
func TestModelTrainableShortcut(t *testing.T) {
	checked := 0
	eachStageTabJob(t, func(m *model.Model, job Job, s *setup) {
		s.setStage(0) // a pipeline's stages are set before they are estimated
		p := s.countParams()
		got := s.modelTrainable(&p)
		s.wholeModel = true
		var want float64
		s.forEachTrainable(func(g tensorGroup) { want += g.count * g.numel() })
		s.wholeModel = false
		if got != want {
			t.Errorf("%s %+v: trainable %v, want %v", m.ID, job, got, want)
		}
		checked++
	})
	if checked < 100 {
		t.Errorf("checked %d jobs, want the shortcut exercised on most models", checked)
	}
}

// TestEstimatorAfterPipeline checks that an Estimator's reused rank
// fractions do not leak from one job into the next: every estimate in a
// sequence mixing pipeline, tensor-parallel and single-GPU jobs equals a
// fresh estimate of the same job.
func TestEstimatorAfterPipeline(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	single := Job{SeqLen: 1024, MicroBatch: 2, GradCheckpoint: "full"}
	ddp := Job{SeqLen: 1024, Engine: "ddp", NumGPUs: 4}
	jobs := []Job{single, stageTabJobs[0], single, stageTabJobs[3], ddp, stageTabJobs[2], single, single}
	e := NewEstimator(m)
	for i, job := range jobs {
		got, err := e.Estimate(&job)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Estimate(m, job)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Clone(), want) {
			t.Errorf("job %d %+v: the Estimator's result differs from a fresh estimate:\n got %+v\nwant %+v", i, job, got.PerGPU, want.PerGPU)
		}
	}
}
