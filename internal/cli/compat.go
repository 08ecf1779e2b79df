package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/internal/fsutil"
	"github.com/gpumem/gpumem/internal/jsonkeys"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/report"
	"github.com/gpumem/gpumem/units"
)

// This file accepts the spellings users of other memory calculators type.
// Each spelling is an alias that sets a gpumem flag (so there is one
// implementation), and two spellings of one setting that disagree are an
// error naming both. README.md ("Coming from another calculator") has the
// tables.

// aliasFlag is another tool's name for a gpumem flag.
type aliasFlag struct {
	// Name is the alias as typed, without dashes.
	Name string
	// Canonical is the gpumem flag it sets.
	Canonical string
	// Bare is the value when the alias is given without one ("" means a
	// value is required).
	Bare string
	// Values translates the alias's values (lower-case) into the
	// canonical flag's; values not listed pass through.
	Values map[string]string
	// Usage is the help text.
	Usage string
}

// aliasFlags are the spellings of the LLM/VLM estimators, the training
// calculators and serving engines that name a gpumem setting differently.
var aliasFlags = []aliasFlag{
	{Name: "precision", Canonical: "dtype", Usage: "same as --dtype"},
	{Name: "seq-length", Canonical: "seq-len", Usage: "same as --seq-len"},
	{Name: "sequence-length", Canonical: "seq-len", Usage: "same as --seq-len"},
	{Name: "micro-batch-size", Canonical: "per-device-batch", Usage: "same as --per-device-batch"},
	{Name: "gradient-accumulation", Canonical: "grad-accum", Usage: "same as --grad-accum"},
	{Name: "gradient-accumulation-steps", Canonical: "grad-accum", Usage: "same as --grad-accum"},
	{Name: "gradient-checkpointing", Canonical: "grad-checkpoint", Bare: "true", Usage: "same as --grad-checkpoint (bare: full)"},
	{Name: "tensor-parallel-size", Canonical: "tp", Usage: "same as --tp"},
	{Name: "pipeline-parallel-size", Canonical: "pp", Usage: "same as --pp"},
	{Name: "data-parallel-size", Canonical: "dp", Usage: "same as --dp"},
	{Name: "lora-r", Canonical: "lora-rank", Usage: "same as --lora-rank"},
	{Name: "attn-implementation", Canonical: "attn", Usage: "same as --attn"},
	{Name: "kv-cache-type", Canonical: "kv-cache-dtype", Usage: "same as --kv-cache-dtype"},
	{Name: "context-length", Canonical: "max-model-len", Usage: "same as --max-model-len (SGLang)"},
	{Name: "max-running-requests", Canonical: "max-num-seqs", Usage: "same as --max-num-seqs (SGLang)"},
	{Name: "chunked-prefill-size", Canonical: "max-num-batched-tokens", Usage: "same as --max-num-batched-tokens (SGLang's prefill chunk)"},
	{Name: "page-size", Canonical: "block-size", Usage: "same as --block-size (SGLang)"},
	{Name: "cpu-offload-optimizer", Canonical: "offload-optimizer", Bare: "true",
		Values: map[string]string{"true": "cpu", "false": "none"}, Usage: "same as --offload-optimizer cpu"},
}

// boolWords are the values an optional-value flag takes as a separate word
// ("--gradient-checkpointing true").
var boolWords = []string{"true", "false"}

// compatOptions are the flags that only exist for other tools' users.
type compatOptions struct {
	aliases map[string]*string

	Probe         bool
	EstimateOnly  bool
	LoadFullModel bool

	// The LLM/VLM estimator's advanced-tuning flags (see finishTuning).
	GradCkptReduction float64
	AttnActFactorFA   float64
	AttnActFactorNoFA float64
	MLPActFactor      float64
	FragmentationGiB  float64
	MiscOverheadGiB   float64

	// The VRAM-table tool's flags.
	ShowDetailed bool
	ListTypes    bool
	ConfigDir    string
}

