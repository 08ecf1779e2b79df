package trainconfig

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/decoded"
	"github.com/gpumem/gpumem/internal/yamldoc"
	"github.com/gpumem/gpumem/memory"
)

// Format names a kind of training config file.
type Format string

// The formats the package reads.
const (
	DeepSpeed    Format = "deepspeed"
	TrainingArgs Format = "training_args"
	Accelerate   Format = "accelerate"
	LLaMAFactory Format = "llamafactory"
	Axolotl      Format = "axolotl"
	Torchtune    Format = "torchtune"
)

// MaxSize is the largest config file the parsers accept, in bytes.
const MaxSize = 4 << 20

// ErrUnknownFormat is returned by [Parse] when a file matches none of the
// formats.
var ErrUnknownFormat = errors.New("not a recognised training config")

// Config is what one training config file says about a job.
type Config struct {
	// Name is the file name used in messages.
	Name string `json:"name"`
	// Format is the kind of file.
	Format Format `json:"format"`
	// Model is the model the file names (a Hub id or a path), if any.
	Model string `json:"model,omitempty"`
	// Job holds the settings the file gives; only the fields named in
	// Keys are meaningful.
	Job memory.Job `json:"job"`
	// Keys are the memory.Job JSON keys the file sets, sorted.
	Keys []string `json:"keys"`
	// Ignored lists the file's keys that were not used, each with the
	// reason ("not modelled", "unknown key", ...), sorted by key.
	Ignored []Ignored `json:"ignored,omitempty"`
	// Notes are assumptions made while reading the file.
	Notes []string `json:"notes,omitempty"`
	// DeepSpeedFile is the DeepSpeed config the file points to (LLaMA-
	// Factory, axolotl, TrainingArguments "deepspeed" as a path); it is
	// not read by the parser.
	DeepSpeedFile string `json:"deepspeed_file,omitempty"`
}

// Ignored is a key of a config file that did not become a job setting.
type Ignored struct {
	// Key is the key's path in the file, e.g. "zero_optimization.round_robin_gradients".
	Key string `json:"key"`
	// Reason says why: the setting is not modelled, or the key is unknown.
	Reason string `json:"reason"`
}

// Has reports whether the file sets a memory.Job key.
func (c *Config) Has(key string) bool { return slices.Contains(c.Keys, key) }

// Warnings are the messages a front end shows for the ignored keys: one
// line per reason, naming the keys.
func (c *Config) Warnings() []string {
	if len(c.Ignored) == 0 {
		return nil
	}
	byReason := map[string][]string{}
	var reasons []string
	for _, ig := range c.Ignored {
		if _, ok := byReason[ig.Reason]; !ok {
			reasons = append(reasons, ig.Reason)
		}
		byReason[ig.Reason] = append(byReason[ig.Reason], ig.Key)
	}
	out := make([]string, 0, len(reasons))
	for _, r := range reasons {
		out = append(out, fmt.Sprintf("%s: ignored %s: %s", c.Name, r, strings.Join(byReason[r], ", ")))
	}
	return out
}

// Apply copies the settings of c onto job, except the keys for which
// skip returns true (settings given elsewhere that win). It returns the
// keys it copied.
func (c *Config) Apply(job *memory.Job, skip func(key string) bool) []string {
	var done []string
	for _, k := range c.Keys {
		jk, ok := memory.LookupJobKey(k)
		if !ok || (skip != nil && skip(k)) {
			continue
		}
		jk.Copy(job, &c.Job)
		done = append(done, k)
	}
	return done
}

// reader accumulates what a parser learns about one file.
type reader struct {
	cfg   *Config
	keys  map[string]bool
	autos []string   // "key: value it resolves to"
	bads  []BadValue // values that cannot be used; see [reader.bad]
}

// auto records a key whose value is "auto" and what it resolves to.
func (r *reader) auto(key, resolved string) {
	r.autos = append(r.autos, key+" → "+resolved)
}

// newReader starts a Config of the given format.
func newReader(name string, f Format) *reader {
	return &reader{cfg: &Config{Name: name, Format: f}, keys: map[string]bool{}}
}

