package plan

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// linear is an estimator with need = a + b·micro-batch + c·seq_len
// (+ s/num_gpus), so every search answer has a closed form.
type linear struct{ a, b, c, s units.Bytes }

func (l linear) estimate(j memory.Job) (memory.Result, error) {
	need := l.a + l.b*units.Bytes(j.MicroBatch) + l.c*units.Bytes(j.SeqLen)
	if l.s > 0 {
		need += l.s / units.Bytes(max(j.NumGPUs, 1))
	}
	return memory.Result{Job: j, PerGPU: memory.PerGPU{DevicePeakBytes: need}}, nil
}

func TestMaxFitMatchesClosedForm(t *testing.T) {
	est := linear{a: 10 * units.GiB, b: 3 * units.GiB}.estimate
	tests := []struct {
		budget units.Bytes
		hi     int
		want   int
	}{
		{13 * units.GiB, 100, 1},
		{16*units.GiB - 1, 100, 1},
		{16 * units.GiB, 100, 2},
		{70 * units.GiB, 100, 20},
		{70 * units.GiB, 17, 17},
		{1000 * units.GiB, 1000, 330},
		{units.MaxBytes, 1 << 20, 1 << 20},
		{units.MaxBytes, math.MaxInt, math.MaxInt},
	}
	for _, tt := range tests {
		got, err := MaxFit(est, memory.Job{SeqLen: 1}, MicroBatch, 1, tt.hi, tt.budget)
		if err != nil {
			t.Fatalf("budget %v: %v", tt.budget, err)
		}
		if got.Value != tt.want {
			t.Errorf("budget %v hi %d: max micro-batch %d, want %d", tt.budget, tt.hi, got.Value, tt.want)
		}
		if got.Result.Job.MicroBatch != got.Value {
			t.Errorf("result is for micro-batch %d, not %d", got.Result.Job.MicroBatch, got.Value)
		}
		if got.Value == tt.hi && got.Stop != "" {
			t.Errorf("stopped at the limit but Stop = %q", got.Stop)
		}
		if maxEvals := 2*bitLen(tt.hi) + 2; got.Evaluations > maxEvals {
			t.Errorf("%d evaluations for hi=%d, want <= %d", got.Evaluations, tt.hi, maxEvals)
		}
	}
}

func bitLen(n int) int {
	k := 0
	for ; n > 0; n >>= 1 {
		k++
	}
	return k
}

// TestMaxFitAgainstDirectEstimates checks the search's defining property
// on the synthetic training model: the answer fits, one more does not.
func TestMaxFitAgainstDirectEstimates(t *testing.T) {
	s := synth{params: 1_000_000_000, actPerToken: 200_000}
	base := memory.Job{SeqLen: 4096, MicroBatch: 1}
	for _, name := range []string{"l4", "a100-40gb", "h100", "b200"} {
		g, _ := gpu.Lookup(name)
		for _, v := range []Var{MicroBatch, SeqLen} {
			got, err := MaxFit(s.estimate, OnGPU(base, g), v, 1, 1<<16, Budget(g))
			if err != nil {
				t.Fatalf("%s %s: %v", name, v, err)
			}
			j := OnGPU(base, g)
			f, _ := v.field(&j)
			*f = got.Value
			r, _ := s.estimate(j)
			if Need(r) > Budget(g) {
				t.Errorf("%s %s=%d: answer needs %v > budget", name, v, got.Value, Need(r))
			}
			*f = got.Value + 1
			r, err = s.estimate(j)
			if got.Value < got.Limit && err == nil && Need(r) <= Budget(g) {
				t.Errorf("%s %s=%d: one more (%d) also fits", name, v, got.Value, got.Value+1)
			}
		}
	}
}