// addCompatFlags declares the aliases and the other tools' flags. The
// aliases and the answer-only flags are hidden from the help listing
// (README.md documents them); the advanced-tuning flags are listed, their
// help saying what each maps onto.
func addCompatFlags(fs *pflag.FlagSet, o *compatOptions) {
	o.aliases = map[string]*string{}
	for _, a := range aliasFlags {
		o.aliases[a.Name] = fs.String(a.Name, "", a.Usage)
		if a.Bare != "" {
			f := fs.Lookup(a.Name)
			f.NoOptDefVal = a.Bare
			_ = fs.SetAnnotation(a.Name, valuesAnnotation, boolWords)
		}
		_ = fs.MarkHidden(a.Name)
	}
	fs.BoolVar(&o.Probe, "probe", false, "other estimators run the model here; gpumem never does: use 'gpumem probe' on the GPU host")
	fs.BoolVar(&o.EstimateOnly, "estimate-only", false, "accepted for compatibility: gpumem only ever estimates")
	fs.BoolVar(&o.LoadFullModel, "load-full-model", false, "accepted for compatibility: not needed, parameters are counted exactly from config.json")
	fs.Float64Var(&o.GradCkptReduction, "grad-ckpt-reduction", 0, "fraction of the activations kept with layer checkpointing (0 < r <= 1): sets grad_ckpt_reduction, which replaces the derived checkpoints + one recomputed layer by r × the activations without checkpointing; needs --grad-checkpoint")
	fs.Float64Var(&o.AttnActFactorFA, "attn-act-factor-fa", 0, "hidden-size elements per token per layer the attention block saves with flash or SDPA attention: sets attn_act_factor_fa, which replaces the derived attention part (its norm, q/k/v, kernel output, logsumexp, adapters) by value × hidden × bytes(compute dtype)")
	fs.Float64Var(&o.AttnActFactorNoFA, "attn-act-factor-no-fa", 0, "the same for eager attention (--attn eager): sets attn_act_factor_no_fa, which replaces the per-token attention part; the s² scores and probabilities stay derived")
	fs.Float64Var(&o.MLPActFactor, "mlp-act-factor", 0, "hidden-size elements per token per layer the MLP block saves: sets mlp_act_factor, which replaces the derived MLP part (its norm, gate/up outputs, activation output, down input, MoE router and experts, adapters) by value × hidden × bytes(compute dtype)")
	fs.Float64Var(&o.FragmentationGiB, "fragmentation-gib", 0, "allocator cushion in GiB: sets the fragmentation fraction so that reserved = allocated + this many GiB")
	fs.Float64Var(&o.MiscOverheadGiB, "misc-overhead-gib", 0, "other non-PyTorch device memory in GiB: sets misc_overhead_mib (× 1024)")
	fs.BoolVar(&o.ShowDetailed, "show-detailed", false, "print the model at every weight dtype (weights, inference, full training, LoRA) instead of one estimate")
	fs.BoolVar(&o.ListTypes, "list-types", false, "list the weight dtypes (and those of --config-dir) and exit")
	fs.StringVar(&o.ConfigDir, "config-dir", "", "folder with data_types.json, gpu_types.json and display_settings.json (each optional)")
	for _, n := range []string{"probe", "estimate-only", "load-full-model"} {
		_ = fs.MarkHidden(n)
	}
}

// valuesAnnotation names the words an optional-value flag takes as a
// separate argument; rewriteBoolArgs joins them to the flag.
const valuesAnnotation = "gpumem/values"

// canonicalValue brings a flag value to the form two spellings are
// compared in: dtypes by their canonical name, checkpointing by mode.
func canonicalValue(flag, v string) string {
	v = strings.TrimSpace(v)
	switch flag {
	case "dtype":
		if d, err := memory.ParseDType(v); err == nil {
			return d.Name
		}
	case "grad-checkpoint":
		if gc, err := parseGradCheckpoint(v); err == nil {
			return gc
		}
	}
	return strings.ToLower(v)
}

