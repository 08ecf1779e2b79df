package trainconfig

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBadValues checks that a value of the wrong type or out of range
// fails the parse with a [*ValueError] naming the key path, the value and
// what was expected, instead of being replaced by a default.
func TestBadValues(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		in     string
		key    string // the key path of the (first) bad value
		got    string
		want   string // a substring of what the key accepts
	}{
		// DeepSpeed
		{"stage out of range", DeepSpeed, `{"zero_optimization": {"stage": 7}}`, "zero_optimization.stage", "7", "0, 1, 2 or 3"},
		{"stage a word", DeepSpeed, `{"zero_optimization": {"stage": "three"}}`, "zero_optimization.stage", `"three"`, "0, 1, 2 or 3"},
		{"stage auto", DeepSpeed, `{"zero_optimization": {"stage": "auto"}}`, "zero_optimization.stage", `"auto"`, "0, 1, 2 or 3"},
		{"negative reduce bucket", DeepSpeed, `{"zero_optimization": {"reduce_bucket_size": -5e8}}`, "zero_optimization.reduce_bucket_size", "-5e+08", `from 0 or "auto"`},
		{"negative allgather bucket", DeepSpeed, `{"zero_optimization": {"allgather_bucket_size": -1}}`, "zero_optimization.allgather_bucket_size", "-1", "from 0"},
		{"negative prefetch bucket", DeepSpeed, `{"zero_optimization": {"stage3_prefetch_bucket_size": -1}}`, "zero_optimization.stage3_prefetch_bucket_size", "-1", "from 0"},
		{"negative max live", DeepSpeed, `{"zero_optimization": {"stage3_max_live_parameters": -1e9}}`, "zero_optimization.stage3_max_live_parameters", "-1e+09", "from 0"},
		{"negative reuse distance", DeepSpeed, `{"zero_optimization": {"stage3_max_reuse_distance": -1}}`, "zero_optimization.stage3_max_reuse_distance", "-1", "from 0"},
		{"reuse distance auto", DeepSpeed, `{"zero_optimization": {"stage3_max_reuse_distance": "auto"}}`, "zero_optimization.stage3_max_reuse_distance", `"auto"`, "reduce_bucket_size, stage3_prefetch_bucket_size"},
		{"negative persistence", DeepSpeed, `{"zero_optimization": {"stage3_param_persistence_threshold": -10}}`, "zero_optimization.stage3_param_persistence_threshold", "-10", "from 0"},
		{"fractional sub group", DeepSpeed, `{"zero_optimization": {"sub_group_size": 1.5}}`, "zero_optimization.sub_group_size", "1.5", "whole number"},
		{"auto where HF does not resolve it", DeepSpeed, `{"zero_optimization": {"allgather_bucket_size": "auto"}}`, "zero_optimization.allgather_bucket_size", `"auto"`, "reduce_bucket_size, stage3_prefetch_bucket_size"},
		{"offload to disk", DeepSpeed, `{"zero_optimization": {"stage": 3, "offload_param": {"device": "disk"}}}`, "zero_optimization.offload_param.device", `"disk"`, "none, cpu or nvme"},
		{"offload ratio above one", DeepSpeed, `{"zero_optimization": {"offload_optimizer": {"device": "cpu", "ratio": 2}}}`, "zero_optimization.offload_optimizer.ratio", "2", "fraction from 0 to 1"},
		{"offload not a mapping", DeepSpeed, `{"zero_optimization": {"offload_optimizer": "cpu"}}`, "zero_optimization.offload_optimizer", `"cpu"`, "mapping"},
		{"fp16 and bf16 both enabled", DeepSpeed, `{"fp16": {"enabled": true}, "bf16": {"enabled": true}, "zero_optimization": {}}`, "fp16.enabled", "true", "false when bf16.enabled is true"},
		{"enabled not a boolean", DeepSpeed, `{"fp16": {"enabled": "maybe"}, "zero_optimization": {}}`, "fp16.enabled", `"maybe"`, `true, false or "auto"`},
		{"fp16 not a section", DeepSpeed, `{"fp16": true, "zero_optimization": {}}`, "fp16", "true", "mapping"},
		{"micro batch zero", DeepSpeed, `{"train_micro_batch_size_per_gpu": 0}`, "train_micro_batch_size_per_gpu", "0", `positive integer or "auto"`},
		{"accumulation negative", DeepSpeed, `{"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": -2}`, "gradient_accumulation_steps", "-2", "positive integer"},
		{"batch not divisible", DeepSpeed, `{"train_batch_size": 10, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}`, "train_batch_size", "10", "multiple of"},
		{"unknown optimizer", DeepSpeed, `{"optimizer": {"type": "Shampoo9000"}, "zero_optimization": {}}`, "optimizer.type", `"Shampoo9000"`, "torch.optim class"},
		{"torch_adam a word", DeepSpeed, `{"optimizer": {"type": "Adam", "params": {"torch_adam": "perhaps"}}, "zero_optimization": {}}`, "optimizer.params.torch_adam", `"perhaps"`, "true or false"},
		{"overlap_comm a word", DeepSpeed, `{"zero_optimization": {"overlap_comm": "often"}}`, "zero_optimization.overlap_comm", `"often"`, "true, false"},
		{"legacy cpu_offload a number", DeepSpeed, `{"zero_optimization": {"cpu_offload": 2}}`, "zero_optimization.cpu_offload", "2", "true or false"},
		{"zero section a list", DeepSpeed, `{"zero_optimization": [3]}`, "zero_optimization", "a list", "mapping"},
		// TrainingArguments
		{"hf batch zero", TrainingArgs, `{"per_device_train_batch_size": 0}`, "per_device_train_batch_size", "0", "positive integer"},
		{"hf bf16 and fp16", TrainingArgs, `{"bf16": true, "fp16": true, "output_dir": "x"}`, "fp16", "true", "at most one of bf16 and fp16"},
		{"hf bf16 a word", TrainingArgs, `{"bf16": "sometimes", "output_dir": "x"}`, "bf16", `"sometimes"`, "true or false"},
		{"hf dtype unknown", TrainingArgs, `{"torch_dtype": "float8", "output_dir": "x"}`, "torch_dtype", `"float8"`, "bfloat16"},
		{"hf bucket negative", TrainingArgs, `{"ddp_bucket_cap_mb": -25, "output_dir": "x"}`, "ddp_bucket_cap_mb", "-25", "positive number"},
		{"hf fsdp option unknown", TrainingArgs, `{"fsdp": "full_shard offlaod", "output_dir": "x"}`, "fsdp", `"offlaod"`, "full_shard"},
		{"hf fsdp version 3", TrainingArgs, `{"fsdp": "full_shard", "fsdp_config": {"version": 3}, "output_dir": "x"}`, "fsdp_config.version", "3", "1 or 2"},
		{"hf lora dropout", TrainingArgs, `{"lora_dropout": 1.5, "output_dir": "x"}`, "lora_dropout", "1.5", "probability"},
		{"hf use_peft a number", TrainingArgs, `{"use_peft": 3, "output_dir": "x"}`, "use_peft", "3", "true or false"},
		{"hf liger a word", TrainingArgs, `{"use_liger_kernel": "please", "output_dir": "x"}`, "use_liger_kernel", `"please"`, "true or false"},
		{"hf deepspeed a number", TrainingArgs, `{"deepspeed": 3, "output_dir": "x"}`, "deepspeed", "3", "DeepSpeed config object"},
		// accelerate
		{"accelerate zero stage", Accelerate, "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 5\n", "deepspeed_config.zero_stage", "5", "0, 1, 2 or 3"},
		{"accelerate offload disk", Accelerate, "distributed_type: DEEPSPEED\ndeepspeed_config:\n  offload_param_device: disk\n", "deepspeed_config.offload_param_device", `"disk"`, "none, cpu or nvme"},
		{"accelerate mixed precision", Accelerate, "distributed_type: MULTI_GPU\nmixed_precision: fp4\n", "mixed_precision", `"fp4"`, "no, fp16, bf16 or fp8"},
		{"accelerate distributed type", Accelerate, "distributed_type: MULTI_TPU_GPU\n", "distributed_type", `"MULTI_TPU_GPU"`, "DistributedType"},
		{"accelerate processes negative", Accelerate, "distributed_type: MULTI_GPU\nnum_processes: -8\n", "num_processes", "-8", "positive integer"},
		{"accelerate fsdp strategy", Accelerate, "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: 9\n", "fsdp_config.fsdp_sharding_strategy", "9", "sharding strategy"},
		{"accelerate megatron recompute", Accelerate, "distributed_type: MEGATRON_LM\nmegatron_lm_config:\n  megatron_lm_recompute_activations: maybe\n", "megatron_lm_config.megatron_lm_recompute_activations", `"maybe"`, "true or false"},
		// LLaMA-Factory
		{"lf cutoff zero", LLaMAFactory, "finetuning_type: lora\ncutoff_len: 0\n", "cutoff_len", "0", "positive integer"},
		{"lf flash_attn unknown", LLaMAFactory, "finetuning_type: lora\nflash_attn: fa9\n", "flash_attn", `"fa9"`, "auto, disabled, sdpa or fa2"},
		{"lf bnb 3 bits", LLaMAFactory, "finetuning_type: lora\nquantization_bit: 3\n", "quantization_bit", "3", "4 or 8 with bitsandbytes"},
		{"lf quantization bits a word", LLaMAFactory, "finetuning_type: lora\nquantization_bit: four\n", "quantization_bit", `"four"`, "number of bits"},
		{"lf pure_bf16 a word", LLaMAFactory, "finetuning_type: full\npure_bf16: sure\n", "pure_bf16", `"sure"`, "true or false"},
		{"lf freeze layers", LLaMAFactory, "finetuning_type: freeze\nfreeze_trainable_layers: two\n", "freeze_trainable_layers", `"two"`, "whole number of layers"},
		{"lf bf16 and fp16", LLaMAFactory, "finetuning_type: lora\nbf16: true\nfp16: true\n", "fp16", "true", "at most one"},
		// axolotl
		{"axolotl base model a list", Axolotl, "base_model: [a, b]\nmicro_batch_size: 1\n", "base_model", "a list", "non-empty string"},
		{"axolotl micro batch", Axolotl, "base_model: x\nmicro_batch_size: -1\n", "micro_batch_size", "-1", "positive integer"},
		{"axolotl bf16 a word", Axolotl, "base_model: x\nbf16: often\n", "bf16", `"often"`, `true, false or "auto"`},
		{"axolotl load_in_4bit a number", Axolotl, "base_model: x\nload_in_4bit: 4\n", "load_in_4bit", "4", "true or false"},
		{"axolotl flash attention a word", Axolotl, "base_model: x\nflash_attention: fast\n", "flash_attention", `"fast"`, "true or false"},
		// torchtune
		{"torchtune dtype", Torchtune, "model:\n  _component_: torchtune.models.llama3.lora_llama3_8b\ndtype: fp8\n", "dtype", `"fp8"`, "bf16, fp16 or fp32"},
		{"torchtune batch", Torchtune, "model:\n  _component_: torchtune.models.llama3.llama3_8b\nbatch_size: 0\n", "batch_size", "0", "positive integer"},
		{"torchtune lora dropout", Torchtune, "model:\n  _component_: torchtune.models.llama3.lora_llama3_8b\n  lora_dropout: 2\n", "model.lora_dropout", "2", "probability"},
		{"torchtune apply to mlp", Torchtune, "model:\n  _component_: torchtune.models.llama3.lora_llama3_8b\n  apply_lora_to_mlp: yes please\n", "model.apply_lora_to_mlp", `"yes please"`, "true or false"},
		{"torchtune optimizer not a component", Torchtune, "model:\n  _component_: torchtune.models.llama3.llama3_8b\noptimizer: adamw\n", "optimizer", `"adamw"`, "_component_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseAs([]byte(tt.in), "cfg.yaml", tt.format)
			if err == nil {
				t.Fatalf("no error; got job %+v keys %v ignored %v", c.Job, c.Keys, c.Ignored)
			}
			var ve *ValueError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v (%T), want a *ValueError", err, err)
			}
			if ve.File != "cfg.yaml" || len(ve.Values) == 0 {
				t.Fatalf("ValueError %+v: want the file named and a value", ve)
			}
			v := ve.Values[0]
			if v.Key != tt.key || v.Got != tt.got || !strings.Contains(v.Want, tt.want) {
				t.Errorf("bad value %+v, want key %q, got %q, want containing %q", v, tt.key, tt.got, tt.want)
			}
			msg := err.Error()
			for _, part := range []string{"cfg.yaml", tt.key, tt.got, tt.want} {
				if !strings.Contains(msg, part) {
					t.Errorf("message %q lacks %q", msg, part)
				}
			}
		})
	}
}

