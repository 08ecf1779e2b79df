package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/gpumem/gpumem/internal/jsonkeys"
)

// Bounds on values read from a config. They reject absurd sizes before any
// arithmetic; real models are orders of magnitude below them.
const (
	maxDim       = 1 << 24 // widths, vocabularies, head counts, ranks
	maxLayers    = 1 << 12 // layers of one stack
	maxExperts   = 1 << 14 // routed experts per layer
	maxPositions = 1 << 31 // max_position_embeddings and similar (informational)
)

// keyAliases lists, for each canonical Hugging Face key, the legacy or
// family-specific spellings that mean the same thing, in the order they are
// tried. This is the one place alternate names are resolved: GPT-2 style
// (n_embd, n_layer, n_head, n_inner, n_positions), Falcon/RefinedWeb
// (n_head_kv, num_kv_heads), T5/BART (d_model, num_layers, num_heads, d_ff),
// OPT (ffn_dim), ChatGLM (multi_query_group_num).
var keyAliases = map[string][]string{
	"num_hidden_layers":       {"n_layer", "n_layers", "num_layers"},
	"hidden_size":             {"n_embd", "d_model"},
	"num_attention_heads":     {"n_head", "n_heads", "num_heads"},
	"num_key_value_heads":     {"n_head_kv", "num_kv_heads", "multi_query_group_num"},
	"intermediate_size":       {"n_inner", "ffn_dim", "d_ff", "ffn_hidden_size"},
	"max_position_embeddings": {"n_positions", "max_sequence_length", "seq_length"},
	"num_local_experts":       {"num_experts", "n_routed_experts", "moe_num_experts"},
	"num_experts_per_tok":     {"experts_per_token", "moe_top_k"},
}

// parseState is shared by a config and its sub-configs: the file being
// read, the first error met and the warnings collected.
type parseState struct {
	file     string
	err      error
	warnings []string
}

// config is one JSON object of a config file with typed accessors. An
// accessor that meets a bad value records a *ConfigError (the first one
// wins) and returns its default, so a reader can read all its keys and
// check c.err() once.
type config struct {
	st     *parseState
	prefix string // key path of this object, "" or "text_config."
	m      map[string]any
}

// decodeConfig parses data as one JSON object.
func decodeConfig(file string, data []byte) (*config, error) {
	data, python := rewritePythonFloats(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, &ConfigError{File: file, Want: "a JSON object", Err: err}
	}
	if m == nil {
		return nil, &ConfigError{File: file, Want: "a JSON object", Got: "null"}
	}
	if dec.More() {
		return nil, &ConfigError{File: file, Want: "a single JSON object", Got: "trailing data"}
	}
	if err := jsonkeys.Check(data); err != nil {
		var de *jsonkeys.DuplicateError
		errors.As(err, &de)
		return nil, &ConfigError{File: file, Key: de.Path, Err: fmt.Errorf("given twice (lines %d and %d); each key once", de.First, de.Line)}
	}
	if python {
		restorePythonFloats(m)
	}
	return &config{st: &parseState{file: file}, m: m}, nil
}

func (c *config) err() error { return c.st.err }

func (c *config) warnf(format string, args ...any) {
	c.st.warnings = append(c.st.warnings, fmt.Sprintf(format, args...))
}

// fail records a ConfigError for key unless one is already recorded.
func (c *config) fail(key, want string, got any) {
	if c.st.err != nil {
		return
	}
	e := &ConfigError{File: c.st.file, Key: c.prefix + key, Want: want}
	if got != nil {
		e.Got = describe(got)
	}
	c.st.err = e
}

// describe renders a JSON value for an error message, shortened.
func describe(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		s = strconv.Quote(v)
	case json.Number:
		s = v.String()
	case map[string]any:
		s = "an object"
	case []any:
		s = "an array"
	default:
		s = fmt.Sprint(v)
	}
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// lookup returns the value of key or of its first present alias, and the
// key it was found under. JSON null counts as absent.
func (c *config) lookup(key string) (any, string, bool) {
	if c == nil {
		return nil, key, false
	}
	if v, ok := c.m[key]; ok && v != nil {
		return v, key, true
	}
	for _, alt := range keyAliases[key] {
		if v, ok := c.m[alt]; ok && v != nil {
			return v, alt, true
		}
	}
	return nil, key, false
}

// has reports whether key (or an alias) is present and not null.
func (c *config) has(key string) bool {
	_, _, ok := c.lookup(key)
	return ok
}

