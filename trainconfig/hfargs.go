package trainconfig

import (
	"strings"
	"sync"
)

// ParseTrainingArgs reads Hugging Face TrainingArguments as JSON (the file
// HfArgumentParser.parse_json_file reads, or TrainingArguments.to_json_string
// output), including TRL's SFTConfig and ModelConfig keys (max_length,
// packing, use_peft, lora_r, load_in_4bit, ...). Names follow
// huggingface/transformers src/transformers/training_args.py and
// huggingface/trl trl/trainer/sft_config.py, trl/trainer/model_config.py.
//
// bf16/fp16 turn on autocast without changing the weights (training_args.py;
// MODEL.md §2.1): on a model loaded in fp32 — from_pretrained's default —
// that is AMP. A torch_dtype/dtype key (TRL model_init_kwargs or
// ModelConfig) states the loaded dtype instead; under DeepSpeed the engine
// casts the weights itself.
func ParseTrainingArgs(data []byte, name string) (*Config, error) {
	return ParseAs(data, name, TrainingArgs)
}

// hfNoEffect are TrainingArguments / TRL keys that do not change GPU
// memory during training.
var hfNoEffect = &keySet{keys: []string{"output_dir", "overwrite_output_dir", "do_train", "do_eval", "do_predict", "eval_strategy",
	"evaluation_strategy", "prediction_loss_only", "per_device_eval_batch_size", "per_gpu_eval_batch_size",
	"eval_accumulation_steps", "eval_delay", "learning_rate", "weight_decay", "adam_beta1", "adam_beta2",
	"adam_epsilon", "max_grad_norm", "num_train_epochs", "max_steps", "lr_scheduler_type", "lr_scheduler_kwargs",
	"warmup_ratio", "warmup_steps", "log_level", "log_level_replica", "log_on_each_node", "logging_dir",
	"logging_strategy", "logging_first_step", "logging_steps", "logging_nan_inf_filter", "save_strategy",
	"save_steps", "save_total_limit", "save_safetensors", "save_on_each_node", "save_only_model", "seed",
	"data_seed", "jit_mode_eval", "use_ipex", "use_cpu", "no_cuda", "local_rank", "ddp_backend", "tpu_num_cores",
	"tpu_metrics_debug", "debug", "dataloader_drop_last", "eval_steps", "dataloader_num_workers",
	"dataloader_prefetch_factor", "past_index", "run_name", "disable_tqdm", "remove_unused_columns", "label_names",
	"load_best_model_at_end", "metric_for_best_model", "greater_is_better", "ignore_data_skip", "report_to",
	"ddp_find_unused_parameters", "ddp_broadcast_buffers", "dataloader_pin_memory", "dataloader_persistent_workers",
	"skip_memory_metrics", "push_to_hub", "resume_from_checkpoint", "hub_model_id", "hub_strategy", "hub_token",
	"hub_private_repo", "hub_always_push", "hub_revision", "include_inputs_for_metrics", "include_for_metrics",
	"eval_do_concat_batches", "auto_find_batch_size", "full_determinism", "torchdynamo", "ray_scope", "ddp_timeout",
	"torch_compile_backend", "torch_compile_mode", "dispatch_batches", "split_batches", "include_tokens_per_second",
	"include_num_input_tokens_seen", "neftune_noise_alpha", "average_tokens_across_devices", "tf32",
	"half_precision_backend", "fp16_opt_level", "fp16_backend", "bf16_full_eval", "fp16_full_eval",
	"group_by_length", "length_column_name", "mp_parameters", "accelerator_config", "batch_eval_metrics",
	"eval_on_start", "use_mps_device", "restore_callback_states_from_checkpoint", "gradient_checkpointing_kwargs",
	"optim_args", "label_smoothing_factor", "eval_use_gather_object", "use_legacy_prediction_loop",
	"dataset_text_field", "dataset_kwargs", "dataset_num_proc", "dataset_batch_size", "eos_token", "pad_token",
	"completion_only_loss", "assistant_only_loss", "chat_template_path", "num_of_sequences", "chars_per_token",
	"dataset_name", "dataset_config", "dataset_train_split", "dataset_test_split", "trust_remote_code",
	"model_revision", "tokenizer_name_or_path", "use_fast_tokenizer", "lora_task_type",
	"use_rslora", "bnb_4bit_compute_dtype", "dataset_streaming", "shuffle_dataset", "logging_dir",
	"model_init_kwargs", "print_info", "save_strategy_steps", "project", "trackio_space_id", "liger_kernel_config",
	"torch_empty_cache_steps", "ddp_static_graph", "use_liger", "use_liger_kernel", "padding_free"}}

