package cli

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/jobfile"
	"github.com/gpumem/gpumem/model"
)

// A job file (--config) is applied as if its settings had been typed as
// flags, before the flags are interpreted: a setting the command line
// also gives (under any spelling) is skipped, so flags override the file,
// and every check of the flags applies to the file as well.

// jobKeyFlags names the flag of each memory.Job key whose flag is not the
// key with dashes for underscores.
var jobKeyFlags = map[string]string{
	"torch_compile":           "compile",
	"virtual_pipeline_stages": "virtual-stages",
	"batch":                   "batch-size",
	"gpu_memory_bytes":        "gpu-memory",
}

// jobKeyOverriders lists, per key, the flags besides its own (and their
// aliases) that set it.
var jobKeyOverriders = map[string][]string{
	"per_device_batch": {"batch-size"},
	"attn":             {"flashattn"},
	"method":           {"lora", "qlora"},
	"fused_loss":       {"liger"},
}

// jobKeyNoFlag lists keys that are not applied as flags: task_head has
// no flag, constants merge with --set by name. Keys whose flag does not
// exist (a Job field newer than the flags) are copied too.
var jobKeyNoFlag = map[string]bool{"task_head": true, "constants": true}

// flagForKey returns the flag a job-file key sets.
func flagForKey(key string) string {
	if f, ok := jobKeyFlags[key]; ok {
		return f
	}
	return strings.ReplaceAll(key, "_", "-")
}

// overridden reports whether the command line gives the setting of key.
func overridden(fs *pflag.FlagSet, key string) bool {
	flag := flagForKey(key)
	names := append([]string{flag}, jobKeyOverriders[key]...)
	for _, a := range aliasFlags {
		if a.Canonical == flag {
			names = append(names, a.Name)
		}
	}
	for _, n := range names {
		if fs.Lookup(n) != nil && fs.Changed(n) {
			return true
		}
	}
	return false
}

// applyJobFile sets the flags the file gives and the command line does
// not, and the model when none was given. Constants the file sets become
// --set values unless --set (or a calibration profile) names them.
func (o *estimateOptions) applyJobFile(fs *pflag.FlagSet, f *jobfile.File) error {
	if o.Model == "" {
		o.Model = f.Model
	}
	o.copyKeys = nil
	for _, key := range f.Keys {
		flag := flagForKey(key)
		if key != "constants" && (jobKeyNoFlag[key] || fs.Lookup(flag) == nil) {
			o.copyKeys = append(o.copyKeys, key)
			continue
		}
		if jobKeyNoFlag[key] || overridden(fs, key) {
			continue
		}
		if err := fs.Set(flag, f.Value(key)); err != nil {
			return fmt.Errorf("%s: %s: %w", f.Name, key, err)
		}
	}
	given := map[string]bool{}
	for _, kv := range o.Set {
		name, _, _ := strings.Cut(kv, "=")
		given[strings.ToLower(strings.TrimSpace(name))] = true
	}
	names := make([]string, 0, len(f.Job.Constants))
	for name := range f.Job.Constants {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, inProfile := o.profile[name]; !given[strings.ToLower(name)] && !inProfile {
			if err := fs.Set("set", name+"="+fmtFloat(f.Job.Constants[name])); err != nil {
				return err
			}
		}
	}
	return nil
}

// finishJobFile copies the keys that have no flag onto the job.
func (o *estimateOptions) finishJobFile(f *jobfile.File) {
	if f == nil {
		return
	}
	for _, key := range o.copyKeys {
		f.CopyTo(&o.Job, key)
	}
}

// loadJobFile reads --config; problems become one error listing them all.
func loadJobFile(path string) (*jobfile.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := jobfile.Load(path)
	if err != nil {
		var je *jobfile.Error
		if errors.As(err, &je) {
			return nil, fmt.Errorf("--config %w", err)
		}
		return nil, fmt.Errorf("--config: %w", err)
	}
	return f, nil
}

// loadConstantsFile reads --constants.
func loadConstantsFile(path string) (map[string]float64, error) {
	if path == "" {
		return nil, nil
	}
	c, err := jobfile.LoadConstants(path)
	if err != nil {
		return nil, fmt.Errorf("--constants %w", err)
	}
	return c, nil
}

// syntheticModel builds the model of a file that gives only a size, and
// says which shape was assumed (as the HTTP API does for such a body).
func syntheticModel(jf *jobfile.File) (*model.Model, error) {
	m, err := jf.SyntheticModel()
	if err != nil {
		return nil, fmt.Errorf("%s: model: %w", jf.Name, err)
	}
	return m, nil
}
