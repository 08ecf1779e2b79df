package trainconfig

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
)

// readTestdata reads a file of testdata or fails the test.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// ignoredKeys lists the ignored keys of a config.
func ignoredKeys(c *Config) []string {
	var out []string
	for _, ig := range c.Ignored {
		out = append(out, ig.Key)
	}
	return out
}

func TestParseFiles(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		file    string
		format  Format
		model   string
		want    memory.Job // the fields named in keys
		keys    []string
		ignored []string
		notes   []string // substrings each expected in some note
		dsFile  string
	}{
		{
			file: "ds_zero3_auto.json", format: DeepSpeed,
			want: memory.Job{Engine: "deepspeed", ZeRO: 3, Optimizer: "adamw_torch_fused", OffloadOptimizer: "cpu", OffloadParams: "none",
				OverlapComm: &yes, ContiguousGradients: &yes, SubGroupSize: 1e9, MaxLiveParameters: new(int64(1e9)), MaxReuseDistance: new(int64(1e9))},
			keys: []string{"contiguous_gradients", "engine", "offload_optimizer", "offload_params", "optimizer", "overlap_comm",
				"stage3_max_live_parameters", "stage3_max_reuse_distance", "sub_group_size", "zero"},
			ignored: []string{"zero_optimisation_typo", "zero_optimization.zero_hpz_partition_size"},
			notes: []string{"zero_optimization.reduce_bucket_size → hidden²", "zero_optimization.stage3_prefetch_bucket_size → 0.9·hidden²",
				"stage3_param_persistence_threshold → 10·hidden", "train_micro_batch_size_per_gpu → the Trainer's per_device_train_batch_size",
				"bf16.enabled → the Trainer's --bf16"},
		},
		{
			file: "ds_zero2.json", format: DeepSpeed,
			want: memory.Job{Engine: "deepspeed", ZeRO: 2, Dtype: "bf16", MicroBatch: 2, GradAccum: 4, NumGPUs: 8,
				AllgatherBucketSize: 2e8, ReduceBucketSize: 2e8, OverlapComm: &yes, ContiguousGradients: &yes},
			keys: []string{"allgather_bucket_size", "contiguous_gradients", "dtype", "engine", "grad_accum", "num_gpus",
				"overlap_comm", "per_device_batch", "reduce_bucket_size", "zero"},
			notes: []string{"8 GPUs from train_batch_size 64"},
		},
		{
			file: "training_args.json", format: TrainingArgs,
			want: memory.Job{MicroBatch: 4, GradAccum: 8, Dtype: "bf16", MasterWeights: "fp32", Optimizer: "adamw_torch_fused",
				GradCheckpoint: "full", SeqLen: 2048, Packed: &yes, Engine: "fsdp2", FSDPStrategy: "full_shard"},
			keys: []string{"dtype", "engine", "fsdp_strategy", "grad_accum", "grad_checkpoint", "master_weights", "optimizer",
				"packed", "per_device_batch", "seq_len"},
			ignored: []string{"fsdp_config.forward_prefetch", "some_new_flag"},
		},
		{
			file: "accelerate_fsdp.yaml", format: Accelerate,
			want:    memory.Job{Engine: "fsdp", FSDPStrategy: "full_shard", Dtype: "bf16", MasterWeights: "fp32", NumGPUs: 16, Nodes: 2},
			keys:    []string{"dtype", "engine", "fsdp_strategy", "master_weights", "nodes", "num_gpus"},
			ignored: []string{"fsdp_config.fsdp_forward_prefetch"},
		},
		{
			file: "accelerate_ds.yaml", format: Accelerate,
			want: memory.Job{Engine: "deepspeed", ZeRO: 3, Dtype: "bf16", NumGPUs: 8, Nodes: 1, GradAccum: 2,
				OffloadOptimizer: "nvme", OffloadParams: "cpu"},
			keys: []string{"dtype", "engine", "grad_accum", "nodes", "num_gpus", "offload_optimizer", "offload_params", "zero"},
		},
		{
			file: "llamafactory_lora.yaml", format: LLaMAFactory, model: "meta-llama/Llama-2-7b-hf", dsFile: "examples/deepspeed/ds_z2_config.json",
			want: memory.Job{Method: "lora", LoRARank: 8, LoRATargets: []string{"all-linear"}, SeqLen: 2048, MicroBatch: 1, GradAccum: 8,
				Dtype: "bf16", Attention: "flash", GradCheckpoint: "full", Engine: "deepspeed"},
			keys: []string{"attn", "dtype", "engine", "grad_accum", "grad_checkpoint", "lora_rank", "lora_target_modules", "method",
				"per_device_batch", "seq_len"},
		},
		{
			file: "llamafactory_qlora.yaml", format: LLaMAFactory, model: "meta-llama/Llama-2-7b-hf",
			want: memory.Job{Method: "qlora", LoRATargets: []string{"q_proj", "v_proj"}, SeqLen: 1024, MicroBatch: 2, ComputeDtype: "bf16",
				GradCheckpoint: "full", DoubleQuant: &no},
			keys: []string{"compute_dtype", "double_quant", "grad_checkpoint", "lora_target_modules", "method", "per_device_batch", "seq_len"},
		},
		{
			file: "llamafactory_full.yaml", format: LLaMAFactory, model: "meta-llama/Llama-2-7b-hf",
			want:    memory.Job{Method: "full", SeqLen: 1024, MicroBatch: 1, Dtype: "fp32", ComputeDtype: "bf16", GradCheckpoint: "none", FusedLoss: "liger"},
			keys:    []string{"compute_dtype", "dtype", "fused_loss", "grad_checkpoint", "method", "per_device_batch", "seq_len"},
			ignored: []string{"stage"},
		},
		{
			file: "axolotl_qlora.yml", format: Axolotl, model: "NousResearch/Llama-2-7b-hf",
			want: memory.Job{Method: "qlora", ComputeDtype: "bf16", SeqLen: 4096, Packed: &yes, LoRARank: 32, LoRAAlpha: 16, LoRADropout: 0.05,
				LoRATargets: []string{"all-linear"}, GradAccum: 4, MicroBatch: 2, Optimizer: "paged_adamw_32bit",
				GradCheckpoint: "full", Attention: "flash"},
			keys: []string{"attn", "compute_dtype", "grad_accum", "grad_checkpoint", "lora_alpha", "lora_dropout", "lora_rank", "lora_target_modules",
				"method", "optimizer", "packed", "per_device_batch", "seq_len"},
			ignored: []string{"fancy_new_option", "xformers_attention"},
			notes:   []string{"bf16 auto"},
		},
		{
			file: "torchtune_lora.yaml", format: Torchtune,
			want: memory.Job{Framework: "torchtune", Method: "lora", LoRARank: 8, LoRAAlpha: 16,
				LoRATargets: []string{"q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
				SeqLen:      4096, Packed: &yes, MicroBatch: 2, GradAccum: 8, Optimizer: "adamw_torch_fused", GradCheckpoint: "full", Dtype: "bf16"},
			keys: []string{"activation_offload", "dtype", "framework", "grad_accum", "grad_checkpoint", "lora_alpha", "lora_dropout",
				"lora_rank", "lora_target_modules", "method", "optimizer", "packed", "per_device_batch", "seq_len", "torch_compile"},
			notes: []string{"lora_llama3_1_8b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c, err := Parse(readTestdata(t, tt.file), tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if c.Format != tt.format || c.Model != tt.model || c.DeepSpeedFile != tt.dsFile {
				t.Errorf("format %s model %q deepspeed file %q, want %s %q %q", c.Format, c.Model, c.DeepSpeedFile, tt.format, tt.model, tt.dsFile)
			}
			if diff := cmp.Diff(tt.keys, c.Keys); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			var got memory.Job
			c.Apply(&got, nil)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("job (-want +got):\n%s", diff)
			}
			for _, k := range tt.ignored {
				if !slices.Contains(ignoredKeys(c), k) {
					t.Errorf("%s not reported as ignored (ignored: %v)", k, ignoredKeys(c))
				}
			}
			notes := strings.Join(c.Notes, "\n")
			for _, n := range tt.notes {
				if !strings.Contains(notes, n) {
					t.Errorf("no note containing %q in:\n%s", n, notes)
				}
			}
		})
	}
}