// hfNotModelled are keys whose memory effect is not modelled.
var hfNotModelled = &keySet{keys: []string{"optim_target_modules", "fsdp_min_num_params", "fsdp_transformer_layer_cls_to_wrap",
	"torch_empty_cache_steps", "activation_offloading", "lora_bias", "use_vllm"}}

// keySet is a set of config keys. The keys are static data; the map is
// built on first use, not when the program starts (most runs read no
// training config).
type keySet struct {
	keys []string
	once sync.Once
	set  map[string]bool
}

// has reports whether k is in s; a nil set has no keys.
func (s *keySet) has(k string) bool {
	if s == nil {
		return false
	}
	s.once.Do(func() {
		s.set = make(map[string]bool, len(s.keys))
		for _, k := range s.keys {
			s.set[k] = true
		}
	})
	return s.set[k]
}

// hfPrecision is what the bf16/fp16 flags and the load dtype say.
type hfPrecision struct {
	autocast string // bf16 or fp16 when the flag is on
	load     string // dtype the model is loaded in, if stated
}

// trainingArgs reads a TrainingArguments object.
func (r *reader) trainingArgs(obj map[string]any) {
	j := &r.cfg.Job
	var prec hfPrecision
	for _, k := range sortedKeys(obj) {
		v := obj[k]
		switch k {
		case "per_device_train_batch_size", "per_gpu_train_batch_size":
			r.intKey(k, v, "per_device_batch")
		case "gradient_accumulation_steps":
			r.intKey(k, v, "grad_accum")
		case "max_seq_length", "max_length", "model_max_length":
			if isNull(v) {
				continue
			}
			r.intKey(k, v, "seq_len")
		case "packing":
			r.boolKey(k, v, "packed")
		case "bf16", "fp16":
			if !r.flag(k, v) {
				continue
			}
			if prec.autocast != "" {
				// TrainingArguments.__post_init__: "At most one of fp16
				// and bf16 can be True, but not both".
				r.bad(k, v, "false when %s is true (at most one of bf16 and fp16)", prec.autocast)
				continue
			}
			prec.autocast = k
		case "torch_dtype", "dtype":
			if d, ok := toString(v); ok && !isAuto(v) {
				if dt, ok := dtypeOf(d); ok {
					prec.load = dt
					continue
				}
			}
			if !isAuto(v) && !isNull(v) {
				r.bad(k, v, `a torch dtype (bfloat16, float16, float32) or "auto"`)
			}
		case "optim":
			r.stringKey(k, v, "optimizer")
		case "gradient_checkpointing":
			r.boolKey(k, v, "grad_checkpoint")
		case "torch_compile":
			r.boolKey(k, v, "torch_compile")
		case "ddp_bucket_cap_mb":
			if f, ok := toFloat(v); ok && f > 0 {
				j.DDPBucketCapMB = f
				r.set("ddp_bucket_cap_mb")
			} else if !isNull(v) {
				r.bad(k, v, "a positive number of MB")
			}
		case "deepspeed":
			r.hfDeepSpeed(v)
		case "fsdp":
			r.hfFSDP(k, v)
		case "fsdp_config":
			r.fsdpConfig(k, v)
		case "attn_implementation":
			r.stringKey(k, v, "attn")
		case "model_name_or_path":
			if s, ok := r.stringValue(k, v); ok {
				r.cfg.Model = s
			}
		default:
			if !r.peftKey(k, v) {
				r.unlisted(k, k, hfNoEffect, hfNotModelled)
			}
		}
	}
	r.hfFinishPrecision(prec, obj)
}

