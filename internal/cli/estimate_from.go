package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/internal/fsutil"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/trainconfig"
)

// trainConfigOptions are the flags that read the user's own training
// configs (--deepspeed, --training-args, --from) and the engine-buffer
// flags those configs set.
type trainConfigOptions struct {
	DeepSpeed    string
	TrainingArgs string
	From         string

	OverlapComm         bool
	ContiguousGradients bool
	sizes               [7]elemCount

	// warnings are added to the result: keys the files left unused,
	// settings two files disagree on.
	warnings []string
}

// elemSizeFlags are the DeepSpeed buffer-size flags, in elements, each
// the memory.Job key with dashes. zero marks the ZeRO-3 knobs that take
// 0 (prefetching, reuse and persistence off).
var elemSizeFlags = [7]struct {
	name, usage string
	zero        bool
}{
	{"reduce-bucket-size", "DeepSpeed reduce_bucket_size in elements (default 5e8; hidden² under the HF Trainer's auto)", false},
	{"allgather-bucket-size", "DeepSpeed allgather_bucket_size in elements (default 5e8)", false},
	{"stage3-prefetch-bucket-size", "DeepSpeed stage3_prefetch_bucket_size in elements (default 5e7; 0.9·hidden² under auto; 0: no prefetching)", true},
	{"stage3-max-live-parameters", "DeepSpeed stage3_max_live_parameters in elements (default 1e9)", true},
	{"stage3-max-reuse-distance", "DeepSpeed stage3_max_reuse_distance in elements (default 1e9): a ZeRO-3 module's parameters met again within this many stay gathered (0: none)", true},
	{"stage3-param-persistence-threshold", "DeepSpeed stage3_param_persistence_threshold in elements (default 1e5; 10·hidden under auto; 0: none persist)", true},
	{"sub-group-size", "DeepSpeed sub_group_size in elements (default 1e9)", false},
}

// elemCount is a flag value counting elements, written as an integer or
// in exponent form as DeepSpeed configs write them (5e8); zero says
// whether 0 is accepted.
type elemCount struct {
	n    int64
	zero bool
}

func (e *elemCount) String() string { return strconv.FormatInt(e.n, 10) }
func (e *elemCount) Type() string   { return "elements" }

