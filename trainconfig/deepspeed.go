package trainconfig

import (
	"strings"
)

// ParseDeepSpeed reads a DeepSpeed JSON config (--deepspeed ds_config.json).
//
// Keys and defaults follow microsoft/DeepSpeed deepspeed/runtime/config.py
// and deepspeed/runtime/zero/config.py. "auto" values are the Hugging Face
// Trainer's (transformers integrations/deepspeed.py): batch size,
// accumulation and precision come from the TrainingArguments, so they are
// left to them; reduce_bucket_size, stage3_prefetch_bucket_size and
// stage3_param_persistence_threshold become hidden², 0.9·hidden² and
// 10·hidden, which the memory model applies when the job runs under the HF
// Trainer (framework hf, the default). Unknown keys are reported.
func ParseDeepSpeed(data []byte, name string) (*Config, error) {
	return ParseAs(data, name, DeepSpeed)
}

// dsNoEffect are DeepSpeed keys that do not change GPU memory (logging,
// schedules, loss scaling, checkpoint I/O).
var dsNoEffect = &keySet{keys: []string{"scheduler", "gradient_clipping", "steps_per_print", "wall_clock_breakdown",
	"prescale_gradients", "gradient_predivide_factor", "dump_state", "zero_allow_untested_optimizer",
	"zero_force_ds_cpu_optimizer", "memory_breakdown", "flops_profiler", "tensorboard", "wandb", "csv_monitor",
	"comet", "monitor_config", "comms_logger", "checkpoint", "elasticity", "autotuning", "aio",
	"communication_data_type", "seq_parallel_communication_data_type", "data_efficiency", "curriculum_learning",
	"sparse_gradients", "disable_allgather", "load_universal_checkpoint", "use_node_local_storage", "timers",
	"graph_harvesting", "use_data_before_expert_parallelism", "nebula", "weight_quantization"}}

// dsNotModelled are DeepSpeed keys that change memory in ways the model
// does not cover.
var dsNotModelled = &keySet{keys: []string{"activation_checkpointing", "pipeline", "sparse_attention", "tensor_parallel",
	"compression_training", "amp", "torch_autocast", "hybrid_engine", "sequence_parallel_size", "fp8",
	"quantize_training"}}

// deepspeed reads a DeepSpeed config object; prefix is its key path when
// nested (TrainingArguments "deepspeed").
func (r *reader) deepspeed(obj map[string]any, prefix string) {
	j := &r.cfg.Job
	j.Engine = "deepspeed"
	r.set("engine")
	var micro, accum, total int64
	var enabled []string // the precision sections enabled, by key path
	for _, k := range sortedKeys(obj) {
		v, key := obj[k], join(prefix, k)
		switch k {
		case "train_micro_batch_size_per_gpu":
			micro = r.dsInt(key, v, "per_device_batch", "the Trainer's per_device_train_batch_size")
		case "gradient_accumulation_steps":
			accum = r.dsInt(key, v, "grad_accum", "the Trainer's gradient_accumulation_steps")
		case "train_batch_size":
			if n, ok := toInt(v); ok && n > 0 {
				total = n
			} else if !isAuto(v) {
				r.bad(key, v, `a positive integer or "auto"`)
			}
		case "fp16", "bf16", "bfloat16":
			if r.dsPrecision(k, key, v) {
				enabled = append(enabled, join(key, "enabled"))
			}
		case "optimizer":
			r.dsOptimizer(key, v)
		case "zero_optimization":
			r.dsZeROSection(key, v)
		case "data_types":
			r.dsDataTypes(key, v)
		default:
			r.unlisted(k, key, dsNoEffect, dsNotModelled)
		}
	}
	if total > 0 && micro > 0 && accum > 0 {
		// DeepSpeed asserts train_batch_size = micro × accumulation × GPUs.
		if total%(micro*accum) == 0 {
			j.NumGPUs = int(total / (micro * accum))
			r.set("num_gpus")
			r.note("%s: %d GPUs from train_batch_size %d = micro-batch %d × accumulation %d × GPUs", r.cfg.Name, j.NumGPUs, total, micro, accum)
		} else {
			// DeepSpeed asserts the product at start-up (runtime/config.py
			// _batch_assertion); no GPU count makes this one hold.
			r.bad(join(prefix, "train_batch_size"), total, "a multiple of train_micro_batch_size_per_gpu × gradient_accumulation_steps = %d", micro*accum)
		}
	}
	if len(enabled) > 1 {
		// DeepSpeed refuses the pair: "bfloat16 and fp16 modes cannot be
		// simultaneously enabled" (runtime/config.py).
		r.bad(enabled[1], true, "false when %s is true (DeepSpeed trains in fp16 or bf16, not both)", enabled[0])
	}
}

