package trainconfig

import (
	"fmt"
	"strings"
)

// ParseLLaMAFactory reads a LLaMA-Factory training YAML (llamafactory-cli
// train file.yaml; keys from hiyouga/LLaMA-Factory src/llamafactory/hparams
// model_args.py, finetuning_args.py, data_args.py plus the
// TrainingArguments). LLaMA-Factory loads the model in the compute dtype
// (bf16 with bf16: true) and enables gradient checkpointing unless
// disable_gradient_checkpointing is set; without DeepSpeed ZeRO-3, FSDP or
// pure_bf16 it casts the trainable parameters to fp32.
func ParseLLaMAFactory(data []byte, name string) (*Config, error) {
	return ParseAs(data, name, LLaMAFactory)
}

// lfNoEffect are LLaMA-Factory keys without a memory effect.
var lfNoEffect = &keySet{keys: []string{"dataset", "dataset_dir", "eval_dataset", "template", "max_samples", "overwrite_cache",
	"preprocessing_num_workers", "val_size", "tokenized_path", "mix_strategy", "interleave_probs", "streaming",
	"buffer_size", "train_on_prompt", "mask_history", "plot_loss", "do_train", "trust_remote_code", "adapter_name_or_path",
	"export_dir", "export_size", "cache_dir", "model_revision", "hf_hub_token", "ms_hub_token", "image_max_pixels",
	"video_max_pixels", "use_rslora", "pissa_init", "pissa_iter", "pissa_convert", "create_new_adapter",
	"loraplus_lr_ratio", "lora_bf16_mode", "tool_format", "default_system", "enable_thinking", "flash_attn_kwargs",
	"print_param_status", "include_effective_tokens_per_second", "upcast_layernorm", "upcast_lmhead_output",
	"compute_accuracy", "predict_with_generate", "dataloader_num_workers", "image_min_pixels", "video_min_pixels"}}

// lfNotModelled are LLaMA-Factory keys whose memory effect is not modelled.
var lfNotModelled = &keySet{keys: []string{"use_galore", "galore_rank", "galore_target", "use_badam", "use_apollo", "use_unsloth_gc",
	"shift_attn", "rope_scaling", "moe_aux_loss_coef", "freeze_vision_tower", "freeze_multi_modal_projector",
	"train_mm_proj_only", "use_llama_pro", "freeze_extra_modules", "neat_packing", "ref_model", "reward_model",
	"pref_beta", "pref_loss", "offload_folder", "quantization_device_map", "disable_shuffling", "use_adam_mini"}}

// llamaFactory reads a LLaMA-Factory object.
func (r *reader) llamaFactory(obj map[string]any) {
	j := &r.cfg.Job
	j.GradCheckpoint = "full" // unless disable_gradient_checkpointing
	r.set("grad_checkpoint")
	rest := map[string]any{}
	var finetuning string
	var quantBits int64
	quantMethod := "bitsandbytes"
	pure := false
	for _, k := range sortedKeys(obj) {
		v := obj[k]
		switch k {
		case "finetuning_type":
			finetuning, _ = r.stringValue(k, v)
		case "stage":
			if s, _ := toString(v); s != "sft" && s != "pt" {
				r.ignore(k, reasonNotModelled) // DPO/PPO/KTO keep reference or reward models
			}
		case "cutoff_len":
			r.intKey(k, v, "seq_len")
		case "disable_gradient_checkpointing":
			if r.flag(k, v) {
				j.GradCheckpoint = "none"
			}
		case "flash_attn":
			r.lfAttention(k, v)
		case "enable_liger_kernel":
			r.onTrue(k, v, func() { j.FusedLoss = "liger" }, "fused_loss")
		case "use_unsloth":
			// Unsloth: offloaded gradient checkpointing, chunked fused CE.
			r.onTrue(k, v, func() { j.ActivationOffload, j.FusedLoss = true, "liger" }, "activation_offload", "fused_loss")
		case "quantization_bit":
			if n, ok := toInt(v); ok && n > 0 {
				quantBits = n
			} else if !isNull(v) {
				r.bad(k, v, "a number of bits such as 4 or 8")
			}
		case "quantization_method":
			if s, ok := r.stringValue(k, v); ok {
				quantMethod = s
			}
		case "quantization_type":
			r.stringKey(k, v, "quant_type")
		case "pure_bf16":
			pure = r.flag(k, v)
		case "freeze_trainable_layers", "freeze_trainable_modules":
			rest[k] = v
		case "additional_target":
			if isNull(v) {
				continue
			}
			if ts, ok := toStrings(v); ok {
				j.Trainable = ts
				r.set("trainable")
			} else {
				r.bad(k, v, "a list of module names")
			}
		default:
			if lfNoEffect.has(k) {
				continue
			}
			if lfNotModelled.has(k) {
				r.ignore(k, reasonNotModelled)
				continue
			}
			rest[k] = v
		}
	}
	r.lfMethod(finetuning, quantBits, quantMethod, rest)
	r.trainingArgs(rest)
	r.lfPrecision(pure)
}

