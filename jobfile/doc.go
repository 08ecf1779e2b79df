// Package jobfile reads job files: a job for gpumem written down once and
// estimated, validated and shared as a file instead of a command line.
//
// # Job files
//
// A job file is a JSON or YAML object whose keys are the JSON names of
// [memory.Job] fields ("seq_len", "per_device_batch", "zero", ...) plus
// "model": a catalog id or alias, a Hub id or a config.json path, or an
// object giving only a size ({"num_parameters": "7B"}) from which
// [Shape.Model] builds a synthetic Llama-like model. Sizes may be written
// for people: "trainable_params": "1.2M", "gpu_memory": "80GiB".
// "constants" maps named constants of the memory model to values.
//
//	{
//	  "model": "llama3-8b",
//	  "method": "lora", "lora_rank": 16, "lora_target_modules": ["q_proj", "v_proj"],
//	  "seq_len": 4096, "per_device_batch": 2, "grad_checkpoint": "full",
//	  "gpu_memory": "80GiB",
//	  "constants": {"fragmentation": 0.08}
//	}
//
// Keys are matched as written, else in lower case with underscores for
// dashes ("Seq-Len" is seq_len), the spellings the HTTP API has always
// taken; a key given twice under two spellings is a problem. A key whose
// value is null is not set. The mode defaults to train, as the CLI's
// --mode does.
//
// [Parse] checks everything it can without a model and reports every
// problem at once in an [*Error]: unknown keys (with the nearest known
// key), values of the wrong type and impossible values. Named settings
// (dtype, optimizer, engine, ...) are checked by the estimators
// themselves on a tiny model, so a file accepts exactly the spellings the
// command line does.
//
// [ParseJSON] reads the same from a JSON object embedded in a larger
// request (the HTTP API's POST bodies), handing back the caller's own
// keys. [MissingModel], [Mentions] and [File.SyntheticModel] let every
// front end report and build the model the same way.
//
// # Constants profiles
//
// [LoadConstants] reads the "constants" object on its own, as a profile
// of named constants applied to any job.
//
// # Engine-calculator files
//
// Files in the sectioned layout of the engine calculators ("model",
// "training", "parallelism", "engine", "hardware" objects; see
// [ParseCalculator]) are read too, and [Parse] tells the two layouts
// apart by their sections.
package jobfile