// TestValueErrorListsAll checks that every bad value of a file is
// reported at once, sorted by key, in the documented message form.
func TestValueErrorListsAll(t *testing.T) {
	in := `{"zero_optimization": {"stage": 7, "reduce_bucket_size": -1, "offload_param": {"device": "disk"}},
		"fp16": {"enabled": true}, "bf16": {"enabled": true}, "some_new_key": 1}`
	_, err := ParseDeepSpeed([]byte(in), "ds_config.json")
	var ve *ValueError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a *ValueError", err)
	}
	var keys []string
	for _, v := range ve.Values {
		keys = append(keys, v.Key)
	}
	want := []string{"fp16.enabled", "zero_optimization.offload_param.device", "zero_optimization.reduce_bucket_size", "zero_optimization.stage"}
	if d := cmp.Diff(want, keys); d != "" {
		t.Errorf("bad keys (-want +got):\n%s", d)
	}
	wantMsg := `ds_config.json: 4 values cannot be used:
  fp16.enabled: true: want false when bf16.enabled is true (DeepSpeed trains in fp16 or bf16, not both)
  zero_optimization.offload_param.device: "disk": want none, cpu or nvme
  zero_optimization.reduce_bucket_size: -1: want a whole number of elements from 0 or "auto"
  zero_optimization.stage: 7: want 0, 1, 2 or 3`
	if d := cmp.Diff(wantMsg, err.Error()); d != "" {
		t.Errorf("message (-want +got):\n%s", d)
	}
	one := &ValueError{File: "ds_config.json", Values: ve.Values[3:]}
	if got := one.Error(); got != "ds_config.json: zero_optimization.stage: 7: want 0, 1, 2 or 3" {
		t.Errorf("one value: %q", got)
	}
}

// TestUnknownKeysStayWarnings checks that keys the reader does not know
// are still reported as ignored, not as errors.
func TestUnknownKeysStayWarnings(t *testing.T) {
	c, err := ParseDeepSpeed([]byte(`{"zero_optimization": {"stage": 2, "brand_new_knob": 3}, "shiny": true}`), "ds.json")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"shiny", "zero_optimization.brand_new_knob"}, ignoredKeys(c)); d != "" {
		t.Errorf("ignored (-want +got):\n%s", d)
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, "unknown keys") {
		t.Errorf("warnings %q do not call them unknown", w)
	}
}

// TestDescribe checks how values are shown in messages.
func TestDescribe(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want string
	}{
		{nil, "null"}, {7, "7"}, {int64(-3), "-3"}, {2.5, "2.5"}, {5e8, "5e+08"}, {true, "true"}, {"disk", `"disk"`},
		{[]any{1}, "a list"}, {map[string]any{}, "an object"},
		{strings.Repeat("x", 100), `"` + strings.Repeat("x", maxShown) + `…"`},
	} {
		if got := describe(tt.v); got != tt.want {
			t.Errorf("describe(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}