// finishAliases copies each alias given onto its gpumem flag. An alias
// that disagrees with the gpumem flag, or with another alias of it, is an
// error naming both spellings.
func (o *compatOptions) finishAliases(fs *pflag.FlagSet) error {
	setBy := map[string]string{} // canonical flag -> spelling that set it
	for _, a := range aliasFlags {
		if !fs.Changed(a.Name) {
			continue
		}
		v := *o.aliases[a.Name]
		if t, ok := a.Values[strings.ToLower(strings.TrimSpace(v))]; ok {
			v = t
		}
		c := fs.Lookup(a.Canonical)
		if fs.Changed(a.Canonical) {
			if canonicalValue(a.Canonical, c.Value.String()) != canonicalValue(a.Canonical, v) {
				by := cmpOr(setBy[a.Canonical], a.Canonical)
				return usageErrorf("--%s %s and --%s %s disagree; give one", a.Name, *o.aliases[a.Name], by, shownValue(fs, by, o))
			}
			continue
		}
		if err := fs.Set(a.Canonical, v); err != nil {
			return usageErrorf("--%s: %w", a.Name, err)
		}
		setBy[a.Canonical] = a.Name
	}
	return nil
}

// shownValue is the value of flag name as the user typed it.
func shownValue(fs *pflag.FlagSet, name string, o *compatOptions) string {
	if p, ok := o.aliases[name]; ok {
		return *p
	}
	return fs.Lookup(name).Value.String()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// finishCompat answers the flags that have no gpumem counterpart and maps
// the advanced-tuning flags onto named constants.
func (o *compatOptions) finishCompat(fs *pflag.FlagSet, job *memory.Job) error {
	if o.Probe {
		return usageErrorf("--probe: gpumem estimate never runs the model; to measure a job on a GPU host, run 'gpumem probe' with the same model and job flags (it records torch and nvidia-smi peaks next to this estimate)")
	}
	return o.finishTuning(fs, job)
}

// tuningConstants are the advanced-tuning flags that set a named
// constant of the same meaning and unit (memory.Constants documents
// each). Values must be positive, as the estimator they come from
// requires: 0 would mean "derived" to gpumem.
var tuningConstants = []struct {
	flag, constant string
	value          func(*compatOptions) float64
}{
	{"grad-ckpt-reduction", "grad_ckpt_reduction", func(o *compatOptions) float64 { return o.GradCkptReduction }},
	{"attn-act-factor-fa", "attn_act_factor_fa", func(o *compatOptions) float64 { return o.AttnActFactorFA }},
	{"attn-act-factor-no-fa", "attn_act_factor_no_fa", func(o *compatOptions) float64 { return o.AttnActFactorNoFA }},
	{"mlp-act-factor", "mlp_act_factor", func(o *compatOptions) float64 { return o.MLPActFactor }},
}

// finishTuning maps the advanced-tuning flags onto named constants.
func (o *compatOptions) finishTuning(fs *pflag.FlagSet, job *memory.Job) error {
	for _, tc := range tuningConstants {
		if !fs.Changed(tc.flag) {
			continue
		}
		v, upTo := tc.value(o), constantMax(tc.constant)
		if !(v > 0 && v <= upTo) {
			return usageErrorf("--%s: want a value in (0, %s] (it sets %s), got %s", tc.flag, fmtFloat(upTo), tc.constant, fmtFloat(v))
		}
		if err := setConstantFromFlag(job, tc.constant, v, "--"+tc.flag); err != nil {
			return err
		}
	}
	if fs.Changed("misc-overhead-gib") {
		v := o.MiscOverheadGiB
		if !(v >= 0) {
			return usageErrorf("--misc-overhead-gib: want a non-negative size in GiB, got %g", v)
		}
		if err := setConstantFromFlag(job, "misc_overhead_mib", v*1024, "--misc-overhead-gib"); err != nil {
			return err
		}
	}
	if fs.Changed("fragmentation-gib") && !(o.FragmentationGiB >= 0) {
		return usageErrorf("--fragmentation-gib: want a non-negative size in GiB, got %g", o.FragmentationGiB)
	}
	return nil
}

// setConstantFromFlag sets a named constant from a tuning flag; a --set
// of the same constant with another value is an error naming both.
func setConstantFromFlag(job *memory.Job, name string, v float64, flag string) error {
	if old, ok := job.Constants[name]; ok && old != v {
		return usageErrorf("%s (%s=%s) and --set %s=%s disagree; give one", flag, name, fmtFloat(v), name, fmtFloat(old))
	}
	if job.Constants == nil {
		job.Constants = map[string]float64{}
	}
	job.Constants[name] = v
	return nil
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// constantMax is the largest value memory.Constants accepts for name.
func constantMax(name string) float64 {
	for _, c := range memory.Constants() {
		if c.Name == name {
			return c.Max
		}
	}
	return 0
}

// configDir is what --config-dir holds, as the VRAM-table calculators
// lay it out: data_types.json (extra weight formats, name → bytes per
// parameter), gpu_types.json (extra GPUs, in the format of --gpus-file)
// and display_settings.json (default --format and --units). Each file is
// optional; a folder that does not exist is an error.
type configDir struct {
	DataTypes []gpu.DataType
	GPUs      *gpu.Catalog
	Display   displaySettings
}

// displaySettings are the output defaults of display_settings.json.
type displaySettings struct {
	Format string `json:"format,omitempty"`
	Units  string `json:"units,omitempty"`
}

// loadConfigDir reads --config-dir; an empty dir gives an empty config.
func loadConfigDir(dir string) (*configDir, error) {
	c := &configDir{}
	if dir == "" {
		return c, nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, usageErrorf("--config-dir %s: not a folder", dir)
	}
	if p := filepath.Join(dir, "data_types.json"); fileExists(p) {
		dts, err := gpu.LoadDataTypes(p)
		if err != nil {
			return nil, fmt.Errorf("--config-dir: %w", err)
		}
		c.DataTypes = dts
	}
	if p := filepath.Join(dir, "gpu_types.json"); fileExists(p) {
		cat, err := gpu.LoadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--config-dir: %w", err)
		}
		c.GPUs = cat
	}
	if p := filepath.Join(dir, "display_settings.json"); fileExists(p) {
		d, err := loadDisplaySettings(p)
		if err != nil {
			return nil, err
		}
		c.Display = d
	}
	return c, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// maxDisplaySettings bounds display_settings.json, an object of two keys.
const maxDisplaySettings = 64 << 10

// loadDisplaySettings reads display_settings.json; unknown keys and
// values the renderers do not know are errors naming the file and key.
func loadDisplaySettings(path string) (displaySettings, error) {
	var d displaySettings
	data, err := fsutil.ReadFile(path, maxDisplaySettings)
	if err != nil {
		return d, fmt.Errorf("--config-dir: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return d, fmt.Errorf("--config-dir: %s: %w (want an object with \"format\" and/or \"units\")", path, err)
	}
	if err := jsonkeys.Check(data); err != nil {
		return d, fmt.Errorf("--config-dir: %s: %w", path, err)
	}
	if _, err := report.ParseFormat(cmpOr(d.Format, "table")); err != nil {
		return d, fmt.Errorf("--config-dir: %s: format: %w", path, err)
	}
	if _, err := report.ParseUnits(cmpOr(d.Units, "iec")); err != nil {
		return d, fmt.Errorf("--config-dir: %s: units: %w", path, err)
	}
	return d, nil
}

// renderOptions applies display_settings.json where --format and --units
// were not given.
func (c *configDir) renderOptions(cmd *cobra.Command, ro report.Options) report.Options {
	fs := cmd.Flags()
	if c.Display.Format != "" && !fs.Changed("format") {
		ro.Format, _ = report.ParseFormat(c.Display.Format)
	}
	if c.Display.Units != "" && !fs.Changed("units") {
		ro.Units, _ = report.ParseUnits(c.Display.Units)
	}
	return ro
}

// customType finds a data type of data_types.json by name.
func (c *configDir) customType(name string) (gpu.DataType, bool) {
	for _, d := range c.DataTypes {
		if strings.EqualFold(d.Name, strings.TrimSpace(name)) {
			return d, true
		}
	}
	return gpu.DataType{}, false
}

// applyToJob rejects a --dtype
// that only data_types.json defines: such a type has a storage width but
// no layout the estimators know, so only its weights row is shown by
// --show-detailed.
func (c *configDir) applyToJob(fs *pflag.FlagSet, j *memory.Job) error {
	if j.Dtype != "" {
		if _, err := memory.ParseWeightFormat(j.Dtype, false); err != nil {
			if d, ok := c.customType(j.Dtype); ok {
				return usageErrorf("--dtype %s: a data_types.json type (%g bytes per parameter) has no layout gpumem estimates jobs with; --show-detailed lists its weights", d.Name, d.BytesPerParam)
			}
		}
	}
	// --gpu itself is resolved against gpu_types.json by applyGPU, which
	// fills the same facts (CUDA total, compute capability) as the built-in
	// catalog does.
	return nil
}

// listTypes prints the weight formats gpumem estimates and those of
// data_types.json, with their storage width.
func listTypes(f *Factory, ro report.Options, c *configDir) error {
	type row struct {
		Name          string  `json:"name"`
		BitsPerWeight float64 `json:"bits_per_weight"`
		Source        string  `json:"source"`
	}
	var rows []row
	for _, name := range memory.WeightFormatNames() {
		wf, err := memory.ParseWeightFormat(name, false)
		if err != nil {
			return err
		}
		// Scales and zero points included, on a 4096×4096 matrix.
		const side = 4096
		bits := float64(wf.TensorBytes(side, side, 0)) * 8 / (side * side)
		rows = append(rows, row{Name: name, BitsPerWeight: bits, Source: wf.Name})
	}
	for _, d := range c.DataTypes {
		rows = append(rows, row{Name: d.Name, BitsPerWeight: d.Bits(), Source: "data_types.json (weights only)"})
	}
	if ro.Format == report.JSON {
		return report.WriteJSON(f.IO.Out, rows)
	}
	t := &report.TableData{Headers: []string{"dtype", "bits per weight", "format"}, Aligns: []report.Align{report.Left, report.Right, report.Left}}
	for _, r := range rows {
		t.AddRow(r.Name, strconv.FormatFloat(r.BitsPerWeight, 'f', 3, 64), r.Source)
	}
	return t.Render(f.IO.Out, ro.Format)
}

// showDetailed prints memory.DtypeTable: the model at every weight dtype,
// plus a weights-only row for each data_types.json type.
func showDetailed(f *Factory, m *model.Model, job memory.Job, c *configDir, ro report.Options) error {
	rows, err := memory.DtypeTable(m, job)
	if err != nil {
		return err
	}
	var total int64
	for _, mod := range m.Modules {
		total += mod.Params
	}
	for _, d := range c.DataTypes {
		w := units.FromFloat(float64(total) * d.BytesPerParam)
		rows = append(rows, memory.DtypeRow{Dtype: d.Name, WeightsBytes: w,
			Notes: []string{"data_types.json: weights only (parameters × bytes per parameter)"}})
	}
	if ro.Format == report.JSON {
		return report.WriteJSON(f.IO.Out, rows)
	}
	t := &report.TableData{
		Title:   fmt.Sprintf("%s (%s) at every weight dtype — device peaks", m.ID, units.Params(total)),
		Headers: []string{"dtype", "weights", "inference", "full training", "LoRA / QLoRA", "notes"},
		Aligns:  []report.Align{report.Left, report.Right, report.Right, report.Right, report.Right, report.Left},
	}
	cell := func(b units.Bytes) string {
		if b <= 0 {
			return "–"
		}
		return ro.Bytes(b)
	}
	for _, r := range rows {
		t.AddRow(r.Dtype, cell(r.WeightsBytes), cell(r.InferenceBytes), cell(r.TrainingBytes), cell(r.LoRABytes), strings.Join(r.Notes, "; "))
	}
	return t.Render(f.IO.Out, ro.Format)
}
