package trainconfig

import "strings"

// ParseAccelerate reads an accelerate config YAML (the file `accelerate
// config` writes; keys from huggingface/accelerate
// src/accelerate/commands/config/config_args.py and the FSDP, DeepSpeed and
// Megatron-LM plugins). mixed_precision is read per engine: DeepSpeed and
// Megatron cast the model and keep fp32 masters; FSDP shards the fp32
// model and computes in the mixed dtype; plain DDP is autocast over an fp32
// model (AMP).
func ParseAccelerate(data []byte, name string) (*Config, error) {
	return ParseAs(data, name, Accelerate)
}

// accelerateNoEffect are accelerate keys without a memory effect.
var accelerateNoEffect = &keySet{keys: []string{"compute_environment", "debug", "machine_rank", "main_process_ip",
	"main_process_port", "main_training_function", "rdzv_backend", "same_network", "tpu_env", "tpu_use_cluster",
	"tpu_use_sudo", "tpu_name", "tpu_zone", "use_cpu", "gpu_ids", "enable_cpu_affinity", "downcast_bf16",
	"commands", "command_file", "ipex_config", "mpirun_config", "num_cpu_threads_per_process"}}

// accelerate reads an accelerate config object.
func (r *reader) accelerate(obj map[string]any) {
	mixed := ""
	for _, k := range sortedKeys(obj) {
		v := obj[k]
		switch k {
		case "distributed_type":
			r.accelerateEngine(k, v)
		case "num_processes":
			r.intKey(k, v, "num_gpus")
		case "num_machines":
			r.intKey(k, v, "nodes")
		case "mixed_precision":
			if isNull(v) {
				continue
			}
			s, _ := toString(v)
			switch strings.ToLower(s) {
			case "bf16", "fp16", "no":
				mixed = strings.ToLower(s)
			case "fp8":
				r.ignore(k, reasonNotModelled)
			default:
				// accelerate's PrecisionType (utils/dataclasses.py).
				r.bad(k, v, "no, fp16, bf16 or fp8")
			}
		case "deepspeed_config":
			r.accelerateDeepSpeed(k, v)
		case "fsdp_config":
			r.fsdpConfig(k, v)
		case "megatron_lm_config":
			r.accelerateMegatron(k, v)
		case "dynamo_config":
			r.accelerateDynamo(k, v)
		case "fp8_config", "parallelism_config":
			r.ignore(k, reasonNotModelled)
		default:
			r.unlisted(k, k, accelerateNoEffect, nil)
		}
	}
	r.accelerateMixed(mixed)
}

// accelerateOtherTypes are accelerate DistributedType values
// (utils/dataclasses.py) for devices other than NVIDIA/AMD GPUs or for
// CPUs: valid, but not modelled.
var accelerateOtherTypes = &keySet{keys: []string{"MULTI_CPU", "MULTI_XPU", "MULTI_NPU", "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA",
	"MULTI_HPU", "XLA", "TPU"}}

// accelerateEngine maps distributed_type onto an engine.
func (r *reader) accelerateEngine(key string, v any) {
	if isNull(v) {
		return
	}
	s, _ := toString(v)
	j := &r.cfg.Job
	if accelerateOtherTypes.has(strings.ToUpper(s)) {
		r.ignore(key, reasonNotModelled)
		return
	}
	switch strings.ToUpper(s) {
	case "DEEPSPEED":
		j.Engine = "deepspeed"
	case "FSDP":
		if j.Engine != "fsdp2" {
			j.Engine = "fsdp"
		}
	case "MULTI_GPU":
		j.Engine = "ddp"
	case "MEGATRON_LM":
		j.Engine = "megatron"
	case "NO":
		return
	default:
		r.bad(key, v, "a DistributedType: NO, MULTI_GPU, DEEPSPEED, FSDP or MEGATRON_LM (or another device's)")
		return
	}
	r.set("engine")
}