// dsInt reads a positive integer setting that may be "auto".
func (r *reader) dsInt(key string, v any, jobKey string, auto string) int64 {
	if isAuto(v) {
		r.auto(key, auto)
		return 0
	}
	n, ok := toInt(v)
	if !ok || n == 0 {
		r.bad(key, v, `a positive integer or "auto"`)
		return 0
	}
	intSettings[jobKey](&r.cfg.Job, int(n))
	r.set(jobKey)
	return n
}

// dsPrecision reads the fp16 / bf16 sections and reports whether the
// section is enabled (true, not "auto").
func (r *reader) dsPrecision(section, key string, v any) (enabled bool) {
	m, ok := r.section(key, v)
	if !ok {
		return false
	}
	j := &r.cfg.Job
	for _, k := range sortedKeys(m) {
		sub := join(key, k)
		switch k {
		case "enabled":
			if isAuto(m[k]) {
				r.auto(sub, "the Trainer's --"+strings.Replace(section, "bfloat16", "bf16", 1))
				continue
			}
			on, ok := toBool(m[k])
			if !ok {
				r.bad(sub, m[k], `true, false or "auto"`)
				continue
			}
			enabled = on
			switch {
			case on:
				j.Dtype, j.ComputeDtype = "fp16", ""
				if section != "fp16" {
					j.Dtype = "bf16"
				}
				r.set("dtype")
				r.unset("compute_dtype")
			case !r.keys["dtype"]:
				// Both disabled: DeepSpeed trains in fp32.
				j.Dtype, j.ComputeDtype = "fp32", "fp32"
				r.set("dtype", "compute_dtype")
			}
		case "fp16_master_weights_and_grads":
			r.ignore(sub, reasonNotModelled)
		case "loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis", "consecutive_hysteresis",
			"min_loss_scale", "auto_cast", "immediate_grad_update", "check_grad_overflow", "accumulate_grads_via_hooks":
		default:
			r.ignore(sub, reasonUnknown)
		}
	}
	return enabled
}

// dsOptimizers maps DeepSpeed optimizer types onto optimizer names: Adam
// and AdamW run as DeepSpeed's FusedAdam (no foreach intermediates), or
// DeepSpeedCPUAdam on the host when the optimizer is offloaded.
var dsOptimizers = map[string]string{
	"adam": "adamw_torch_fused", "adamw": "adamw_torch_fused", "lamb": "lamb", "lion": "lion",
	"adagrad": "adagrad", "onebitadam": "adam", "zerooneadam": "adam", "onebitlamb": "lamb", "muadam": "adam",
	"muadamw": "adamw_torch_fused", "musgd": "sgd_momentum",
}

// torchOptimizers are the torch.optim classes, lower-cased: DeepSpeed
// builds any other optimizer type with getattr(torch.optim, type)
// (runtime/engine.py _configure_basic_optimizer). They are valid but not
// mapped onto an optimizer of the memory model.
var torchOptimizers = &keySet{keys: []string{"adadelta", "adafactor", "adamax", "asgd", "lbfgs", "muon", "nadam", "radam", "rmsprop",
	"rprop", "sgd", "sparseadam"}}

// dsOptimizer reads the optimizer section.
func (r *reader) dsOptimizer(key string, v any) {
	m, ok := r.section(key, v)
	if !ok {
		return
	}
	for _, k := range sortedKeys(m) {
		sub := join(key, k)
		switch k {
		case "type":
			t, _ := toString(m[k])
			name, ok := dsOptimizers[strings.ToLower(t)]
			if !ok && torchOptimizers.has(strings.ToLower(t)) {
				r.ignore(sub, reasonNotModelled)
				continue
			}
			if !ok {
				r.bad(sub, m[k], "a DeepSpeed optimizer (Adam, AdamW, Lamb, Lion, Adagrad, OneBitAdam, ZeroOneAdam, OneBitLamb, MuAdam, MuAdamW, MuSGD) or a torch.optim class")
				continue
			}
			if p, _ := m["params"].(map[string]any); p != nil {
				if r.flag(join(key, "params.torch_adam"), p["torch_adam"]) && name == "adamw_torch_fused" {
					name = "adamw_torch"
				}
			}
			if strings.HasPrefix(strings.ToLower(t), "onebit") || strings.HasPrefix(strings.ToLower(t), "zeroone") {
				r.note("%s: %s %s: modelled as %s; its error-feedback buffers are not counted", r.cfg.Name, sub, t, name)
			}
			r.cfg.Job.Optimizer = name
			r.set("optimizer")
		case "params":
		default:
			r.ignore(sub, reasonUnknown)
		}
	}
}

