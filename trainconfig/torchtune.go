package trainconfig

import "strings"

// ParseTorchtune reads a torchtune recipe config (tune run RECIPE --config
// file.yaml; pytorch/torchtune recipes/configs). The model component
// names the method (lora_*, qlora_* builders) and the LoRA settings; the
// recipe flags map onto the job. The distributed recipes shard with FSDP2
// (fully_shard); fsdp_cpu_offload moves parameters, gradients and the
// optimizer step to the host. The model itself is not named by a Hub id:
// pass it separately.
func ParseTorchtune(data []byte, name string) (*Config, error) {
	return ParseAs(data, name, Torchtune)
}

// ttNoEffect are torchtune keys without a memory effect.
var ttNoEffect = &keySet{keys: []string{"output_dir", "tokenizer", "checkpointer", "resume_from_checkpoint", "seed", "shuffle",
	"lr_scheduler", "epochs", "max_steps_per_epoch", "clip_grad_norm", "device", "metric_logger",
	"log_every_n_steps", "log_peak_memory_stats", "profiler", "save_adapter_weights_only", "run_val_every_n_steps",
	"dataset_val", "batch_size_val", "log_level", "custom_sharded_layers", "fsdp_reshard_after_forward",
	"enable_kv_cache", "cudnn_deterministic_mode", "teacher_checkpointer", "clip_grad_norm", "tensor_parallel_plan",
	"quantizer", "inference", "parallelize_plan", "save_last_epoch_only", "keep_last_n_checkpoints"}}

// torchtune reads a torchtune config object.
func (r *reader) torchtune(obj map[string]any) {
	j := &r.cfg.Job
	j.Framework = "torchtune"
	r.set("framework")
	for _, k := range sortedKeys(obj) {
		v := obj[k]
		switch k {
		case "model":
			r.ttModel(k, v)
		case "tokenizer":
			if m, ok := v.(map[string]any); ok && !isNull(m["max_seq_len"]) {
				r.intKey("tokenizer.max_seq_len", m["max_seq_len"], "seq_len")
			}
		case "dataset":
			r.ttDataset(k, v)
		case "batch_size":
			r.intKey(k, v, "per_device_batch")
		case "gradient_accumulation_steps":
			r.intKey(k, v, "grad_accum")
		case "optimizer":
			r.ttOptimizer(k, v)
		case "loss":
			r.ttLoss(k, v)
		case "compile":
			r.boolKey(k, v, "torch_compile")
		case "optimizer_in_bwd":
			r.boolKey(k, v, "optimizer_in_backward")
		case "enable_activation_checkpointing":
			r.boolKey(k, v, "grad_checkpoint")
		case "enable_activation_offloading":
			r.boolKey(k, v, "activation_offload")
		case "dtype":
			if isNull(v) {
				continue
			}
			s, _ := toString(v)
			if d, ok := dtypeOf(s); ok {
				j.Dtype = d
				r.set("dtype")
				if d == "fp32" {
					j.ComputeDtype = "fp32"
					r.set("compute_dtype")
				}
			} else {
				r.bad(k, v, "bf16, fp16 or fp32")
			}
		case "fsdp_cpu_offload":
			r.onTrue(k, v, func() { j.Engine, j.OffloadParams, j.OffloadOptimizer = "fsdp2", "cpu", "cpu" }, "engine", "offload_params", "offload_optimizer")
		case "fsdp_sharding_strategy":
			if s, ok := fsdpStrategy(v); ok {
				j.Engine, j.FSDPStrategy = "fsdp2", s
				r.set("engine", "fsdp_strategy")
			} else if !isNull(v) {
				r.bad(k, v, wantStrategy)
			}
		case "tensor_parallel_dim":
			r.intKey(k, v, "tp")
		default:
			switch {
			case ttNoEffect.has(k):
			case strings.HasPrefix(k, "ref_") || k == "teacher_model" || k == "kd_loss" || k == "kd_ratio":
				r.ignore(k, reasonNotModelled) // a second model (DPO reference, distillation teacher)
			default:
				r.ignore(k, reasonUnknown)
			}
		}
	}
}

// wantComponent describes a torchtune component section.
const wantComponent = "a mapping with a _component_ path"

// component returns a section's _component_ path and its other keys.
func component(v any) (string, map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", nil, false
	}
	c, _ := toString(m["_component_"])
	return c, m, true
}