// done sorts the keys and ignored entries and returns the Config.
func (r *reader) done() *Config {
	if len(r.autos) > 0 {
		sort.Strings(r.autos)
		r.note("%s: \"auto\" resolved as the Hugging Face Trainer does: %s", r.cfg.Name, strings.Join(r.autos, "; "))
	}
	for k := range r.keys {
		r.cfg.Keys = append(r.cfg.Keys, k)
	}
	sort.Strings(r.cfg.Keys)
	sort.SliceStable(r.cfg.Ignored, func(i, j int) bool { return r.cfg.Ignored[i].Key < r.cfg.Ignored[j].Key })
	return r.cfg
}

// set marks job keys as set by the file.
func (r *reader) set(keys ...string) {
	for _, k := range keys {
		r.keys[k] = true
	}
}

// unset forgets a job key (a later key of the file overrode it to the default).
func (r *reader) unset(key string) { delete(r.keys, key) }

// ignore records a key that was not used.
func (r *reader) ignore(key, reason string) {
	r.cfg.Ignored = append(r.cfg.Ignored, Ignored{Key: key, Reason: reason})
}

// note records an assumption.
func (r *reader) note(format string, args ...any) {
	r.cfg.Notes = append(r.cfg.Notes, fmt.Sprintf(format, args...))
}

// Reasons for ignored keys. A value that cannot be used is not ignored
// but an error ([reader.bad]).
const (
	reasonNotModelled = "settings not modelled"
	reasonUnknown     = "unknown keys"
)

// decode parses YAML (or JSON, which YAML reads too) into a map. Parser
// panics on hostile input become errors.
func decode(data []byte, name string) (obj map[string]any, err error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s: %d bytes is larger than the %d a config may have", name, len(data), MaxSize)
	}
	defer func() {
		if p := recover(); p != nil {
			obj, err = nil, fmt.Errorf("%s: unreadable YAML/JSON: %v", name, p)
		}
	}()
	v, err := yamldoc.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if v == nil {
		return nil, fmt.Errorf("%s: empty file", name)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want a mapping of keys to values at the top level, got %s", name, decoded.Kind(v))
	}
	return m, nil
}

// isAuto reports whether v is the HF/DeepSpeed placeholder "auto".
func isAuto(v any) bool {
	s, ok := v.(string)
	return ok && strings.EqualFold(strings.TrimSpace(s), "auto")
}

// isNull reports whether v is absent (YAML null or empty).
func isNull(v any) bool {
	if v == nil {
		return true
	}
	s, ok := v.(string)
	return ok && (s == "" || strings.EqualFold(s, "null") || strings.EqualFold(s, "none"))
}

// toInt reads a non-negative integer (integral floats such as 5e8 and
// numeric strings included), up to 1e15.
func toInt(v any) (int64, bool) {
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint64:
		f = float64(x)
	case float64:
		f = x
	case string:
		p, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, false
		}
		f = p
	default:
		return 0, false
	}
	if f != f || f < 0 || f > 1e15 || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// toFloat reads a finite number.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, x == x && x < 1e300 && x > -1e300
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && f == f && f < 1e300 && f > -1e300
	}
	return 0, false
}

// toBool reads a boolean, accepting the strings true/false/yes/no/1/0.
func toBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case int:
		return x != 0, x == 0 || x == 1
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "yes", "1", "on":
			return true, true
		case "false", "no", "0", "off", "":
			return false, true
		}
	}
	return false, false
}

// toString reads a scalar as a string.
func toString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x), true
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(x), true
	}
	return "", false
}

// toStrings reads a list of strings or a comma-separated string.
func toStrings(v any) ([]string, bool) {
	switch x := v.(type) {
	case string:
		return strings.FieldsFunc(x, func(r rune) bool { return r == ',' || r == ' ' }), true
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := toString(e)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

// sortedKeys returns the keys of a map in order, for stable output.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// join builds a nested key path.
func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// dtypeOf maps a precision name of any of the tools onto a memory dtype.
func dtypeOf(s string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "bf16", "bfloat16", "torch.bfloat16":
		return "bf16", true
	case "fp16", "float16", "half", "torch.float16":
		return "fp16", true
	case "fp32", "float32", "float", "torch.float32", "no":
		return "fp32", true
	}
	return "", false
}