// dsDataTypes reads data_types.grad_accum_dtype.
func (r *reader) dsDataTypes(key string, v any) {
	m, ok := r.section(key, v)
	if !ok {
		return
	}
	for _, k := range sortedKeys(m) {
		r.ignore(join(key, k), reasonNotModelled)
	}
}

// dsZeROSizes maps zero_optimization size keys (with their stage3_-less
// aliases) onto memory.Job keys, with the HF "auto" value of each.
var dsZeROSizes = map[string]struct{ job, auto string }{
	"reduce_bucket_size":                 {"reduce_bucket_size", "hidden²"},
	"allgather_bucket_size":              {"allgather_bucket_size", ""},
	"stage3_prefetch_bucket_size":        {"stage3_prefetch_bucket_size", "0.9·hidden²"},
	"prefetch_bucket_size":               {"stage3_prefetch_bucket_size", "0.9·hidden²"},
	"stage3_param_persistence_threshold": {"stage3_param_persistence_threshold", "10·hidden"},
	"param_persistence_threshold":        {"stage3_param_persistence_threshold", "10·hidden"},
	"stage3_max_live_parameters":         {"stage3_max_live_parameters", ""},
	"max_live_parameters":                {"stage3_max_live_parameters", ""},
	"stage3_max_reuse_distance":          {"stage3_max_reuse_distance", ""},
	"max_reuse_distance":                 {"stage3_max_reuse_distance", ""},
	"sub_group_size":                     {"sub_group_size", ""},
}

// dsZeRONoEffect are zero_optimization keys without a memory effect here.
var dsZeRONoEffect = &keySet{keys: []string{"allgather_partitions", "reduce_scatter", "round_robin_gradients",
	"load_from_fp32_weights", "elastic_checkpoint", "ignore_unused_parameters", "legacy_stage1",
	"stage3_gather_16bit_weights_on_model_save", "stage3_gather_fp16_weights_on_model_save",
	"gather_16bit_weights_on_model_save", "use_multi_rank_bucket_allreduce", "log_trace_cache_warnings",
	"cpu_offload_use_pin_memory", "memory_efficient_linear", "override_module_apply",
	"pipeline_loading_checkpoint"}}

// dsZeRONotModelled are zero_optimization keys whose effect is not modelled.
var dsZeRONotModelled = &keySet{keys: []string{"zero_hpz_partition_size",
	"zero_quantized_weights", "zero_quantized_gradients", "zero_quantized_nontrainable_weights",
	"mics_shard_size", "mics_hierarchical_params_gather", "model_persistence_threshold",
	"stage3_module_granularity_threshold", "offload_optimizer_ratio"}}

// dsZeROSection reads zero_optimization: a mapping, or the deprecated
// boolean, which DeepSpeed reads as stage 1 (true) or 0 (false)
// (runtime/zero/config.py read_zero_config_deprecated).
func (r *reader) dsZeROSection(key string, v any) {
	if b, ok := v.(bool); ok {
		r.cfg.Job.ZeRO = map[bool]int{true: 1, false: 0}[b]
		r.set("zero")
		r.note("%s: %s: %v is the deprecated form of stage %d", r.cfg.Name, key, b, r.cfg.Job.ZeRO)
		return
	}
	if m, ok := r.section(key, v); ok {
		r.dsZeRO(m, key)
	}
}

