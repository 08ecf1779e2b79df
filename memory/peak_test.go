package memory

import (
	"math/rand/v2"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// peakCases are pipeline-parallel jobs for Estimator.Peak, which skips
// the middle stages that repeat one already estimated: every schedule,
// stage counts that do and do not divide the layers, micro-batches in
// flight capped by the accumulation steps, and trainable ranges that
// start inside the stack.
func peakCases(rng *rand.Rand, n int) []Job {
	pick := func(xs ...int) int { return xs[rng.IntN(len(xs))] }
	ckpts := []string{"", "full", "selective", "every-2"}
	methods := []string{"full", "lora", "qlora", "frozen"}
	trainables := [][]string{nil, {"top:3"}, {"layers:5-9"}, {"layers:20-30"}}
	jobs := make([]Job, 0, n)
	for range n {
		j := Job{SeqLen: pick(256, 1024, 4096), MicroBatch: pick(1, 2, 4), GradAccum: pick(1, 2, 3, 8, 32),
			PP: pick(2, 3, 4, 5, 7, 8, 16), GradCheckpoint: ckpts[rng.IntN(len(ckpts))], AllowLong: true}
		switch rng.IntN(4) {
		case 3:
			j.Engine = "fsdp2" // torchtitan's pipeline with FSDP2 inside each stage
		case 0:
			j.Engine, j.TP = "megatron", pick(1, 2)
			j.SP = j.TP > 1 && rng.IntN(2) == 0
			switch rng.IntN(3) {
			case 1:
				j.PipelineSchedule, j.VirtualStages = "interleaved", pick(2, 3)
			case 2:
				j.PipelineSchedule = "gpipe"
			}
		case 1:
			j.Engine, j.ZeRO = "deepspeed", pick(0, 1)
		default:
			j.Engine = "megatron"
		}
		j.NumGPUs = j.PP * max(j.TP, 1) * pick(1, 2)
		switch m := methods[rng.IntN(len(methods))]; m {
		case "lora", "qlora":
			j.Method, j.LoRATargets = m, []string{"all-linear"}
			if rng.IntN(2) == 0 {
				j.Trainable = trainables[1+rng.IntN(len(trainables)-1)]
			}
		case "frozen":
			j.Method, j.Trainable = m, trainables[1+rng.IntN(len(trainables)-1)]
		}
		if rng.IntN(4) == 0 {
			j.GPUMemory = 24 << 30 // the reserved peak capped by the GPU
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// TestPeakMatchesEstimate checks that Estimator.Peak reports exactly the
// peaks, phase and peak stage of Estimator.Estimate (or its error), on
// the golden cases of every catalog model and on pipeline-parallel jobs
// of models with one layer type and with several.
func TestPeakMatchesEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 7))
	pp := peakCases(rng, 300)
	ppModels := map[string]bool{
		"meta-llama/Llama-3.1-8B": true, "mistralai/Mixtral-8x7B-v0.1": true, "google/gemma-3-4b-it": true,
		"meta-llama/Llama-3.2-11B-Vision": true, "deepseek-ai/DeepSeek-V2-Lite": true, "Qwen/Qwen2-VL-7B-Instruct": true,
	}
	seen, skipped, stopped, dominated := 0, 0, 0, 0
	for _, entry := range model.Catalog() {
		m := catalogModel(t, entry.ID)
		full, lean := NewEstimator(m), NewEstimator(m)
		var jobs []Job
		for _, c := range goldenCases() {
			jobs = append(jobs, c.job)
		}
		if ppModels[entry.ID] {
			seen++
			jobs = append(jobs, pp...)
		}
		for i := range jobs {
			j := &jobs[i]
			r, err := full.Estimate(j)
			p, perr := lean.Peak(j)
			if (err == nil) != (perr == nil) || (err != nil && err.Error() != perr.Error()) {
				t.Fatalf("%s job %d %+v: Estimate error %v, Peak error %v", entry.ID, i, *j, err, perr)
			}
			if err != nil {
				continue
			}
			want := peaksOfResult(r)
			if p != want {
				t.Fatalf("%s job %d %+v:\nPeak     %+v\nEstimate %+v", entry.ID, i, *j, p, want)
			}
			// Below the device peak PeakUpTo may stop at a stage above
			// the limit; at or above it, it answers as Peak.
			for _, limit := range []units.Bytes{want.DeviceBytes / 2, want.DeviceBytes - 1, want.DeviceBytes, want.DeviceBytes + 1} {
				u, err := lean.PeakUpTo(j, limit)
				switch {
				case err != nil:
					t.Fatalf("%s job %d: PeakUpTo %d: %v", entry.ID, i, limit, err)
				case limit >= want.DeviceBytes && u != want:
					t.Fatalf("%s job %d: PeakUpTo %d = %+v, want Peak's %+v", entry.ID, i, limit, u, want)
				case limit < want.DeviceBytes && (u.DeviceBytes <= limit || u.DeviceBytes > want.DeviceBytes):
					t.Fatalf("%s job %d: PeakUpTo %d = %+v, want a device peak above the limit and at most %d", entry.ID, i, limit, u, want.DeviceBytes)
				case limit < want.DeviceBytes && u != want:
					stopped++
				}
			}
			sk, dom := checkSkippedStages(t, entry.ID, m, full.tab, j)
			skipped, dominated = skipped+sk, dominated+dom
		}
	}
	if stopped < 100 {
		t.Errorf("PeakUpTo stopped early only %d times over the test jobs; the check needs more", stopped)
	}
	if dominated < 300 {
		t.Errorf("only %d middle stages over the test jobs are ones firstDominates holds for; the check needs more", dominated)
	}
	if skipped < 500 {
		t.Errorf("Peak skipped only %d pipeline stages over the test jobs; the check needs more", skipped)
	}
	if seen != len(ppModels) {
		t.Errorf("%d of the %d pipeline test models are in the catalog", seen, len(ppModels))
	}
}

// checkSkippedStages checks what Peak's stage skipping rests on: every
// stage it skips, estimated after all, peaks no higher than the stage it
// repeats. It returns how many stages Peak skips.
func checkSkippedStages(t *testing.T, id string, m *model.Model, tab *modTab, job *Job) (skipped, dominated int) {
	t.Helper()
	s := setup{tab: tab, buf: new(trainBuf)}
	if err := s.initJob(m, job); err != nil || s.dist.pp < 2 {
		return 0, 0
	}
	var rep stageShape
	var repStage int
	var repPeaks Peaks
	whole := s.layerModulesWhole()
	repeats := false // middleRepeats held at the last representative
	var first Peaks  // stage 0's
	for i := range s.dist.pp {
		s.setStage(i)
		if whole && rep.sameLayout(&s) && !rep.same(&s) {
			t.Errorf("%s %+v: stage %d has the layout of stage %d but other module shares", id, *job, i, repStage)
		}
		if repeats && !s.dist.last && !rep.sameLayout(&s) {
			t.Errorf("%s %+v: middle stage %d after stage %d, which middleRepeats held for, has another layout", id, *job, i, repStage)
		}
		var parts trainParts
		s.stageParts(&parts)
		p := s.peaksOf(&parts)
		if i == 0 {
			first = p
		}
		if whole && s.firstDominates() {
			dominated++
			if p.AllocatedBytes > first.AllocatedBytes || p.ReservedBytes > first.ReservedBytes || p.DeviceBytes > first.DeviceBytes {
				t.Errorf("%s %s pp%d %s ckpt %q mb %d acc %d: stage %d, which firstDominates, peaks above stage 0: %+v > %+v",
					id, job.Engine, job.PP, job.PipelineSchedule, job.GradCheckpoint, job.MicroBatch, job.GradAccum, i, p, first)
			}
		}
		if !rep.same(&s) {
			rep.set(&s)
			repStage, repPeaks = i, p
			repeats = s.middleRepeats(&rep)
			continue
		}
		skipped++
		if p.AllocatedBytes > repPeaks.AllocatedBytes || p.ReservedBytes > repPeaks.ReservedBytes || p.DeviceBytes > repPeaks.DeviceBytes {
			t.Errorf("%s %s pp%d sched %s ckpt %q trainable %v mb %d acc %d: skipped stage %d peaks above stage %d: %+v > %+v", id, job.Method, job.PP, job.PipelineSchedule, job.GradCheckpoint, job.Trainable, job.MicroBatch, job.GradAccum, i, repStage, p, repPeaks)
		}
	}
	return skipped, dominated
}

// TestLayerModulesWhole checks the models Peak's shortcut depends on: a
// dense stack's layer modules span every layer; DeepSeek-V2-Lite's dense
// first layer and MoE rest are runs.
func TestLayerModulesWhole(t *testing.T) {
	for id, want := range map[string]bool{"meta-llama/Llama-3.1-8B": true, "mistralai/Mixtral-8x7B-v0.1": true, "deepseek-ai/DeepSeek-V2-Lite": false} {
		s := setup{m: catalogModel(t, id)}
		if got := s.layerModulesWhole(); got != want {
			t.Errorf("%s: layerModulesWhole = %v, want %v", id, got, want)
		}
	}
}

// TestSweepMatchesPeak checks that a Sweep, which keeps the parts of each
// stage that do not depend on the micro-batch, answers as PeakUpTo does
// for the job with each micro-batch, asked in the order of a bisection
// and in others, with and without a limit, on jobs with and without
// pipeline parallelism; and that Reset forgets the previous job.
func TestSweepMatchesPeak(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 11))
	jobs := peakCases(rng, 150)
	for _, c := range goldenCases() {
		if c.job.Mode == "" || c.job.Mode == Train {
			jobs = append(jobs, c.job)
		}
	}
	orders := [][]int{{1, 16, 8, 4, 2, 3}, {2, 1, 32, 5}, {4, 4, 1}, {3, -1, 2}}
	for _, id := range []string{"meta-llama/Llama-3.1-8B", "mistralai/Mixtral-8x7B-v0.1", "Qwen/Qwen2-VL-7B-Instruct", "deepseek-ai/DeepSeek-V2-Lite"} {
		m := catalogModel(t, id)
		e, ref := NewEstimator(m), NewEstimator(m)
		sw := e.NewSweep()
		for i := range jobs {
			sw.Reset(&jobs[i])
			for _, mb := range orders[i%len(orders)] {
				j := jobs[i]
				j.MicroBatch = mb
				want, werr := ref.Peak(&j)
				var limit units.Bytes
				if i%3 == 1 {
					limit = want.DeviceBytes / 2
					want, werr = ref.PeakUpTo(&j, limit)
				}
				got, gerr := sw.PeakUpTo(mb, limit)
				if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
					t.Fatalf("%s job %d micro-batch %d: Peak error %v, Sweep error %v", id, i, mb, werr, gerr)
				}
				if got != want {
					t.Fatalf("%s job %d %+v micro-batch %d limit %d:\nSweep %+v\nPeak  %+v", id, i, jobs[i], mb, limit, got, want)
				}
			}
		}
	}
}
