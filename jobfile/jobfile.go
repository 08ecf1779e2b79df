package jobfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gpumem/gpumem/internal/decoded"
	"github.com/gpumem/gpumem/internal/fsutil"
	"github.com/gpumem/gpumem/internal/jsonkeys"
	"github.com/gpumem/gpumem/internal/yamldoc"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
)

// MaxSize bounds a job file; larger files are not job files.
const MaxSize = 1 << 20

// File is a job read from a file.
type File struct {
	// Name is the file name used in messages.
	Name string
	// Layout is "job" for gpumem's flat layout, "engine-calculator" for
	// the sectioned one.
	Layout string
	// Model is the model reference ("" when the file gives a Shape or no model).
	Model string
	// Shape describes a synthetic model when the file gives only its
	// size (and maybe some dimensions) instead of a reference.
	Shape *Shape
	// Job is the job with every key of the file applied.
	Job memory.Job
	// Keys lists the memory.Job JSON keys the file sets, sorted, so that
	// a front end can let its own flags override exactly those.
	Keys []string
	// Notes say how the file was read where it was not literal (an
	// engine-calculator field mapped onto a gpumem setting, a field
	// that has no effect).
	Notes []string
}

// Has reports whether the file sets the memory.Job key.
func (f *File) Has(key string) bool {
	i := sort.SearchStrings(f.Keys, key)
	return i < len(f.Keys) && f.Keys[i] == key
}

// Problem is one thing wrong in a job file.
type Problem struct {
	// Key is the dotted key path ("training.batch_size"); empty for the
	// whole file.
	Key string `json:"key,omitempty"`
	// Message says what is wrong and what was expected.
	Message string `json:"message"`
}

// String renders the problem as "key: message".
func (p Problem) String() string {
	if p.Key == "" {
		return p.Message
	}
	return p.Key + ": " + p.Message
}

// Error lists every problem found in one file.
type Error struct {
	// File names the file, as given to Load or Parse.
	File string
	// Problems are in key order within each part of the file.
	Problems []Problem
}

// Error lists the problems, one per line after the first.
func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return e.File + ": " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", e.File, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Mentions reports whether a problem is about key or a key under it
// ("model" for "model.num_parameters"), so that a front end does not
// report that part of a file a second time.
func Mentions(problems []Problem, key string) bool {
	for _, p := range problems {
		if p.Key == key || strings.HasPrefix(p.Key, key+".") || strings.HasPrefix(p.Key, key+"[") {
			return true
		}
	}
	return false
}

// MissingModel is the problem of a file that gives neither a model
// reference nor a size, as every front end reports it.
func MissingModel() Problem {
	return Problem{Key: keyModel, Message: `missing: give a catalog id or alias, a Hub id, a config.json path, or {"num_parameters": "7B"}`}
}

// SyntheticModel builds the model of a file that gives a [Shape] instead
// of a reference, with the shape it assumed as the last of the model's
// Warnings, so that an estimate says so.
func (f *File) SyntheticModel() (*model.Model, error) {
	if f.Shape == nil {
		return nil, fmt.Errorf("%s: model: no size given", f.Name)
	}
	m, note, err := f.Shape.Model()
	if err != nil {
		return nil, err
	}
	m.Warnings = append(m.Warnings, note)
	return m, nil
}

// File layouts.
const (
	LayoutJob        = "job"
	LayoutCalculator = "engine-calculator"
)

// ErrTooLarge is returned for files above [MaxSize].
var ErrTooLarge = errors.New("file too large for a job file")

// Load reads and parses the job file at path (JSON, or YAML for .yaml
// and .yml names). Parse problems come as an [*Error].
func Load(path string) (*File, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// readFile reads a job file or constants profile of at most [MaxSize]
// bytes; a larger one is [ErrTooLarge].
func readFile(path string) ([]byte, error) {
	data, err := fsutil.ReadFile(path, MaxSize)
	if _, ok := errors.AsType[*fsutil.TooLargeError](err); ok {
		return nil, fmt.Errorf("%s: %w (limit %d bytes)", path, ErrTooLarge, MaxSize)
	}
	return data, err
}

// Parse decodes a job file. name is used in messages and its extension
// selects YAML (.yaml, .yml); any other name is read as JSON, then as
// YAML if it is not JSON. Files with engine-calculator sections go to
// [ParseCalculator]. Every problem found is reported in one [*Error].
func Parse(data []byte, name string) (*File, error) {
	obj, err := decodeObject(data, name)
	if err != nil {
		return nil, &Error{File: name, Problems: []Problem{{Message: err.Error()}}}
	}
	return parseObject(obj, name)
}

// ParseJSON reads a job given as one JSON object, such as the body of an
// HTTP request: the layouts, keys and checks of [Parse], for JSON only.
// The top-level keys in extra belong to the caller, not to the job (a
// list of GPUs to plan on, say): their decoded values are returned by
// key instead of being reported as unknown. name is used in messages.
// As with Parse, a file with problems comes back with an [*Error], and
// with the File read so far unless the data is not a JSON object.
func ParseJSON(data []byte, name string, extra ...string) (*File, map[string]any, error) {
	obj, err := decodeJSON(data)
	if err != nil {
		return nil, nil, &Error{File: name, Problems: []Problem{{Message: err.Error()}}}
	}
	var taken map[string]any
	for _, k := range sortedKeys(obj) {
		if e := normalKey(k); slices.Contains(extra, e) {
			if taken == nil {
				taken = map[string]any{}
			}
			taken[e] = obj[k]
			delete(obj, k)
		}
	}
	f, err := parseObject(obj, name)
	return f, taken, err
}

// parseObject reads a decoded file of either layout.
func parseObject(obj map[string]any, name string) (*File, error) {
	if isCalculator(obj) {
		return parseCalculatorObject(obj, name)
	}
	r := newReader(name)
	f := &File{Name: name, Layout: LayoutJob}
	r.readJob(obj, f)
	if err := r.err(); err != nil {
		return f, err
	}
	return f, nil
}

// decodeObject decodes a JSON or YAML object into generic values
// (json.Number for JSON numbers, int or float64 for YAML ones).
func decodeObject(data []byte, name string) (map[string]any, error) {
	ext := strings.ToLower(filepath.Ext(name))
	if ext == ".yaml" || ext == ".yml" {
		return decodeYAML(data)
	}
	obj, jerr := decodeJSON(data)
	if jerr == nil || ext == ".json" {
		return obj, jerr
	}
	if obj, yerr := decodeYAML(data); yerr == nil {
		return obj, nil
	}
	return nil, jerr
}

func decodeJSON(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("not valid JSON: more than one value")
	}
	if err := jsonkeys.Check(data); err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON object of job settings, got %s", decoded.Kind(v))
	}
	return obj, nil
}

func decodeYAML(data []byte) (map[string]any, error) {
	v, err := yamldoc.Decode(data)
	if yamldoc.IsDuplicate(err) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a YAML mapping of job settings, got %s", decoded.Kind(v))
	}
	return obj, nil
}

// sortedKeys returns the keys of obj in order, so problems come out in a
// stable order.
func sortedKeys(obj map[string]any) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
