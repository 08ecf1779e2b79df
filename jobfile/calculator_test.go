package jobfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

const calcFile = `{
  "model": {"name": "llama2-7b", "num_parameters": "7B", "num_layers": 32, "hidden_size": 4096,
            "num_attention_heads": 32, "vocab_size": 32000, "max_seq_len": 4096, "largest_layer_params": "200M"},
  "training": {"batch_size": 4, "gradient_accumulation_steps": 8, "optimizer": "adamw", "dtype": "bf16",
               "activation_checkpointing": 2},
  "parallelism": {"tensor_parallel_size": 1, "pipeline_parallel_size": 1, "data_parallel_size": 8,
                  "sequence_parallel": false},
  "engine": {"type": "deepspeed", "zero_stage": 3, "offload_optimizer": "cpu", "offload_param": "none",
             "zero_init": true},
  "hardware": {"num_gpus": 8, "gpu_memory_gb": 80}
}`

func TestParseCalculator(t *testing.T) {
	for _, name := range []string{"calc.json", "calc.anything"} {
		f, err := Parse([]byte(calcFile), name)
		if err != nil {
			t.Fatal(err)
		}
		want := memory.Job{Mode: memory.Train, SeqLen: 4096, MicroBatch: 4, GradAccum: 8, Optimizer: "adamw_torch", Dtype: "bf16",
			MasterWeights: "fp32", GradCheckpoint: "selective", TP: 1, PP: 1, DP: 8, Engine: "deepspeed", ZeRO: 3,
			OffloadOptimizer: "cpu", OffloadParams: "none", NumGPUs: 8, GPUMemory: 80 * units.GiB}
		if diff := cmp.Diff(want, f.Job); diff != "" {
			t.Errorf("job (-want +got):\n%s", diff)
		}
		if f.Layout != LayoutCalculator || f.Shape == nil || f.Shape.Params != 7e9 || f.Shape.Layers != 32 || f.Shape.Name != "llama2-7b" {
			t.Errorf("layout %q shape %+v", f.Layout, f.Shape)
		}
		notes := strings.Join(f.Notes, "\n")
		for _, w := range []string{"largest_layer_params", "mixed precision", "selective", "zero_init", "GiB"} {
			if !strings.Contains(notes, w) {
				t.Errorf("notes lack %q:\n%s", w, notes)
			}
		}
		if !f.Has("master_weights") || f.Has("cp") {
			t.Errorf("keys %v", f.Keys)
		}
	}
}

func TestParseCalculatorMoE(t *testing.T) {
	f, err := Parse([]byte(`{"model": {"num_parameters": "47B", "num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
		"moe_enabled": true, "num_experts": 8, "top_k": 2, "expert_intermediate_size": 14336}, "training": {}}`), "moe.json")
	if err != nil {
		t.Fatal(err)
	}
	if f.Shape.Experts != 8 || f.Shape.ExpertsPerToken != 2 || f.Shape.ExpertFFN != 14336 || f.Job.SeqLen != 2048 {
		t.Errorf("shape %+v seq %d", f.Shape, f.Job.SeqLen)
	}
	f, err = Parse([]byte(`{"model": {"num_parameters": "7B", "num_experts": 8}, "training": {}}`), "dense.json")
	if err != nil || f.Shape.Experts != 0 {
		t.Errorf("moe_enabled false keeps experts: %+v, %v", f.Shape, err)
	}
}

func TestParseCalculatorProblems(t *testing.T) {
	src := `{"model": {"num_params": "7B"}, "training": {"batch_size": "four", "dtype": "fp7", "activation_checkpointing": 9,
		"optimiser": "adamw"}, "engine": {"type": "megatron_deepspeed", "zero_stage": 4}, "hardware": {"gpu_memory_gb": -1},
		"parallelism": [], "extra": {}}`
	_, err := Parse([]byte(src), "c.json")
	var je *Error
	if !errors.As(err, &je) {
		t.Fatalf("want *Error, got %v", err)
	}
	msg := err.Error()
	for _, w := range []string{`model.num_params: unknown key (did you mean "num_parameters"?)`, "model: give num_parameters",
		"training.batch_size: want a whole number", "training.activation_checkpointing: want a level 0-4",
		`training.optimiser: unknown key (did you mean "optimizer"?)`, "megatron_deepspeed is not modelled",
		"engine.zero_stage: want a stage 0-3", "hardware.gpu_memory_gb: want a positive size", "parallelism: want an object",
		"extra: unknown key", "training.dtype: "} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
}