// lfAttentions maps LLaMA-Factory's flash_attn values (AttentionFunction,
// hparams/model_args.py) onto attention kernels; auto leaves the
// transformers default.
var lfAttentions = map[string]string{"auto": "", "disabled": "eager", "eager": "eager", "sdpa": "sdpa", "fa2": "flash"}

// lfAttention reads flash_attn.
func (r *reader) lfAttention(k string, v any) {
	s, ok := r.stringValue(k, v)
	if !ok {
		return
	}
	attn, known := lfAttentions[strings.ToLower(s)]
	switch {
	case !known:
		r.bad(k, v, "auto, disabled, sdpa or fa2")
	case attn != "":
		r.cfg.Job.Attention = attn
		r.set("attn")
	}
}

// lfMethod sets the fine-tuning method.
func (r *reader) lfMethod(finetuning string, bits int64, method string, rest map[string]any) {
	j := &r.cfg.Job
	switch strings.ToLower(finetuning) {
	case "", "lora":
		j.Method = "lora"
		bnb := method == "" || strings.HasPrefix(strings.ToLower(method), "b")
		switch {
		case bits == 0:
		case bits == 4 && bnb:
			j.Method = "qlora"
		case bits == 4 || bits == 8:
			j.Dtype = fmt.Sprintf("int%d", bits)
			r.set("dtype")
		case bnb:
			// model/model_utils/quantization.py: "Bitsandbytes only
			// accepts 4-bit or 8-bit quantization."
			r.bad("quantization_bit", bits, "4 or 8 with bitsandbytes")
		default:
			r.ignore("quantization_bit", reasonNotModelled) // HQQ/EETQ widths
		}
	case "full":
		j.Method = "full"
	case "freeze":
		j.Method = "frozen"
		n := int64(2) // LLaMA-Factory's default freeze_trainable_layers
		if v, ok := rest["freeze_trainable_layers"]; ok {
			switch x := v.(type) {
			case int:
				n = int64(x)
			default:
				r.bad("freeze_trainable_layers", v, "a whole number of layers (negative counts from the bottom)")
			}
		}
		if n >= 0 {
			j.Trainable = []string{fmt.Sprintf("top:%d", n)}
		} else {
			j.Trainable = []string{fmt.Sprintf("bottom:%d", -n)}
		}
		r.set("trainable")
		if m, ok := rest["freeze_trainable_modules"]; ok {
			if s, _ := toString(m); s != "all" {
				r.ignore("freeze_trainable_modules", reasonNotModelled)
			}
		}
	default:
		r.ignore("finetuning_type", reasonNotModelled)
		return
	}
	delete(rest, "freeze_trainable_layers")
	delete(rest, "freeze_trainable_modules")
	r.set("method")
}

// lfPrecision applies LLaMA-Factory's dtype rules after the
// TrainingArguments keys were read as HF Trainer flags.
func (r *reader) lfPrecision(pure bool) {
	j := &r.cfg.Job
	if j.Engine == "deepspeed" || j.Method == "qlora" || j.Dtype == "int8" || j.Dtype == "int4" {
		return
	}
	if j.ComputeDtype != "" && j.ComputeDtype != "fp32" && j.Dtype == "fp32" {
		// bf16/fp16: the model is loaded in the compute dtype.
		half := j.ComputeDtype
		j.Dtype, j.ComputeDtype = half, ""
		r.unset("compute_dtype")
		if j.Method == "full" && !pure && j.Engine != "fsdp" && j.Engine != "fsdp2" {
			// cast_trainable_params_to_fp32: fp32 trainable weights + autocast (AMP).
			j.Dtype, j.ComputeDtype = "fp32", half
			r.set("compute_dtype")
		}
		r.cfg.Notes = dropNote(r.cfg.Notes, "is AMP")
	}
}

