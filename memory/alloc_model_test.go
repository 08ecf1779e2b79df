package memory

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// rowOf returns the bytes of the named breakdown row (0 when absent).
func rowOf(r *Result, name string) units.Bytes {
	for _, c := range r.PerGPU.Components {
		if c.Name == name {
			return c.Bytes
		}
	}
	return 0
}

func hasWarning(r *Result, sub string) bool {
	for _, w := range r.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

// TestAllocatorRowsLlama works the allocator's rows of Llama-3.1-8B out
// of its tensor shapes. In bf16 its k and v projections are 8 MiB each:
// two fill 16 MiB of a 20 MiB segment and leave 4 MiB the next (8 MiB)
// cannot use, 32 layers × 4 MiB. q, o (32 MiB), the MLP matrices (112
// MiB) and the embeddings (1002 MiB) are whole multiples of 2 MiB; the 65
// RMSNorm weights (8 KiB each) share one 2 MiB small-pool segment.
func TestAllocatorRowsLlama(t *testing.T) {
	m, err := model.Lookup("meta-llama/Llama-3.1-8B")
	if err != nil {
		t.Fatal(err)
	}
	const norms = 65 * 8192
	wantSlack := units.Bytes(32*4*units.MiB + 2*units.MiB - norms)
	tests := []struct {
		name      string
		job       Job
		slack     units.Bytes
		rounding  units.Bytes
		warnWith  string
		reasonFor string
	}{
		{"defaults", Job{Method: "lora", SeqLen: 1024}, wantSlack, 0, "", "tensor by tensor into fresh segments"},
		{"expandable segments tile one segment", Job{Method: "lora", SeqLen: 1024, AllocConf: "expandable_segments:True"}, 0, 0, "", ""},
		// roundup_power2_divisions:4 rounds each 1002 MiB embedding to
		// 1024 MiB (the [512, 1024) MiB interval in steps of 128 MiB);
		// the other weights and the adapters sit on a division already.
		{"divisions round the embeddings", Job{Method: "lora", SeqLen: 1024, AllocConf: "roundup_power2_divisions:4"}, wantSlack - 0, 2 * 22 * units.MiB,
			"activations and other tensors of the step are not", ""},
		// Sharded parameters are flattened by the engine: not derived.
		{"FSDP", Job{SeqLen: 1024, Engine: "fsdp", NumGPUs: 8}, 0, 0, "", ""},
		{"garbage collection needs a memory fraction", Job{Method: "lora", SeqLen: 1024, AllocConf: "garbage_collection_threshold:0.6"}, wantSlack, 0,
			"acts only under a per-process memory fraction", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Estimate(m, tt.job)
			if err != nil {
				t.Fatal(err)
			}
			if got := rowOf(&r, "segment_slack"); got != tt.slack {
				t.Errorf("segment_slack = %d, want %d", got, tt.slack)
			}
			if got := rowOf(&r, "allocator_rounding"); got != tt.rounding {
				t.Errorf("allocator_rounding = %d, want %d", got, tt.rounding)
			}
			if tt.warnWith != "" && !hasWarning(&r, tt.warnWith) {
				t.Errorf("no warning containing %q in %q", tt.warnWith, r.Warnings)
			}
			// The reserved peak holds the derived rows on top of the
			// allocated peak and the fraction.
			var frag, stream units.Bytes
			frag, stream = rowOf(&r, "fragmentation"), rowOf(&r, "stream_cache")
			if got, want := r.PerGPU.ReservedPeakBytes, r.PerGPU.AllocatedPeakBytes+frag+stream+tt.slack; got != want {
				t.Errorf("reserved peak %d, want allocated + fragmentation + stream_cache + segment_slack = %d", got, want)
			}
			// Peak gives the same peaks.
			e := NewEstimator(m)
			p, err := e.Peak(&tt.job)
			if err != nil {
				t.Fatal(err)
			}
			if p.AllocatedBytes != r.PerGPU.AllocatedPeakBytes || p.ReservedBytes != r.PerGPU.ReservedPeakBytes || p.DeviceBytes != r.PerGPU.DevicePeakBytes {
				t.Errorf("Peak %+v, Estimate %d/%d/%d", p, r.PerGPU.AllocatedPeakBytes, r.PerGPU.ReservedPeakBytes, r.PerGPU.DevicePeakBytes)
			}
		})
	}
}