func TestMaxFitStopsAtEstimatorErrors(t *testing.T) {
	s := synth{params: 1000, actPerToken: 1}
	got, err := MaxFit(s.estimate, memory.Job{MicroBatch: 1}, SeqLen, 1, 1<<20, 100*units.GiB)
	if err != nil {
		t.Fatal(err)
	}
	if got.Value != 32768 || !strings.Contains(got.Stop, "max_position_embeddings") {
		t.Errorf("got %d (stop %q), want 32768 stopped by the estimator", got.Value, got.Stop)
	}
}

func TestMaxFitNoFit(t *testing.T) {
	est := linear{a: 10 * units.GiB, b: units.GiB}.estimate
	_, err := MaxFit(est, memory.Job{}, MicroBatch, 1, 8, 5*units.GiB)
	if !errors.Is(err, ErrNoFit) {
		t.Fatalf("err = %v, want ErrNoFit", err)
	}
	if _, err := MaxFit(est, memory.Job{}, MicroBatch, 0, 8, 5*units.GiB); err == nil || errors.Is(err, ErrNoFit) {
		t.Errorf("lo=0 accepted or reported as no fit: %v", err)
	}
	if _, err := MaxFit(est, memory.Job{}, Var("tokens"), 1, 8, 50*units.GiB); err == nil {
		t.Error("unknown variable accepted")
	}
}

func TestVarKey(t *testing.T) {
	if got := MicroBatch.Key(memory.Serving); got != "max_num_seqs" {
		t.Errorf("serving batch key %q", got)
	}
	if got := SeqLen.Key(""); got != "seq_len" {
		t.Errorf("training sequence key %q", got)
	}
	if got := SeqLen.Key(memory.Inference); got != "prompt_len" {
		t.Errorf("inference sequence key %q", got)
	}
	est := linear{a: 10 * units.GiB, b: units.GiB}.estimate
	_, err := MaxFit(est, memory.Job{Mode: memory.Inference}, MicroBatch, 1, 8, 5*units.GiB)
	if err == nil || !errors.Is(err, ErrNoFit) || err.Error() != "search batch: does not fit: batch=1: needs 10.00 GiB > budget 5.00 GiB" {
		t.Errorf("error %v does not name the setting", err)
	}
	var fe *memory.FieldError
	if !errors.As(err, &fe) || fe.Key != "batch" {
		t.Errorf("error %v is not about the batch key", err)
	}
	found, err := MaxFit(est, memory.Job{}, MicroBatch, 1, 64, 20*units.GiB)
	if err != nil || found.Value != 10 || found.Stop != "per_device_batch=11: needs 21.00 GiB > budget 20.00 GiB" || found.StopErr() == nil || found.StopErr().Error() != found.Stop {
		t.Errorf("found %d, stop %q (%v), err %v", found.Value, found.Stop, found.StopErr(), err)
	}
}

func TestVarFieldsByMode(t *testing.T) {
	tests := []struct {
		mode memory.Mode
		v    Var
		get  func(memory.Job) int
	}{
		{memory.Train, MicroBatch, func(j memory.Job) int { return j.MicroBatch }},
		{"", SeqLen, func(j memory.Job) int { return j.SeqLen }},
		{memory.Inference, MicroBatch, func(j memory.Job) int { return j.Batch }},
		{memory.Inference, SeqLen, func(j memory.Job) int { return j.PromptLen }},
		{memory.Serving, MicroBatch, func(j memory.Job) int { return j.MaxNumSeqs }},
		{memory.Serving, SeqLen, func(j memory.Job) int { return j.MaxModelLen }},
	}
	for _, tt := range tests {
		j := memory.Job{Mode: tt.mode}
		f, err := tt.v.field(&j)
		if err != nil {
			t.Fatal(err)
		}
		*f = 77
		if tt.get(j) != 77 {
			t.Errorf("%s/%s sets the wrong field", tt.mode, tt.v)
		}
	}
}

