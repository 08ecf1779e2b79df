package memory

import (
	"testing"

	"github.com/gpumem/gpumem/units"
)

// TestSetReservedCushion checks that the cushion becomes the gap between
// the reserved and the allocated peak (besides stream pools; the weights'
// segment slack counts in it), through the
// fragmentation constant of each kind of job, and leaves the allocated
// peak alone.
func TestSetReservedCushion(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	for _, tc := range []struct {
		name string
		job  Job
		want string
	}{
		{"training", Job{SeqLen: 1024}, "fragmentation"},
		{"inference", Job{Mode: Inference, PromptLen: 512, GenLen: 64}, "fragmentation_inference"},
		{"torch 1.x", Job{SeqLen: 1024, Software: []string{"torch1"}}, "fragmentation_torch1"},
		{"deepspeed zero-3 without stream pools", Job{SeqLen: 1024, Engine: "deepspeed", ZeRO: 3, NumGPUs: 8, OverlapComm: new(false)}, "fragmentation_sharded"},
		// FSDP counts its stream pools, so its compute stream takes the
		// training fragmentation; a cushion set on fragmentation_sharded
		// would change nothing.
		{"fsdp with stream pools", Job{SeqLen: 1024, Engine: "fsdp", NumGPUs: 8}, "fragmentation"},
		{"fragmentation set to its maximum", Job{SeqLen: 1024, Constants: map[string]float64{"fragmentation_inference": 2}}, "fragmentation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, err := FragmentationConstant(m, tc.job)
			if err != nil || name != tc.want {
				t.Fatalf("FragmentationConstant = %q, %v; want %q", name, err, tc.want)
			}
			base, err := Estimate(m, tc.job)
			if err != nil {
				t.Fatal(err)
			}
			cushion := 5 * units.GiB
			j, err := SetReservedCushion(m, tc.job, cushion)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := j.Constants[tc.want]; !ok || len(j.Constants) != len(tc.job.Constants)+1 {
				t.Errorf("constants %v (the job's own: %v)", j.Constants, tc.job.Constants)
			}
			r, err := Estimate(m, j)
			if err != nil {
				t.Fatal(err)
			}
			p := r.PerGPU
			if p.AllocatedPeakBytes != base.PerGPU.AllocatedPeakBytes {
				t.Errorf("allocated peak %d, was %d", p.AllocatedPeakBytes, base.PerGPU.AllocatedPeakBytes)
			}
			var pools units.Bytes
			for _, c := range p.Components {
				if c.Name == "stream_cache" {
					pools = c.Bytes
				}
			}
			if d := p.ReservedPeakBytes - p.AllocatedPeakBytes - pools - cushion; d < -2 || d > 2 {
				t.Errorf("reserved − allocated − stream pools %d = %d, want %d", pools, p.ReservedPeakBytes-p.AllocatedPeakBytes-pools, cushion)
			}
		})
	}
}

func TestSetReservedCushionRefuses(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	for _, tc := range []struct {
		job  Job
		want string
	}{
		{Job{Mode: Serving, GPUMemory: 80 * units.GiB, MaxModelLen: 4096}, "mode"},
		{Job{SeqLen: 1024, Constants: map[string]float64{"fragmentation": 0.1}}, "constants"},
		{Job{SeqLen: -1}, "seq_len"},
	} {
		if _, err := SetReservedCushion(m, tc.job, units.GiB); fieldKey(err) != tc.want {
			t.Errorf("%+v: err %v, want one about %s", tc.job, err, tc.want)
		}
	}
}