// ttModel reads the model builder: lora_/qlora_ builders and their LoRA
// arguments.
func (r *reader) ttModel(key string, v any) {
	c, m, ok := component(v)
	if !ok || c == "" {
		r.bad(key, v, wantComponent)
		return
	}
	j := &r.cfg.Job
	builder := c[strings.LastIndexByte(c, '.')+1:]
	switch {
	case strings.HasPrefix(builder, "qlora_"):
		j.Method = "qlora"
	case strings.HasPrefix(builder, "lora_"):
		j.Method = "lora"
	default:
		j.Method = "full"
	}
	r.set("method")
	r.note("%s: model builder %s; name the matching Hugging Face model as the job's model", r.cfg.Name, c)
	var targets, mlp []string
	for _, k := range sortedKeys(m) {
		val, sub := m[k], join(key, k)
		switch k {
		case "_component_":
		case "lora_attn_modules":
			ts, ok := toStrings(val)
			if !ok {
				r.bad(sub, val, "a list of module names")
				continue
			}
			for _, t := range ts {
				if t == "output_proj" {
					t = "o_proj" // torchtune's name for the attention output projection
				}
				targets = append(targets, t)
			}
		case "apply_lora_to_mlp":
			if r.flag(sub, val) {
				mlp = []string{"gate_proj", "up_proj", "down_proj"}
			}
		case "apply_lora_to_output":
			if r.flag(sub, val) {
				mlp = append(mlp, "lm_head")
			}
		case "lora_rank":
			r.intKey(sub, val, "lora_rank")
		case "lora_alpha":
			if f, ok := toFloat(val); ok && f > 0 && f < 1<<31 {
				j.LoRAAlpha = int(f)
				r.set("lora_alpha")
			} else if !isNull(val) {
				r.bad(sub, val, "a positive number")
			}
		case "lora_dropout":
			if f, ok := toFloat(val); ok && f >= 0 && f < 1 {
				j.LoRADropout = f
				r.set("lora_dropout")
			} else if !isNull(val) {
				r.bad(sub, val, "a probability from 0 to below 1")
			}
		case "use_dora":
			r.onTrue(sub, val, func() { j.PEFTVariant = "dora" }, "peft_variant")
		case "quantize_base":
			if r.flag(sub, val) {
				j.Method = "qlora"
			}
		default:
			r.ignore(sub, reasonNotModelled)
		}
	}
	if targets = append(targets, mlp...); len(targets) > 0 {
		j.LoRATargets = targets
		r.set("lora_target_modules")
	}
}

// ttDataset reads dataset.packed (a list of datasets: any packed).
func (r *reader) ttDataset(key string, v any) {
	list, isList := v.([]any)
	if !isList {
		list = []any{v}
	}
	for _, e := range list {
		if _, m, ok := component(e); ok {
			if p, has := m["packed"]; has {
				r.boolKey(key+".packed", p, "packed")
			}
		}
	}
}

// ttOptimizer maps the optimizer component onto an optimizer name.
func (r *reader) ttOptimizer(key string, v any) {
	c, m, ok := component(v)
	if !ok || c == "" {
		r.bad(key, v, wantComponent)
		return
	}
	fused := r.flag(join(key, "fused"), m["fused"])
	name := ""
	switch c {
	case "torch.optim.AdamW", "torch.optim.Adam":
		name = "adamw_torch"
		if fused {
			name = "adamw_torch_fused"
		}
	case "torch.optim.SGD":
		name = "sgd_momentum"
	case "bitsandbytes.optim.PagedAdamW8bit":
		name = "paged_adamw_8bit"
	case "bitsandbytes.optim.PagedAdamW", "bitsandbytes.optim.PagedAdamW32bit":
		name = "paged_adamw_32bit"
	case "bitsandbytes.optim.AdamW8bit", "torchao.optim.AdamW8bit", "torchao.prototype.low_bit_optim.AdamW8bit":
		name = "adamw_bnb_8bit"
	default:
		// Any importable optimizer class is valid; only these are mapped.
		r.ignore(key+"._component_", reasonNotModelled)
		return
	}
	r.cfg.Job.Optimizer = name
	r.set("optimizer")
}

// ttLoss reads the loss component: the chunked cross-entropy variants.
func (r *reader) ttLoss(key string, v any) {
	c, _, ok := component(v)
	if !ok || c == "" {
		r.bad(key, v, wantComponent)
		return
	}
	j := &r.cfg.Job
	switch {
	case strings.HasSuffix(c, "CEWithChunkedOutputLoss") || strings.HasSuffix(c, "LinearCrossEntropyLoss"):
		// torchtune's default loss: the memory model picks the chunked CE,
		// compiled when the model is.
	case strings.HasSuffix(c, "CrossEntropyLoss"):
		j.FusedLoss = "none"
		r.set("fused_loss")
	default:
		r.ignore(key+"._component_", reasonNotModelled)
	}
}
