package cli

import (
	"strings"

	"github.com/gpumem/gpumem/memory"
)

// keyFlags are the memory.Job keys whose flag is not the key with dashes
// for underscores.
var keyFlags = map[string]string{
	"batch":                   "batch-size",
	"torch_compile":           "compile",
	"virtual_pipeline_stages": "virtual-stages",
	"gpu_memory_bytes":        "gpu-memory",
	"host_memory_bytes":       "host-memory",
	"constants":               "set",
	// torchao's name for it is long; the flag follows torchtitan's float8 options.
	"enable_fsdp_float8_all_gather": "float8-all-gather",
}

// flagless are the memory.Job keys no estimate flag sets; job files,
// training configs and the API set them, and messages name them as keys.
var flagless = map[string]bool{
	"task_head":              true,
	"gpu_compute_capability": true,
	// Facts of the board the GPU catalog fills in, like the compute
	// capability: whether the memory is the driver's total, and the form
	// factor.
	"gpu_memory_is_driver_total": true,
	"gpu_form_factor":            true,
}

// flagOfKey returns the flag (without dashes) that sets a memory.Job key,
// or "" when none does.
func flagOfKey(key string) string {
	if f, ok := keyFlags[key]; ok {
		return f
	}
	if flagless[key] {
		return ""
	}
	return strings.ReplaceAll(key, "_", "-")
}

// flagName writes a setting an error names as the command line gives it:
// "--seq-len", "--tp 3", "--allow-long" for a switch that is on,
// "--packed=false" for one that is off. A key without a flag keeps its
// JSON spelling.
func flagName(key, value string) string {
	f := flagOfKey(key)
	if f == "" {
		return memory.KeyName(key, value)
	}
	f = "--" + f
	if value == "" {
		return f
	}
	if k, ok := memory.LookupJobKey(key); ok && k.IsBool() {
		if value == "true" {
			return f
		}
		return f + "=" + value
	}
	return f + " " + value
}

// renderError is err's message as the command line prints it: the job
// settings it names are the flags that set them ([memory.FieldError]).
func renderError(err error) string {
	return memory.RenderError(err, flagName)
}