// Set parses an element count.
func (e *elemCount) Set(s string) error {
	lo, what := 1.0, "a positive"
	if e.zero {
		lo, what = 0, "a non-negative"
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f < lo || f > 1e15 || f != float64(int64(f)) {
		return fmt.Errorf("want %s whole number of elements such as 500000000 or 5e8, got %q", what, s)
	}
	e.n = int64(f)
	return nil
}

// addTrainConfigFlags declares --deepspeed, --training-args, --from and
// the engine-buffer flags.
func addTrainConfigFlags(fs *pflag.FlagSet, o *estimateOptions) {
	t := &o.TrainConfig
	fs.StringVar(&t.DeepSpeed, "deepspeed", "", "DeepSpeed JSON config (ds_config.json): ZeRO stage, offload, buckets, batch, precision; \"auto\" values as the HF Trainer resolves them")
	fs.StringVar(&t.TrainingArgs, "training-args", "", "Hugging Face TrainingArguments JSON (TRL configs too) or an accelerate config YAML")
	fs.StringVar(&t.From, "from", "", "a LLaMA-Factory, axolotl or torchtune training YAML (or any config --deepspeed/--training-args read); the format is detected")
	fs.StringVar(&o.Job.PipelineSchedule, "pipeline-schedule", "", "pipeline schedule: 1f1b, interleaved or gpipe (default 1f1b; interleaved with --virtual-stages)")
	fs.BoolVar(&t.OverlapComm, "overlap-comm", false, "DeepSpeed overlap_comm: double reduce buckets (default on for ZeRO-3 only)")
	fs.BoolVar(&t.ContiguousGradients, "contiguous-gradients", true, "DeepSpeed contiguous_gradients: the ZeRO-1/2 reduce bucket")
	for i, f := range elemSizeFlags {
		t.sizes[i].zero = f.zero
		fs.Var(&t.sizes[i], f.name, f.usage)
	}
	fs.Float64Var(&o.Job.DDPBucketCapMB, "ddp-bucket-cap-mb", 0, "DDP bucket_cap_mb (default 25; the buckets cover every gradient whatever their size)")
	fs.BoolVar(&o.Job.GradientAsBucketView, "gradient-as-bucket-view", false, "DDP gradient_as_bucket_view: gradients are views of the buckets (no second copy)")
}

// applyTrainConfig reads the config files and fills the job settings the
// command line (and the --config job file) leave open, then the engine
// buffer flags. Files are applied --from, --training-args, --deepspeed:
// a later file wins a setting two files disagree on, with a warning.
func (o *estimateOptions) applyTrainConfig(fs *pflag.FlagSet) error {
	t := &o.TrainConfig
	o.applyBufferFlags(fs)
	var cfgs []*trainconfig.Config
	for _, in := range []struct {
		flag, path string
		formats    []trainconfig.Format
	}{
		{"--from", t.From, nil},
		{"--training-args", t.TrainingArgs, []trainconfig.Format{trainconfig.TrainingArgs, trainconfig.Accelerate}},
		{"--deepspeed", t.DeepSpeed, []trainconfig.Format{trainconfig.DeepSpeed}},
	} {
		if in.path == "" {
			continue
		}
		c, err := readTrainConfig(in.flag, in.path, in.formats)
		if err != nil {
			return err
		}
		cfgs = append(cfgs, c)
		if c.DeepSpeedFile != "" && t.DeepSpeed == "" {
			ds, err := o.referencedDeepSpeed(in.path, c)
			if err != nil {
				return err
			}
			if ds != nil {
				cfgs = append(cfgs, ds)
			}
		}
	}
	given := map[string]string{}
	skip := func(key string) bool { return overridden(fs, key) }
	for _, c := range cfgs {
		o.checkConflicts(c, given)
		c.Apply(&o.Job, skip)
		if o.Model == "" && c.Model != "" {
			o.Model = c.Model
		}
		t.warnings = append(t.warnings, c.Warnings()...)
		t.warnings = append(t.warnings, c.Notes...)
	}
	return nil
}

// applyBufferFlags copies the engine-buffer flags that were given onto the job.
func (o *estimateOptions) applyBufferFlags(fs *pflag.FlagSet) {
	t := &o.TrainConfig
	if fs.Changed("overlap-comm") {
		v := t.OverlapComm
		o.Job.OverlapComm = &v
	}
	if fs.Changed("contiguous-gradients") {
		v := t.ContiguousGradients
		o.Job.ContiguousGradients = &v
	}
	j := &o.Job
	set := [len(elemSizeFlags)]func(n int64){
		func(n int64) { j.ReduceBucketSize = n },
		func(n int64) { j.AllgatherBucketSize = n },
		func(n int64) { j.PrefetchBucketSize = &n },
		func(n int64) { j.MaxLiveParameters = &n },
		func(n int64) { j.MaxReuseDistance = &n },
		func(n int64) { j.ParamPersistenceThreshold = &n },
		func(n int64) { j.SubGroupSize = n },
	}
	for i, f := range elemSizeFlags {
		if fs.Changed(f.name) {
			set[i](t.sizes[i].n)
		}
	}
}

// readTrainConfig reads one config file; formats limits what the flag
// accepts (nil: any).
func readTrainConfig(flag, path string, formats []trainconfig.Format) (*trainconfig.Config, error) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	c, err := trainconfig.Parse(data, path)
	if errors.Is(err, trainconfig.ErrUnknownFormat) && len(formats) == 1 {
		// A file given for one format is read as that format even when
		// its keys do not identify it. A file that was recognised keeps
		// its own errors.
		c, err = trainconfig.ParseAs(data, path, formats[0])
	}
	if err != nil {
		// The file is bad, not the command line: exit status 1.
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if formats != nil && !containsFormat(formats, c.Format) {
		return nil, usageErrorf("%s %s: this is a %s config; pass it with %s", flag, path, c.Format, flagOfFormat(c.Format))
	}
	return c, nil
}

// readConfigFile reads a config file, refusing anything larger than the
// readers accept.
func readConfigFile(path string) ([]byte, error) {
	data, err := fsutil.ReadFile(path, trainconfig.MaxSize)
	if tl, ok := errors.AsType[*fsutil.TooLargeError](err); ok {
		return nil, fmt.Errorf("%s: %d bytes is larger than the %d a config may have", path, tl.Size, tl.Limit)
	}
	return data, err
}

// referencedDeepSpeed reads the DeepSpeed config a LLaMA-Factory/axolotl/
// TrainingArguments file names, relative to that file or to the working
// directory; a missing file is a warning, not an error.
func (o *estimateOptions) referencedDeepSpeed(from string, c *trainconfig.Config) (*trainconfig.Config, error) {
	candidates := []string{c.DeepSpeedFile}
	if !filepath.IsAbs(c.DeepSpeedFile) {
		candidates = append(candidates, filepath.Join(filepath.Dir(from), c.DeepSpeedFile))
	}
	for _, p := range candidates {
		if _, err := os.Stat(p); err == nil {
			return readTrainConfig(from+" deepspeed", p, []trainconfig.Format{trainconfig.DeepSpeed})
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: deepspeed %s: %w", from, p, err)
		}
	}
	o.TrainConfig.warnings = append(o.TrainConfig.warnings, fmt.Sprintf("%s: deepspeed config %s not found; DeepSpeed's defaults assumed (pass it with --deepspeed)", from, c.DeepSpeedFile))
	return nil, nil
}

// checkConflicts warns when c sets a key an earlier file set differently.
func (o *estimateOptions) checkConflicts(c *trainconfig.Config, given map[string]string) {
	var mine memory.Job
	c.Apply(&mine, nil)
	for _, k := range c.Keys {
		var val string
		if jk, ok := memory.LookupJobKey(k); ok {
			val = fmt.Sprint(jk.Value(&mine))
		}
		if prev, ok := given[k]; ok && prev != val {
			o.TrainConfig.warnings = append(o.TrainConfig.warnings, fmt.Sprintf("%s: %s = %s overrides %s from an earlier config", c.Name, k, val, prev))
		}
		given[k] = val
	}
}

// containsFormat reports whether f is in list.
func containsFormat(list []trainconfig.Format, f trainconfig.Format) bool {
	for _, x := range list {
		if x == f {
			return true
		}
	}
	return false
}

// flagOfFormat names the flag that reads a format.
func flagOfFormat(f trainconfig.Format) string {
	switch f {
	case trainconfig.DeepSpeed:
		return "--deepspeed"
	case trainconfig.TrainingArgs, trainconfig.Accelerate:
		return "--training-args"
	}
	return "--from"
}