// dropNote removes notes containing s.
func dropNote(notes []string, s string) []string {
	out := notes[:0]
	for _, n := range notes {
		if !strings.Contains(n, s) {
			out = append(out, n)
		}
	}
	return out
}

// ParseAxolotl reads an axolotl YAML (axolotl train file.yaml; keys from
// axolotl-ai-cloud/axolotl docs/config-reference and
// src/axolotl/utils/schemas). axolotl loads the model in bf16 when bf16 is
// true or auto.
func ParseAxolotl(data []byte, name string) (*Config, error) {
	return ParseAs(data, name, Axolotl)
}

// axolotlNoEffect are axolotl keys without a memory effect.
var axolotlNoEffect = &keySet{keys: []string{"base_model_config", "model_type", "tokenizer_type", "tokenizer_config", "trust_remote_code",
	"strict", "datasets", "test_datasets", "dataset_prepared_path", "val_set_size", "output_dir", "num_epochs",
	"learning_rate", "lr_scheduler", "warmup_steps", "warmup_ratio", "weight_decay", "logging_steps",
	"saves_per_epoch", "evals_per_epoch", "eval_steps", "save_steps", "wandb_project", "wandb_entity",
	"wandb_watch", "wandb_name", "wandb_log_model", "wandb_run_id", "special_tokens", "tokens", "train_on_inputs",
	"group_by_length", "early_stopping_patience", "resume_from_checkpoint", "local_rank", "seed", "max_steps",
	"chat_template", "debug", "hub_model_id", "lora_model_dir", "lora_fan_in_fan_out", "tf32", "max_grad_norm",
	"eval_sample_packing", "shuffle_merged_datasets", "dataset_processes", "save_total_limit", "save_strategy",
	"eval_table_size", "eval_max_new_tokens", "loss_watchdog_threshold", "loss_watchdog_patience",
	"adam_beta1", "adam_beta2", "adam_epsilon", "lr_scheduler_kwargs", "cosine_min_lr_ratio", "hub_strategy",
	"plugins", "default_system_message", "is_llama_derived_model", "is_mistral_derived_model",
	"is_qwen_derived_model", "save_safetensors", "remove_unused_columns", "dataloader_num_workers",
	"dataloader_pin_memory", "dataloader_prefetch_factor", "ddp_timeout", "pretraining_dataset", "mlflow_tracking_uri",
	"use_wandb", "use_mlflow", "auto_resume_from_checkpoints", "save_first_step", "profiler_steps", "chat_template_jinja"}}

// axolotlNotModelled are axolotl keys whose memory effect is not modelled.
var axolotlNotModelled = &keySet{keys: []string{"gptq", "xformers_attention", "s2_attention", "flex_attention", "cut_cross_entropy",
	"unsloth_lora_mlp", "unsloth_lora_qkv", "unsloth_lora_o", "unsloth_cross_entropy_loss", "rl", "relora_steps",
	"lora_on_cpu", "peft_layers_to_transform", "sequence_parallel_degree", "context_parallel_size", "tensor_parallel_size",
	"relora_warmup_steps", "unfrozen_parameters", "fsdp_final_state_dict_type", "float16", "llama4_linearized_experts"}}