// hfFinishPrecision sets the precision recipe from the flags, the load
// dtype and the engine.
func (r *reader) hfFinishPrecision(prec hfPrecision, obj map[string]any) {
	j := &r.cfg.Job
	for _, k := range []string{"use_liger_kernel", "use_liger"} {
		r.onTrue(k, obj[k], func() { j.FusedLoss = "liger" }, "fused_loss")
	}
	quant := j.Method == "qlora" || (j.Dtype != "" && j.Dtype != "fp32" && j.Dtype != "bf16" && j.Dtype != "fp16")
	switch {
	case quant && prec.autocast != "":
		// A quantized base keeps its storage; bf16/fp16 is the compute dtype.
		j.ComputeDtype = prec.autocast
		r.set("compute_dtype")
	case j.Engine == "deepspeed" && prec.autocast != "":
		// The DeepSpeed engine casts the model to the enabled precision
		// and keeps fp32 masters itself.
		if !r.keys["dtype"] {
			j.Dtype = prec.autocast
			r.set("dtype")
		}
	case prec.load != "" && prec.load != "fp32":
		j.Dtype = prec.load
		r.set("dtype")
	case prec.autocast != "" && (j.Engine == "fsdp" || j.Engine == "fsdp2"):
		// FSDP MixedPrecision over the fp32 model: fp32 shards, bf16 compute.
		j.Dtype, j.MasterWeights = prec.autocast, "fp32"
		r.set("dtype", "master_weights")
	case prec.autocast != "":
		j.Dtype, j.ComputeDtype = "fp32", prec.autocast
		r.set("dtype", "compute_dtype")
		r.note("%s: %s=true with the model loaded in fp32 (from_pretrained's default) is AMP; set dtype=%s if the script loads the model in %s", r.cfg.Name, prec.autocast, prec.autocast, prec.autocast)
	case prec.load == "fp32":
		j.Dtype, j.ComputeDtype = "fp32", "fp32"
		r.set("dtype", "compute_dtype")
	}
}

// hfDeepSpeed reads the "deepspeed" argument: a config object or a path.
func (r *reader) hfDeepSpeed(v any) {
	switch x := v.(type) {
	case map[string]any:
		r.deepspeed(x, "deepspeed")
	case string:
		if isNull(x) {
			return
		}
		r.cfg.DeepSpeedFile = strings.TrimSpace(x)
		r.cfg.Job.Engine = "deepspeed"
		r.set("engine")
	case nil:
	default:
		r.bad("deepspeed", v, "a DeepSpeed config object or the path of one")
	}
}

// hfFSDP reads the "fsdp" option list ("full_shard auto_wrap offload").
func (r *reader) hfFSDP(key string, v any) {
	opts, ok := toStrings(v)
	if b, isBool := v.(bool); isBool {
		opts, ok = nil, true
		if b {
			opts = []string{"full_shard"}
		}
	}
	if !ok {
		r.bad(key, v, "a list of FSDP options (full_shard, shard_grad_op, hybrid_shard, hybrid_shard_zero2, no_shard, offload, auto_wrap)")
		return
	}
	j := &r.cfg.Job
	for _, o := range opts {
		switch o = strings.ToLower(o); o {
		case "full_shard", "shard_grad_op", "hybrid_shard", "no_shard":
			j.FSDPStrategy = o
			r.set("fsdp_strategy")
		case "hybrid_shard_zero2":
			j.FSDPStrategy = "_hybrid_shard_zero2"
			r.set("fsdp_strategy")
		case "offload":
			// CPUOffload(offload_params=True): parameters, gradients and the
			// optimizer step on the host.
			j.OffloadParams, j.OffloadOptimizer = "cpu", "cpu"
			r.set("offload_params", "offload_optimizer")
		case "auto_wrap", "":
		default:
			// TrainingArguments reads each option as an FSDPOption
			// (trainer_utils.py), which rejects any other name.
			r.bad(key, o, "FSDP options from full_shard, shard_grad_op, hybrid_shard, hybrid_shard_zero2, no_shard, offload and auto_wrap")
			continue
		}
		if j.Engine != "fsdp2" {
			j.Engine = "fsdp"
		}
		r.set("engine")
	}
}