// TestAllocatorRoundingFullTraining checks that roundup_power2_divisions
// rounds the optimizer states and the gradients of full training as
// well, and only while the gradients are alive.
func TestAllocatorRoundingFullTraining(t *testing.T) {
	m, err := model.Lookup("meta-llama/Llama-3.1-8B")
	if err != nil {
		t.Fatal(err)
	}
	job := Job{SeqLen: 1024, AllocConf: "roundup_power2_divisions:4"}
	r, err := Estimate(m, job)
	if err != nil {
		t.Fatal(err)
	}
	var row *Component
	for i := range r.PerGPU.Components {
		if r.PerGPU.Components[i].Name == "allocator_rounding" {
			row = &r.PerGPU.Components[i]
		}
	}
	if row == nil {
		t.Fatal("no allocator_rounding row")
	}
	// Pure bf16 training (the default): the two embeddings' weights round
	// 22 MiB each, their two Adam states in bf16 as much, and their bf16
	// gradients, alive at the step (the largest phase), 22 MiB each.
	want := units.Bytes(44+88+44) * units.MiB
	got := row.Bytes
	if row.MaxBytes > got {
		got = row.MaxBytes
	}
	if got != want {
		t.Errorf("allocator_rounding at most %d, want %d (weights 44 MiB + states 88 MiB + gradients 44 MiB)", got, want)
	}
}

func TestAllocConfJobErrors(t *testing.T) {
	m, err := model.Lookup("meta-llama/Llama-3.1-8B")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		job  Job
		want string
	}{
		{"PyTorch's spelling of booleans", Job{SeqLen: 512, AllocConf: "expandable_segments:true"}, `alloc_conf: expandable_segments: "true": want True or False`},
		{"expandable segments on torch 2.0", Job{SeqLen: 512, AllocConf: "expandable_segments:True", Stack: Stack{"torch": "2.0.1"}}, "needs torch 2.1"},
		{"inference checks it too", Job{Mode: Inference, PromptLen: 128, GenLen: 16, AllocConf: "max_split_size_mb:4"}, "max_split_size_mb: 4 MiB: want at least 20"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Estimate(m, tt.job)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestAllocConfFrameworkDefaults checks the configurations frameworks
// set: torchtitan's launch script from 2024-10 on, and nothing before;
// a stated configuration wins.
func TestAllocConfFrameworkDefaults(t *testing.T) {
	m, err := model.Lookup("meta-llama/Llama-3.1-8B")
	if err != nil {
		t.Fatal(err)
	}
	base := Job{SeqLen: 1024, Framework: "torchtitan"}
	r, err := Estimate(m, base)
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(&r, "assuming expandable_segments:True") || rowOf(&r, "segment_slack") != 0 {
		t.Errorf("current torchtitan: want expandable segments assumed (no segment slack), got slack %d, warnings %q", rowOf(&r, "segment_slack"), r.Warnings)
	}
	old := base
	old.Stack = Stack{"torchtitan": "2024-03"}
	if r, err = Estimate(m, old); err != nil {
		t.Fatal(err)
	}
	if hasWarning(&r, "assuming expandable_segments") || rowOf(&r, "segment_slack") == 0 {
		t.Errorf("torchtitan of 2024-03: want the allocator's defaults, got slack %d, warnings %q", rowOf(&r, "segment_slack"), r.Warnings)
	}
	stated := base
	stated.AllocConf = "expandable_segments:False"
	if r, err = Estimate(m, stated); err != nil {
		t.Fatal(err)
	}
	if hasWarning(&r, "assuming expandable_segments") || rowOf(&r, "segment_slack") == 0 {
		t.Errorf("stated configuration: want it used, got slack %d, warnings %q", rowOf(&r, "segment_slack"), r.Warnings)
	}
	inf, err := Estimate(m, Job{Mode: Inference, PromptLen: 128, GenLen: 16, AllocConf: "expandable_segments:True"})
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(&inf, "keep the fragmentation_inference fraction") {
		t.Errorf("inference with an allocator configuration: want a note that it is not derived, got %q", inf.Warnings)
	}
}