// axolotl reads an axolotl object.
func (r *reader) axolotl(obj map[string]any) {
	j := &r.cfg.Job
	half, quant := "", ""
	for _, k := range sortedKeys(obj) {
		v := obj[k]
		switch k {
		case "base_model":
			if s, ok := r.stringValue(k, v); ok {
				r.cfg.Model = s
			}
		case "adapter":
			if s, ok := r.stringValue(k, v); ok {
				j.Method = strings.ToLower(s)
				r.set("method")
			}
			if j.Method != "lora" && j.Method != "qlora" && r.keys["method"] {
				r.ignore(k, reasonNotModelled)
				r.unset("method")
			}
		case "load_in_4bit", "load_in_8bit":
			if r.flag(k, v) {
				quant = map[string]string{"load_in_4bit": "nf4", "load_in_8bit": "int8"}[k]
			}
		case "lora_target_linear":
			r.onTrue(k, v, func() { j.LoRATargets = []string{"all-linear"} }, "lora_target_modules")
		case "peft_use_dora":
			r.onTrue(k, v, func() { j.PEFTVariant = "dora" }, "peft_variant")
		case "sequence_len":
			r.intKey(k, v, "seq_len")
		case "sample_packing":
			r.boolKey(k, v, "packed")
		case "pad_to_sequence_len":
			if r.flag(k, v) && !r.keys["packed"] {
				t := true // every batch padded to sequence_len: a fixed length
				j.Packed = &t
				r.set("packed")
			}
		case "micro_batch_size":
			r.intKey(k, v, "per_device_batch")
		case "gradient_accumulation_steps":
			r.intKey(k, v, "grad_accum")
		case "optimizer":
			r.stringKey(k, v, "optimizer")
		case "bf16", "fp16", "bfloat16":
			if d := r.axolotlPrecision(k, v); d != "" && half == "" {
				half = d
			}
		case "gradient_checkpointing":
			r.axolotlCheckpointing(k, v)
		case "activation_offloading":
			r.boolKey(k, v, "activation_offload")
		case "flash_attention", "sdp_attention", "eager_attention":
			r.onTrue(k, v, func() {
				j.Attention = map[string]string{"flash_attention": "flash", "sdp_attention": "sdpa", "eager_attention": "eager"}[k]
			}, "attn")
		case "liger_fused_linear_cross_entropy":
			r.onTrue(k, v, func() { j.FusedLoss = "liger" }, "fused_loss")
		case "torch_compile":
			if isAuto(v) {
				continue
			}
			r.boolKey(k, v, "torch_compile")
		case "deepspeed":
			r.hfDeepSpeed(v)
		case "fsdp":
			r.hfFSDP(k, v)
		case "fsdp_config":
			r.fsdpConfig(k, v)
		case "fsdp_version":
			r.fsdpConfig("", map[string]any{"fsdp_version": v})
		default:
			if !r.peftKey(k, v) && !strings.HasPrefix(k, "liger_") {
				r.unlisted(k, k, axolotlNoEffect, axolotlNotModelled)
			}
		}
	}
	r.axolotlDtype(half, quant)
}

// axolotlDtype sets the weight and compute dtypes: the model is loaded in
// the bf16/fp16 dtype; a 4-bit (QLoRA) or 8-bit base keeps its storage
// and computes in that dtype.
func (r *reader) axolotlDtype(half, quant string) {
	j := &r.cfg.Job
	switch {
	case quant == "nf4" || j.Method == "qlora":
		if j.Method != "qlora" {
			j.Method = "qlora"
			r.set("method")
		}
		if half != "" {
			j.ComputeDtype = half
			r.set("compute_dtype")
		}
	case quant == "int8":
		j.Dtype = "int8"
		r.set("dtype")
		if half != "" {
			j.ComputeDtype = half
			r.set("compute_dtype")
		}
	case half != "":
		j.Dtype = half
		r.set("dtype")
	}
}

// axolotlPrecision reads bf16 / fp16 (true, false or auto) and returns
// the dtype it turns on.
func (r *reader) axolotlPrecision(k string, v any) string {
	if isNull(v) {
		return ""
	}
	on, ok := toBool(v)
	if isAuto(v) {
		on, ok = k != "fp16", true
		if on {
			r.note("%s: %s auto: bf16 where the GPU supports it (Ampere and later)", r.cfg.Name, k)
		}
	}
	if !ok {
		r.bad(k, v, `true, false or "auto"`)
		return ""
	}
	if !on {
		return ""
	}
	return map[string]string{"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16"}[k]
}

// axolotlCheckpointing reads gradient_checkpointing: true, false,
// "unsloth" or "offload" (checkpoints offloaded to the host).
func (r *reader) axolotlCheckpointing(k string, v any) {
	j := &r.cfg.Job
	if s, ok := v.(string); ok && (strings.EqualFold(s, "unsloth") || strings.EqualFold(s, "offload")) {
		j.GradCheckpoint, j.ActivationOffload = "full", true
		r.set("grad_checkpoint", "activation_offload")
		return
	}
	r.boolKey(k, v, "grad_checkpoint")
}
