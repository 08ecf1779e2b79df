package plan

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/gpumem/gpumem/gpu"
	goldenfile "github.com/gpumem/gpumem/internal/golden"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

var update = flag.Bool("update", false, "update .golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got, *update)
}

func table(headers []string, rows [][]string) []byte {
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, strings.Join(headers, "\t"))
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	w.Flush()
	return b.Bytes()
}

func TestRecommendTraining(t *testing.T) {
	// 7B full fine-tuning with ZeRO-3 on 1 GPU as given.
	s := synth{params: 7_000_000_000, actPerToken: 100_000}
	job := memory.Job{Engine: "deepspeed", ZeRO: 3, SeqLen: 2048, MicroBatch: 1, NumGPUs: 1}
	var gs []gpu.GPU
	for _, n := range []string{"t4", "rtx-4090", "l40s", "a100-80g", "h200", "b200"} {
		g, err := gpu.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	recs := Recommend(s.estimate, job, gs, 64)
	if len(recs) != len(gs) {
		t.Fatalf("%d recommendations for %d GPUs", len(recs), len(gs))
	}
	for _, r := range recs {
		g, _ := gpu.Lookup(r.GPU)
		// Direct check of the verdict as given and of the minimum count.
		res, _ := s.estimate(OnGPU(job, g))
		if Check(res, g) != r.Fit {
			t.Errorf("%s: fit %v, direct %v", r.GPU, r.Fit, Check(res, g))
		}
		if r.MinGPUs == 0 {
			t.Errorf("%s: no GPU count found", r.GPU)
			continue
		}
		j := OnGPU(job, g)
		j.NumGPUs = r.MinGPUs
		res, _ = s.estimate(j)
		if Need(res) > Budget(g) || Need(res) != r.MinGPUsNeedBytes {
			t.Errorf("%s: %d GPUs need %v (reported %v), budget %v", r.GPU, r.MinGPUs, Need(res), r.MinGPUsNeedBytes, Budget(g))
		}
		if r.MinGPUs > 1 {
			j.NumGPUs = r.MinGPUs - 1
			res, _ = s.estimate(j)
			if Need(res) <= Budget(g) {
				t.Errorf("%s: %d GPUs also fit", r.GPU, r.MinGPUs-1)
			}
		}
	}
	// 112 GB of states: it fits as given on H200 and B200 only; the
	// smaller of the two comes first.
	if recs[0].GPU != "H200" || recs[0].Verdict != Fits || recs[1].GPU != "B200" {
		t.Errorf("first recommendations %s (%s), %s, want H200 then B200", recs[0].GPU, recs[0].Verdict, recs[1].GPU)
	}
	for i := 3; i < len(recs); i++ {
		if recs[i].MinGPUs < recs[i-1].MinGPUs {
			t.Errorf("%s needs %d GPUs but is listed after %s with %d", recs[i].GPU, recs[i].MinGPUs, recs[i-1].GPU, recs[i-1].MinGPUs)
		}
	}
	golden(t, "recommend", table(RecommendationRows(recs, units.FormatIEC)))
}

// tpEstimator models inference: weights split over tp, heads must divide.
func tpEstimator(j memory.Job) (memory.Result, error) {
	tp := max(j.TP, 1)
	if 40%tp != 0 {
		return memory.Result{}, fmt.Errorf("40 attention heads not divisible by tp %d", tp)
	}
	need := 140*units.GiB/units.Bytes(tp) + 2*units.GiB
	return memory.Result{Job: j, PerGPU: memory.PerGPU{DevicePeakBytes: need}}, nil
}

func TestMinTP(t *testing.T) {
	tests := []struct {
		gpu  string
		hi   int
		want int
		err  error
	}{
		{"b200", 8, 1, nil}, // 142 GiB on one GPU
		{"h100", 8, 2, nil}, // 72 GiB per GPU at tp 2
		{"l40s", 8, 4, nil}, // 37 GiB per GPU at tp 4
		{"l40s", 2, 0, ErrNoFit},
		{"rtx-4090", 64, 8, nil},
		{"t4", 64, 0, ErrNoFit}, // tp 8 is too big; 16, 32, 64 do not divide 40 heads
	}
	for _, tt := range tests {
		g, _ := gpu.Lookup(tt.gpu)
		got, err := MinTP(tpEstimator, memory.Job{Mode: memory.Inference}, g, tt.hi)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("%s: err %v, want %v", tt.gpu, err, tt.err)
			}
			continue
		}
		if err != nil || got.Value != tt.want {
			t.Errorf("%s: tp %d (%v), want %d", tt.gpu, got.Value, err, tt.want)
		}
	}
}

func TestFormatWarning(t *testing.T) {
	tests := []struct {
		gpu  string
		job  memory.Job
		want bool
	}{
		{"v100-32gb", memory.Job{}, true},
		{"v100-32gb", memory.Job{Dtype: "fp16"}, false},
		{"t4", memory.Job{Dtype: "fp32"}, true},
		{"t4", memory.Job{Dtype: "fp32", ComputeDtype: "fp16"}, false},
		{"a100-80g", memory.Job{Dtype: "fp8"}, true},
		{"h100", memory.Job{Dtype: "fp8"}, false},
		{"h100", memory.Job{Dtype: "fp4"}, true},
		{"b200", memory.Job{Dtype: "fp4"}, false},
		{"t4", memory.Job{Dtype: "nf4"}, false},
	}
	for _, tt := range tests {
		g, _ := gpu.Lookup(tt.gpu)
		if got := FormatWarning(tt.job, g); (got != "") != tt.want {
			t.Errorf("%s %+v: warning %q", tt.gpu, tt.job, got)
		}
	}
	recs := Recommend(synth{params: 1000, actPerToken: 1}.estimate, memory.Job{}, []gpu.GPU{mustLookup(t, "v100-16gb")}, 1)
	if recs[0].Warning == "" {
		t.Error("recommendation on a V100 has no bf16 warning")
	}
}

func mustLookup(t *testing.T, name string) gpu.GPU {
	t.Helper()
	g, err := gpu.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestCandidateRowsGolden(t *testing.T) {
	s := synth{params: 7_000_000_000, actPerToken: 150_000}
	g, _ := gpu.Lookup("a100-80g")
	sp := DefaultSpace(8)
	sp.Keep = 12
	p, err := Search(s.estimate, memory.Job{SeqLen: 4096, GradAccum: 8}, g, sp)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "candidates", table(CandidateRows(p, units.FormatIEC)))
}
