// Package trainconfig reads the configuration files users already have
// for a training run and turns each into a partial [memory.Job]:
//
//   - a DeepSpeed JSON config ([ParseDeepSpeed]), with "auto" values
//     resolved as the Hugging Face Trainer's integration resolves them;
//   - Hugging Face TrainingArguments as JSON ([ParseTrainingArgs]) and an
//     accelerate config YAML ([ParseAccelerate]);
//   - LLaMA-Factory and axolotl YAML ([ParseLLaMAFactory], [ParseAxolotl]);
//   - a torchtune recipe config ([ParseTorchtune]).
//
// [Parse] detects which of these a file is. Every parser is a pure
// function from bytes to a [Config]: the job fields the file sets (named
// by their memory.Job JSON keys in [Config.Keys]), the model the file
// names, notes on assumptions, and the keys that were ignored — read but
// not modelled, or not known at all — which [Config.Warnings] turns into
// messages naming them. Keys that do not change memory (learning rate,
// logging, output paths) are accepted silently.
//
// # Bad values
//
// A value the tool itself would reject — of the wrong type or out of
// range, such as a ZeRO stage of 7, a negative bucket size, an offload
// device "disk" or fp16 and bf16 both enabled — is not replaced by a
// default: the parse fails with a [*ValueError] that names the file and
// lists every such value by key path, with what the key accepts. "auto"
// is accepted wherever DeepSpeed or the Hugging Face Trainer resolve it.
//
// # Merging
//
// A Config is partial: [Config.Apply] copies the fields it sets onto a
// job, skipping the keys a caller says were given elsewhere (command-line
// flags win over files).
package trainconfig