// accelerateMixed sets the precision recipe of mixed_precision.
func (r *reader) accelerateMixed(mixed string) {
	j := &r.cfg.Job
	switch {
	case mixed == "":
	case mixed == "no":
		j.Dtype, j.ComputeDtype = "fp32", "fp32"
		r.set("dtype", "compute_dtype")
	case j.Engine == "deepspeed" || j.Engine == "megatron":
		j.Dtype = mixed
		r.set("dtype")
	case j.Engine == "fsdp" || j.Engine == "fsdp2":
		j.Dtype, j.MasterWeights = mixed, "fp32"
		r.set("dtype", "master_weights")
	default:
		j.Dtype, j.ComputeDtype = "fp32", mixed
		r.set("dtype", "compute_dtype")
		r.note("%s: mixed_precision %s over a model loaded in fp32 is AMP; set dtype=%s if the script loads the model in %s", r.cfg.Name, mixed, mixed, mixed)
	}
}

// accelerateDeepSpeed reads deepspeed_config.
func (r *reader) accelerateDeepSpeed(prefix string, v any) {
	m, ok := r.optionalSection(prefix, v)
	if !ok {
		return
	}
	j := &r.cfg.Job
	for _, k := range sortedKeys(m) {
		val, key := m[k], join(prefix, k)
		switch k {
		case "deepspeed_config_file":
			if s, ok := r.stringValue(key, val); ok {
				r.cfg.DeepSpeedFile = s
			}
		case "zero_stage":
			if n, ok := toInt(val); ok && n <= 3 {
				j.ZeRO = int(n)
				r.set("zero")
			} else if !isNull(val) {
				r.bad(key, val, "0, 1, 2 or 3")
			}
		case "offload_optimizer_device":
			r.offloadDevice(key, val, "offload_optimizer")
		case "offload_param_device":
			r.offloadDevice(key, val, "offload_params")
		case "gradient_accumulation_steps":
			if isAuto(val) {
				continue
			}
			r.intKey(key, val, "grad_accum")
		case "gradient_clipping", "zero3_init_flag", "zero3_save_16bit_model", "deepspeed_multinode_launcher",
			"deepspeed_hostfile", "deepspeed_exclusion_filter", "deepspeed_inclusion_filter", "deepspeed_moe_layer_cls_names":
		default:
			r.ignore(key, reasonUnknown)
		}
	}
}

// accelerateMegatron reads megatron_lm_config.
func (r *reader) accelerateMegatron(prefix string, v any) {
	m, ok := r.optionalSection(prefix, v)
	if !ok {
		return
	}
	j := &r.cfg.Job
	for _, k := range sortedKeys(m) {
		val, key := m[k], join(prefix, k)
		switch k {
		case "megatron_lm_tp_degree":
			r.intKey(key, val, "tp")
		case "megatron_lm_pp_degree":
			r.intKey(key, val, "pp")
		case "megatron_lm_num_micro_batches":
			r.intKey(key, val, "grad_accum")
		case "megatron_lm_sequence_parallelism":
			r.boolKey(key, val, "sp")
		case "megatron_lm_recompute_activations":
			// Megatron's --recompute-activations is selective recompute.
			r.onTrue(key, val, func() { j.GradCheckpoint = "selective" }, "grad_checkpoint")
		case "megatron_lm_use_distributed_optimizer":
			r.onTrue(key, val, func() { j.ZeRO = 1 }, "zero")
		case "megatron_lm_gradient_clipping":
		default:
			r.ignore(key, reasonUnknown)
		}
	}
	if j.Framework == "" {
		j.Framework = "megatron"
		r.set("framework")
	}
}

// accelerateDynamo reads dynamo_config: a backend other than NO compiles.
func (r *reader) accelerateDynamo(prefix string, v any) {
	m, ok := r.optionalSection(prefix, v)
	if !ok {
		return
	}
	for _, k := range sortedKeys(m) {
		switch k {
		case "dynamo_backend":
			if isNull(m[k]) {
				continue
			}
			s, ok := r.stringValue(join(prefix, k), m[k])
			if !ok {
				continue
			}
			r.cfg.Job.Compile = !strings.EqualFold(s, "no")
			r.set("torch_compile")
		case "dynamo_mode", "dynamo_use_fullgraph", "dynamo_use_dynamic", "dynamo_use_regional_compilation":
		default:
			r.ignore(join(prefix, k), reasonUnknown)
		}
	}
}