func TestMinGPUs(t *testing.T) {
	g := gpu.GPU{Name: "G", Memory: 100 * units.GiB}
	// need = 10 GiB + 760 GiB / n; budget 95 GiB => n >= 760/85 = 8.94 => 9.
	est := linear{a: 10 * units.GiB, s: 760 * units.GiB}.estimate
	tests := []struct {
		tp, hi int
		want   int
	}{
		{1, 64, 9},
		{2, 64, 10},
		{4, 64, 12},
		{1, 9, 9},
	}
	for _, tt := range tests {
		got, err := MinGPUs(est, memory.Job{TP: tt.tp}, g, tt.hi)
		if err != nil {
			t.Fatalf("tp %d: %v", tt.tp, err)
		}
		if got.Value != tt.want {
			t.Errorf("tp %d: %d GPUs, want %d", tt.tp, got.Value, tt.want)
		}
		if got.Result.Job.NumGPUs != got.Value || got.Result.Job.GPU != "G" {
			t.Errorf("result job has %d GPUs of %q", got.Result.Job.NumGPUs, got.Result.Job.GPU)
		}
	}
	if _, err := MinGPUs(est, memory.Job{}, g, 8); !errors.Is(err, ErrNoFit) {
		t.Errorf("8 GPUs cannot fit, got %v", err)
	}
	if _, err := MinGPUs(est, memory.Job{TP: 8}, g, 4); err == nil {
		t.Error("limit below tp accepted")
	}
	flat := linear{a: 200 * units.GiB}.estimate
	if _, err := MinGPUs(flat, memory.Job{}, g, 1024); !errors.Is(err, ErrNoFit) {
		t.Errorf("a job that does not shrink with GPUs: %v", err)
	}
}

func TestMinGPUsSynthZeRO3(t *testing.T) {
	// 7B params, ZeRO-3: 16·7e9/n + activations + 1 GiB. Check against
	// direct estimates rather than a closed form.
	s := synth{params: 7_000_000_000, actPerToken: 100_000}
	g, _ := gpu.Lookup("a100-40gb")
	job := memory.Job{Engine: "deepspeed", ZeRO: 3, SeqLen: 2048, MicroBatch: 1}
	got, err := MinGPUs(s.estimate, job, g, 256)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{got.Value, got.Value - 1} {
		j := OnGPU(job, g)
		j.NumGPUs = n
		r, _ := s.estimate(j)
		fits := Need(r) <= Budget(g)
		if fits != (n == got.Value) {
			t.Errorf("%d GPUs: fits = %v (answer %d)", n, fits, got.Value)
		}
	}
}

func TestShards(t *testing.T) {
	for _, tc := range []struct {
		job  memory.Job
		want bool
	}{
		{memory.Job{}, false},
		{memory.Job{Engine: "ddp"}, false},
		{memory.Job{Engine: "deepspeed"}, false},
		{memory.Job{Engine: "deepspeed", ZeRO: 1}, true},
		{memory.Job{Engine: "fsdp", FSDPStrategy: "no_shard"}, false},
		{memory.Job{Engine: "fsdp"}, true},
		{memory.Job{Engine: "fsdp2"}, true},
		{memory.Job{Engine: "megatron", TP: 8}, false},
		{memory.Job{Engine: "megatron", ZeRO: 1}, true},
	} {
		if got := Shards(tc.job); got != tc.want {
			t.Errorf("Shards(%s zero %d %s) = %v", tc.job.Engine, tc.job.ZeRO, tc.job.FSDPStrategy, got)
		}
	}
}

// TestWithContext checks an estimator bound to an ended context estimates
// nothing and makes the searches on it fail with the context's error.
func TestWithContext(t *testing.T) {
	calls := 0
	est := func(j memory.Job) (memory.Result, error) {
		calls++
		return memory.Result{}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	bound := WithContext(ctx, est)
	if _, err := bound(memory.Job{}); err != nil || calls != 1 {
		t.Fatalf("live context: err %v, %d calls", err, calls)
	}
	cancel()
	if _, err := bound(memory.Job{}); !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("ended context: err %v, %d calls; want context.Canceled and no estimate", err, calls)
	}
}