// TestParsedJobsEstimate runs every example through the estimator on a
// catalog model: what the readers produce is a job the model accepts.
func TestParsedJobsEstimate(t *testing.T) {
	m, err := model.Lookup("meta-llama/Llama-2-7b-hf")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/*.*")
	if len(files) < 10 {
		t.Fatalf("%d example configs, want at least 10", len(files))
	}
	for _, f := range files {
		c, err := Parse(readTestdata(t, filepath.Base(f)), f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		job := memory.Job{SeqLen: 1024}
		c.Apply(&job, nil)
		if job.Engine != "" && job.NumGPUs == 0 {
			job.NumGPUs = 8
		}
		if job.Engine == "fsdp" && job.NumGPUs%max(job.Nodes, 1) != 0 {
			t.Fatalf("%s: bad example", f)
		}
		if _, err := memory.Estimate(m, job); err != nil {
			t.Errorf("%s: estimate: %v", f, err)
		}
	}
}

func TestWarningsNameKeys(t *testing.T) {
	c, err := ParseDeepSpeed(readTestdata(t, "ds_zero3_auto.json"), "ds_config.json")
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(c.Warnings(), "\n")
	for _, want := range []string{"ds_config.json: ignored unknown keys: zero_optimisation_typo",
		"ignored settings not modelled: zero_optimization.zero_hpz_partition_size"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
}

func TestDeepSpeedValues(t *testing.T) {
	tests := []struct {
		name, in string
		check    func(c *Config) string
	}{
		{"fp16", `{"fp16": {"enabled": true}, "zero_optimization": {"stage": 1}}`, func(c *Config) string {
			if c.Job.Dtype != "fp16" || c.Job.ZeRO != 1 {
				return "want fp16, ZeRO-1"
			}
			return ""
		}},
		{"both disabled is fp32", `{"fp16": {"enabled": false}, "bf16": {"enabled": false}, "train_micro_batch_size_per_gpu": 1}`, func(c *Config) string {
			if c.Job.Dtype != "fp32" || c.Job.ComputeDtype != "fp32" {
				return "want pure fp32"
			}
			return ""
		}},
		{"legacy cpu_offload", `{"zero_optimization": {"stage": 2, "cpu_offload": true}}`, func(c *Config) string {
			if c.Job.OffloadOptimizer != "cpu" {
				return "want the optimizer offloaded"
			}
			return ""
		}},
		{"torch.optim optimizer is not modelled", `{"optimizer": {"type": "SGD"}, "zero_optimization": {}}`, func(c *Config) string {
			if c.Has("optimizer") || !slices.Contains(ignoredKeys(c), "optimizer.type") {
				return "want the type reported as not modelled"
			}
			return ""
		}},
		{"deprecated boolean zero_optimization", `{"zero_optimization": true, "train_micro_batch_size_per_gpu": 1}`, func(c *Config) string {
			if !c.Has("zero") || c.Job.ZeRO != 1 {
				return "want stage 1"
			}
			return ""
		}},
		{"auto buckets and zero threshold", `{"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_param_persistence_threshold": 0, "stage3_max_live_parameters": 2e8, "sub_group_size": 0}}`, func(c *Config) string {
			if c.Has("reduce_bucket_size") || !c.Has("stage3_param_persistence_threshold") || c.Job.ParamPersistenceThreshold == nil ||
				*c.Job.ParamPersistenceThreshold != 0 || c.Job.MaxLiveParameters == nil || *c.Job.MaxLiveParameters != 2e8 ||
				c.Has("sub_group_size") || !slices.Contains(ignoredKeys(c), "zero_optimization.sub_group_size") {
				return "want auto left to the HF framework, threshold 0 and 2e8 read, a sub-group of 0 reported as not modelled"
			}
			return ""
		}},
		{"max reuse distance and its alias", `{"zero_optimization": {"stage": 3, "max_reuse_distance": 5e8}}`, func(c *Config) string {
			if !c.Has("stage3_max_reuse_distance") || c.Job.MaxReuseDistance == nil || *c.Job.MaxReuseDistance != 5e8 {
				return "want the stage3_-less alias read as stage3_max_reuse_distance 5e8"
			}
			return ""
		}},
		{"max reuse distance 0", `{"zero_optimization": {"stage": 3, "stage3_max_reuse_distance": 0}}`, func(c *Config) string {
			if !c.Has("stage3_max_reuse_distance") || c.Job.MaxReuseDistance == nil || *c.Job.MaxReuseDistance != 0 ||
				slices.Contains(ignoredKeys(c), "zero_optimization.stage3_max_reuse_distance") {
				return "want 0 (release at once) read as 0, not the default"
			}
			return ""
		}},
		{"one precision enabled, the other auto", `{"fp16": {"enabled": "auto"}, "bf16": {"enabled": true}, "zero_optimization": {}}`, func(c *Config) string {
			if c.Job.Dtype != "bf16" {
				return "want bf16"
			}
			return ""
		}},
		{"offload device none", `{"zero_optimization": {"stage": 3, "offload_param": {"device": "none"}, "offload_optimizer": {"device": "nvme", "ratio": 0.3}}}`, func(c *Config) string {
			if c.Job.OffloadParams != "none" || c.Job.OffloadOptimizer != "nvme" || !slices.Contains(ignoredKeys(c), "zero_optimization.offload_optimizer.ratio") {
				return "want no parameter offload, the optimizer on NVMe, the ratio not modelled"
			}
			return ""
		}},
		{"torch adam", `{"optimizer": {"type": "Adam", "params": {"torch_adam": true}}, "zero_optimization": {}}`, func(c *Config) string {
			if c.Job.Optimizer != "adamw_torch" {
				return "want torch's AdamW"
			}
			return ""
		}},
	}
	for _, tt := range tests {
		c, err := ParseDeepSpeed([]byte(tt.in), tt.name)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if msg := tt.check(c); msg != "" {
			t.Errorf("%s: %s; got job %+v keys %v ignored %v", tt.name, msg, c.Job, c.Keys, c.Ignored)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", "empty file"},
		{"list", "[1, 2]", "want a mapping"},
		{"scalar", "3", "want a mapping"},
		{"broken json", `{"zero_optimization": {`, "broken"},
		{"unknown", `{"hello": "world"}`, "not a recognised training config"},
		{"duplicate", "a: 1\na: 2\n", `key "a" is given twice`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.in), tt.name)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("%s: err = %v, want one naming the file and containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := Parse([]byte(`{"hello": 1}`), "x"); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("unknown format: err = %v, want ErrUnknownFormat", err)
	}
	big := make([]byte, MaxSize+1)
	if _, err := Parse(big, "big"); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Errorf("oversized file: err = %v", err)
	}
	if _, err := ParseAs([]byte("a: 1"), "x", Format("ini")); err == nil {
		t.Error("unknown format name: want an error")
	}
}

func TestApplySkips(t *testing.T) {
	c, err := ParseDeepSpeed(readTestdata(t, "ds_zero2.json"), "ds.json")
	if err != nil {
		t.Fatal(err)
	}
	job := memory.Job{ZeRO: 1, MicroBatch: 16}
	done := c.Apply(&job, func(k string) bool { return k == "zero" || k == "per_device_batch" })
	if job.ZeRO != 1 || job.MicroBatch != 16 || job.GradAccum != 4 || slices.Contains(done, "zero") {
		t.Errorf("skipped keys overwritten: job %+v, applied %v", job, done)
	}
}

func TestTRLModelConfig(t *testing.T) {
	c, err := ParseTrainingArgs([]byte(`{"use_peft": true, "lora_r": 16, "lora_modules_to_save": ["lm_head"], "load_in_4bit": false,
		"dtype": "bfloat16", "bf16": true, "output_dir": "x"}`), "trl.json")
	if err != nil {
		t.Fatal(err)
	}
	j := c.Job
	if j.Method != "lora" || j.LoRARank != 16 || len(j.Trainable) != 1 || j.Trainable[0] != "lm_head" || j.Dtype != "bf16" || j.ComputeDtype != "" {
		t.Errorf("want LoRA r16 with lm_head trained on a bf16-loaded model; got %+v", j)
	}
	if len(c.Ignored) != 0 {
		t.Errorf("ignored %v", c.Ignored)
	}
}