// dsZeRO reads the zero_optimization section.
func (r *reader) dsZeRO(m map[string]any, prefix string) {
	j := &r.cfg.Job
	for _, k := range sortedKeys(m) {
		v, key := m[k], join(prefix, k)
		if sz, ok := dsZeROSizes[k]; ok {
			r.dsSize(key, v, sz.job, sz.auto)
			continue
		}
		switch k {
		case "stage":
			n, ok := toInt(v)
			if !ok || n > 3 {
				r.bad(key, v, "0, 1, 2 or 3")
				continue
			}
			j.ZeRO = int(n)
			r.set("zero")
		case "offload_optimizer", "offload_param":
			r.dsOffload(k, key, v)
		case "cpu_offload", "cpu_offload_params":
			// Deprecated spellings of offload_optimizer / offload_param to CPU.
			on, ok := r.boolValue(key, v)
			if !ok {
				continue
			}
			if on && k == "cpu_offload" {
				j.OffloadOptimizer = "cpu"
				r.set("offload_optimizer")
			} else if on {
				j.OffloadParams = "cpu"
				r.set("offload_params")
			}
		case "overlap_comm", "contiguous_gradients":
			if isAuto(v) {
				r.auto(key, "DeepSpeed's default")
				continue
			}
			b, ok := toBool(v)
			if !ok {
				r.bad(key, v, `true, false or "auto"`)
				continue
			}
			if k == "overlap_comm" {
				j.OverlapComm = &b
			} else {
				j.ContiguousGradients = &b
			}
			r.set(k)
		default:
			r.unlisted(k, key, dsZeRONoEffect, dsZeRONotModelled)
		}
	}
}

// dsSize reads a buffer size or threshold in elements: a whole number
// from 0 (DeepSpeed's pydantic fields are ge=0,
// runtime/zero/config.py). "auto" is the HF Trainer's value, which the
// memory model applies under the HF framework; the Trainer resolves it
// for three keys only (integrations/deepspeed.py trainer_config_process),
// elsewhere DeepSpeed rejects it. 0 turns ZeRO-3's prefetching, reuse
// and persistence off, which the memory model follows; a bucket or
// sub-group of 0 elements is reported as not modelled.
func (r *reader) dsSize(key string, v any, jobKey, auto string) {
	if isAuto(v) {
		if auto == "" {
			r.bad(key, v, `a whole number of elements ("auto" is resolved for reduce_bucket_size, stage3_prefetch_bucket_size and stage3_param_persistence_threshold only)`)
			return
		}
		r.auto(key, auto)
		return
	}
	n, ok := toInt(v)
	if !ok {
		want := "a whole number of elements from 0"
		if auto != "" {
			want += ` or "auto"`
		}
		r.bad(key, v, want)
		return
	}
	j := &r.cfg.Job
	switch jobKey {
	case "stage3_prefetch_bucket_size":
		j.PrefetchBucketSize = &n
	case "stage3_param_persistence_threshold":
		j.ParamPersistenceThreshold = &n
	case "stage3_max_live_parameters":
		j.MaxLiveParameters = &n
	case "stage3_max_reuse_distance":
		j.MaxReuseDistance = &n
	default:
		if n == 0 {
			r.ignore(key, reasonNotModelled)
			return
		}
		switch jobKey {
		case "reduce_bucket_size":
			j.ReduceBucketSize = n
		case "allgather_bucket_size":
			j.AllgatherBucketSize = n
		case "sub_group_size":
			j.SubGroupSize = n
		}
	}
	r.set(jobKey)
}

// dsOffload reads offload_optimizer / offload_param.
func (r *reader) dsOffload(section, key string, v any) {
	m, ok := r.section(key, v)
	if !ok {
		return
	}
	for _, k := range sortedKeys(m) {
		sub := join(key, k)
		switch k {
		case "device":
			jobKey := "offload_params"
			if section == "offload_optimizer" {
				jobKey = "offload_optimizer"
			}
			r.offloadDevice(sub, m[k], jobKey)
		case "ratio":
			// offload_config.py: ratio is a fraction, ge=0, le=1.
			if f, ok := toFloat(m[k]); !ok || f < 0 || f > 1 {
				r.bad(sub, m[k], "a fraction from 0 to 1")
			} else if f < 1 {
				r.ignore(sub, reasonNotModelled)
			}
		case "pin_memory", "nvme_path", "buffer_count", "buffer_size", "max_in_cpu", "fast_init",
			"pipeline_read", "pipeline_write", "pipeline":
		default:
			r.ignore(sub, reasonUnknown)
		}
	}
}