// integer converts a JSON number to an int64 when it is integral.
func integer(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// intIn reads key as an integer in [lo, hi], or def when absent.
func (c *config) intIn(key string, def, lo, hi int) int {
	v, k, ok := c.lookup(key)
	if !ok {
		return def
	}
	i, isInt := integer(v)
	if !isInt || i < int64(lo) || i > int64(hi) {
		want := "an integer"
		switch {
		case lo == 1:
			want = "a positive integer"
		case lo == 0:
			want = "a non-negative integer"
		}
		if isInt && i > int64(hi) {
			want += fmt.Sprintf(" at most %d", hi)
		}
		c.fail(k, want, v)
		return def
	}
	return int(i)
}

// dim reads a positive size (width, head count, vocabulary) or returns def
// when absent. A def of 0 makes the key required.
func (c *config) dim(key string, def int) int {
	if def <= 0 && !c.has(key) {
		c.fail(key, "a positive integer", nil)
		return 0
	}
	return c.intIn(key, def, 1, maxDim)
}

// layers reads a positive layer count, required when def is 0.
func (c *config) layers(key string, def int) int {
	if def <= 0 && !c.has(key) {
		c.fail(key, "a positive integer", nil)
		return 0
	}
	return c.intIn(key, def, 1, maxLayers)
}

// count reads a non-negative count (optional sizes such as ranks, shared
// experts, dense-layer counts), def when absent.
func (c *config) count(key string, def int) int {
	return c.intIn(key, def, 0, maxDim)
}

// boolean reads key as a JSON boolean, def when absent.
func (c *config) boolean(key string, def bool) bool {
	v, k, ok := c.lookup(key)
	if !ok {
		return def
	}
	b, isBool := v.(bool)
	if !isBool {
		c.fail(k, "true or false", v)
		return def
	}
	return b
}

// str reads key as a string, def when absent.
func (c *config) str(key, def string) string {
	v, k, ok := c.lookup(key)
	if !ok {
		return def
	}
	s, isStr := v.(string)
	if !isStr {
		c.fail(k, "a string", v)
		return def
	}
	if len(s) > maxString {
		c.fail(k, wantName, v)
		return def
	}
	return s
}

// maxString bounds the strings read from a config: names such as
// model_type, an architecture, a dtype or a module name, all far shorter.
// A longer one is refused rather than echoed in every message and report.
const maxString = 256

// wantName is what a string longer than maxString was expected to be.
var wantName = fmt.Sprintf("a name of at most %d characters", maxString)

// number reads key as a finite number, def when absent.
func (c *config) number(key string, def float64) float64 {
	v, k, ok := c.lookup(key)
	if !ok {
		return def
	}
	n, isNum := v.(json.Number)
	f, err := n.Float64()
	if !isNum || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		c.fail(k, "a number", v)
		return def
	}
	return f
}

// ints reads key as an array of integers in [lo, hi]; nil when absent.
func (c *config) ints(key string, lo, hi int) []int {
	v, k, ok := c.lookup(key)
	if !ok {
		return nil
	}
	arr, isArr := v.([]any)
	if !isArr || len(arr) > maxLayers*4 {
		c.fail(k, "an array of integers", v)
		return nil
	}
	out := make([]int, 0, len(arr))
	for i, e := range arr {
		n, isInt := integer(e)
		if !isInt || n < int64(lo) || n > int64(hi) {
			c.fail(fmt.Sprintf("%s[%d]", k, i), fmt.Sprintf("an integer in [%d, %d]", lo, hi), e)
			return nil
		}
		out = append(out, int(n))
	}
	return out
}

// strs reads key as an array of strings; nil when absent. A lone string
// is read as a one-element array.
func (c *config) strs(key string) []string {
	v, k, ok := c.lookup(key)
	if !ok {
		return nil
	}
	if s, isStr := v.(string); isStr {
		if len(s) > maxString {
			c.fail(k, wantName, v)
			return nil
		}
		return []string{s}
	}
	arr, isArr := v.([]any)
	if !isArr {
		c.fail(k, "an array of strings", v)
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, isStr := e.(string)
		if !isStr {
			c.fail(fmt.Sprintf("%s[%d]", k, i), "a string", e)
			return nil
		}
		if len(s) > maxString {
			c.fail(fmt.Sprintf("%s[%d]", k, i), wantName, e)
			return nil
		}
		out = append(out, s)
	}
	return out
}

// sub returns the object at key as a config sharing c's state, or nil when
// absent. A non-object value is an error.
func (c *config) sub(key string) *config {
	v, k, ok := c.lookup(key)
	if !ok {
		return nil
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		c.fail(k, "an object", v)
		return nil
	}
	return &config{st: c.st, prefix: c.prefix + k + ".", m: m}
}

// orEmpty returns c, or an empty object sharing parent's state when c is
// nil, so readers can apply their defaults to an absent sub-config.
func (c *config) orEmpty(parent *config, key string) *config {
	if c != nil {
		return c
	}
	return &config{st: parent.st, prefix: parent.prefix + key + ".", m: map[string]any{}}
}

// jsonNumber converts a decimal string to the type decodeConfig produces.
func jsonNumber(s string) any { return json.Number(s) }

// arrayLen is the length of the array at key, def when absent.
func (c *config) arrayLen(key string, def int) int {
	v, k, ok := c.lookup(key)
	if !ok {
		return def
	}
	arr, isArr := v.([]any)
	if !isArr || len(arr) > maxDim {
		c.fail(k, "an array", v)
		return def
	}
	return len(arr)
}
