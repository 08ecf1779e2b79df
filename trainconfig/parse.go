package trainconfig

import "fmt"

// Parse detects which training config data is and reads it. name is the
// file name used in messages. Detection looks at the top-level keys:
//
//   - a section with a _component_ key: torchtune;
//   - zero_optimization or train_micro_batch_size_per_gpu: DeepSpeed;
//   - distributed_type or compute_environment: accelerate;
//   - finetuning_type, cutoff_len or lora_target: LLaMA-Factory;
//   - base_model, micro_batch_size or sequence_len: axolotl;
//   - per_device_train_batch_size, output_dir or optim: TrainingArguments.
func Parse(data []byte, name string) (*Config, error) {
	obj, err := decode(data, name)
	if err != nil {
		return nil, err
	}
	f, ok := Detect(obj)
	if !ok {
		return nil, fmt.Errorf("%s: %w (want a DeepSpeed, TrainingArguments, accelerate, LLaMA-Factory, axolotl or torchtune config)", name, ErrUnknownFormat)
	}
	return parseAs(obj, name, f)
}

// ParseAs reads data as the given format.
//
// Both fail with a [*ValueError] when values of the file cannot be used
// (a ZeRO stage of 7, an offload device "disk"); unknown keys and
// settings that are not modelled are reported in [Config.Ignored].
func ParseAs(data []byte, name string, f Format) (*Config, error) {
	obj, err := decode(data, name)
	if err != nil {
		return nil, err
	}
	switch f {
	case DeepSpeed, TrainingArgs, Accelerate, LLaMAFactory, Axolotl, Torchtune:
	default:
		return nil, fmt.Errorf("%s: unknown format %q", name, f)
	}
	return parseAs(obj, name, f)
}

// parseAs dispatches a decoded object to its format's reader. Values
// that cannot be used make it fail with a [*ValueError] listing them all.
func parseAs(obj map[string]any, name string, f Format) (*Config, error) {
	r := newReader(name, f)
	switch f {
	case DeepSpeed:
		r.deepspeed(obj, "")
	case TrainingArgs:
		r.trainingArgs(obj)
	case Accelerate:
		r.accelerate(obj)
	case LLaMAFactory:
		r.llamaFactory(obj)
	case Axolotl:
		r.axolotl(obj)
	case Torchtune:
		r.torchtune(obj)
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	return r.done(), nil
}

// Detect names the format of a decoded config by its top-level keys.
func Detect(obj map[string]any) (Format, bool) {
	for _, v := range obj {
		if m, ok := v.(map[string]any); ok {
			if _, ok := m["_component_"]; ok {
				return Torchtune, true
			}
		}
	}
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := obj[k]; ok {
				return true
			}
		}
		return false
	}
	switch {
	case has("zero_optimization", "train_micro_batch_size_per_gpu"):
		return DeepSpeed, true
	case has("distributed_type", "compute_environment"):
		return Accelerate, true
	case has("finetuning_type", "cutoff_len", "lora_target"):
		return LLaMAFactory, true
	case has("base_model", "micro_batch_size", "sequence_len"):
		return Axolotl, true
	case has("per_device_train_batch_size", "output_dir", "optim", "gradient_accumulation_steps"):
		return TrainingArgs, true
	}
	return "", false
}
