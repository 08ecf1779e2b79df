package accuracy

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

func TestRecordGPU(t *testing.T) {
	l40s, err := gpu.Lookup("L40S")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		job  memory.Job
		want memory.Job // GPU fields
	}{
		{"catalog alias", memory.Job{GPU: "L40S"}, memory.Job{GPU: "L40S", GPUComputeCapability: 89, GPUMemory: l40s.CUDATotal()}},
		{"record name", memory.Job{GPU: "V100-SXM2-16GB"}, memory.Job{GPU: "V100-16GB", GPUComputeCapability: 70, GPUMemory: 16 * units.GiB}},
		{"stated memory wins", memory.Job{GPU: "H100-80GB", GPUMemory: 79 * units.GiB}, memory.Job{GPU: "H100-SXM", GPUComputeCapability: 90, GPUMemory: 79 * units.GiB}},
		{"ambiguous is not guessed", memory.Job{GPU: "A100"}, memory.Job{GPU: "A100"}},
		{"unknown is not guessed", memory.Job{GPU: "24GB GPU"}, memory.Job{GPU: "24GB GPU"}},
		{"none", memory.Job{}, memory.Job{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RecordGPU(tt.job)
			if got.GPU != tt.want.GPU || got.GPUComputeCapability != tt.want.GPUComputeCapability || got.GPUMemory != tt.want.GPUMemory {
				t.Errorf("got %q cc %d memory %d, want %q cc %d memory %d", got.GPU, got.GPUComputeCapability, got.GPUMemory,
					tt.want.GPU, tt.want.GPUComputeCapability, tt.want.GPUMemory)
			}
		})
	}
	// An unresolved name is reported by the estimate, not guessed.
	m, err := model.Lookup("meta-llama/Llama-2-7b-hf")
	if err != nil {
		t.Fatal(err)
	}
	res, err := memory.Estimate(m, RecordGPU(memory.Job{GPU: "A100", SeqLen: 512}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), `"A100"`) {
		t.Errorf("warnings %q do not name the unresolved GPU", res.Warnings)
	}
}

func TestMappersResolveGPU(t *testing.T) {
	seq := 512
	rec := Record{ID: "x", Job: RecordJob{Mode: "train", SeqLen: &seq, GPU: "H100-96GB"}}
	fn, ok := mapperFor("train")
	if !ok {
		t.Fatal("no training mapper")
	}
	job, err := fn(rec)
	if err != nil {
		t.Fatal(err)
	}
	if job.GPU != "H100-96GB" || job.GPUComputeCapability != 90 || job.GPUMemory == 0 {
		t.Errorf("mapped job GPU %q cc %d memory %d, want the catalog's H100-96GB", job.GPU, job.GPUComputeCapability, job.GPUMemory)
	}
}

// TestPEFTMethodRecords maps records of the PEFT methods beyond LoRA as
// the MetaMathQA benchmark rows state them (job.peft_variant, the method
// text, seq_len counting prompt tuning's virtual tokens) and checks that
// the estimate trains exactly the record's trainable_params: the mapping
// picked the configuration the run used.
func TestPEFTMethodRecords(t *testing.T) {
	m, err := model.Lookup("meta-llama/Llama-3.2-3B")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		variant, method string
		seq             int
		trainable       int64
		wantSeq         int
	}{
		{"ia3", "IA3 (default target modules k_proj, v_proj, down_proj)", 768, 286720, 768},
		{"ia3", "IA3 on all 7 linear projections (feedforward_modules = gate/up/down)", 768, 630784, 768},
		{"vera", "VeRA r=256 on q_proj, v_proj (shared frozen random projections, trainable scaling vectors)", 768, 129024, 768},
		{"prefix_tuning", "Prefix tuning (200 virtual tokens as past key/values in all 28 layers, no projection)", 768, 11468800, 768},
		{"prompt_tuning", "Prompt tuning (200 virtual tokens)", 968, 614400, 768},
		{"p_tuning", "P-tuning (20 virtual tokens, MLP prompt encoder, hidden 3072)", 788, 28382208, 768},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			seq, n := tt.seq, tt.trainable
			rec := Record{ID: tt.variant, PEFTMethod: tt.method, Mode: "frozen_partial",
				Job: RecordJob{Mode: "train", SeqLen: &seq, PEFTVariant: tt.variant, TrainableParam: &n, Dtype: "bf16"}}
			job, err := TrainingJob(rec)
			if err != nil {
				t.Fatal(err)
			}
			if job.SeqLen != tt.wantSeq {
				t.Errorf("seq_len %d, want %d (the estimator adds the virtual tokens)", job.SeqLen, tt.wantSeq)
			}
			r, err := memory.Estimate(m, job)
			if err != nil {
				t.Fatal(err)
			}
			if r.TrainableParams != tt.trainable {
				t.Errorf("%s: trains %d, the record %d", job.PEFTVariant, r.TrainableParams, tt.trainable)
			}
		})
	}
}