// fsdpConfig reads fsdp_config (TrainingArguments) or accelerate's
// fsdp_config; keys may carry an fsdp_ prefix.
func (r *reader) fsdpConfig(prefix string, v any) {
	m, ok := r.optionalSection(prefix, v)
	if !ok {
		return
	}
	j := &r.cfg.Job
	for _, k := range sortedKeys(m) {
		val, key := m[k], join(prefix, k)
		switch strings.TrimPrefix(k, "fsdp_") {
		case "version":
			if n, ok := toInt(val); ok && (n == 1 || n == 2) {
				j.Engine = map[int64]string{1: "fsdp", 2: "fsdp2"}[n]
				r.set("engine")
			} else if !isNull(val) {
				r.bad(key, val, "1 or 2")
			}
		case "sharding_strategy":
			if isNull(val) {
				continue
			}
			s, ok := fsdpStrategy(val)
			if !ok {
				r.bad(key, val, wantStrategy)
				continue
			}
			j.FSDPStrategy = s
			r.set("fsdp_strategy")
		case "reshard_after_forward":
			if b, ok := toBool(val); ok {
				if !b {
					j.FSDPStrategy = "shard_grad_op"
					r.set("fsdp_strategy")
				}
			} else if s, ok := fsdpStrategy(val); ok {
				j.FSDPStrategy = s
				r.set("fsdp_strategy")
			} else if !isNull(val) {
				r.bad(key, val, "true, false or a sharding strategy")
			}
		case "offload_params":
			r.onTrue(key, val, func() { j.OffloadParams, j.OffloadOptimizer = "cpu", "cpu" }, "offload_params", "offload_optimizer")
		case "activation_checkpointing":
			r.onTrue(key, val, func() { j.GradCheckpoint = "full" }, "grad_checkpoint")
		case "forward_prefetch", "limit_all_gathers", "xla", "xla_fsdp_v2", "xla_fsdp_grad_ckpt":
			r.ignore(key, reasonNotModelled)
		case "auto_wrap_policy", "backward_prefetch", "backward_prefetch_policy", "cpu_ram_efficient_loading",
			"state_dict_type", "sync_module_states", "use_orig_params", "transformer_layer_cls_to_wrap",
			"min_num_params", "cpu_offload_pin_memory", "mixed_precision_policy", "offload_policy", "xla_fsdp_settings":
		default:
			r.ignore(key, reasonUnknown)
		}
	}
}

// wantStrategy describes the values fsdpStrategy reads.
const wantStrategy = "a sharding strategy (FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2) or accelerate's number for one, 1 to 5"

// fsdpStrategy reads a sharding strategy by name or accelerate's number.
func fsdpStrategy(v any) (string, bool) {
	if n, ok := toInt(v); ok {
		s := map[int64]string{1: "full_shard", 2: "shard_grad_op", 3: "no_shard", 4: "hybrid_shard", 5: "_hybrid_shard_zero2"}[n]
		return s, s != ""
	}
	s, ok := toString(v)
	if !ok {
		return "", false
	}
	switch s = strings.ToLower(s); s {
	case "full_shard", "shard_grad_op", "no_shard", "hybrid_shard":
		return s, true
	case "hybrid_shard_zero2", "_hybrid_shard_zero2":
		return "_hybrid_shard_zero2", true
	}
	return "", false
}

// peftKey reads TRL ModelConfig / LoRA keys shared by the HF formats.
func (r *reader) peftKey(k string, v any) bool {
	j := &r.cfg.Job
	switch k {
	case "use_peft":
		if r.flag(k, v) && !r.keys["method"] {
			j.Method = "lora"
			r.set("method")
		}
	case "load_in_4bit":
		r.onTrue(k, v, func() { j.Method = "qlora" }, "method")
	case "load_in_8bit":
		r.onTrue(k, v, func() { j.Dtype = "int8" }, "dtype")
	case "lora_r", "lora_rank":
		r.intKey(k, v, "lora_rank")
	case "lora_alpha":
		r.intKey(k, v, "lora_alpha")
	case "lora_dropout":
		if f, ok := toFloat(v); ok && f >= 0 && f < 1 {
			j.LoRADropout = f
			r.set("lora_dropout")
		} else if !isNull(v) {
			r.bad(k, v, "a probability from 0 to below 1")
		}
	case "lora_target_modules", "lora_target":
		if isNull(v) {
			return true
		}
		ts, ok := toStrings(v)
		if !ok {
			r.bad(k, v, "a list of module names")
			return true
		}
		for i, t := range ts {
			if t == "all" {
				ts[i] = "all-linear" // LLaMA-Factory's "all"
			}
		}
		j.LoRATargets = ts
		r.set("lora_target_modules")
	case "lora_modules_to_save":
		// PEFT modules_to_save: fully trained copies next to the adapters.
		if isNull(v) {
			return true
		}
		ts, ok := toStrings(v)
		if !ok {
			r.bad(k, v, "a list of module names")
		} else if len(ts) > 0 {
			j.Trainable = ts
			r.set("trainable")
		}
	case "use_dora":
		r.onTrue(k, v, func() { j.PEFTVariant = "dora" }, "peft_variant")
	case "bnb_4bit_quant_type":
		r.stringKey(k, v, "quant_type")
	case "use_bnb_nested_quant", "bnb_4bit_use_double_quant", "double_quantization":
		r.boolKey(k, v, "double_quant")
	default:
		return false
	}
	return true
}
