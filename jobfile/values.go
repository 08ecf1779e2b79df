package jobfile

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/gpumem/gpumem/internal/decoded"
	"github.com/gpumem/gpumem/internal/textdist"
	"github.com/gpumem/gpumem/units"
)

// reader collects problems while converting generic values.
type reader struct {
	file     string
	problems []Problem
}

func newReader(file string) *reader { return &reader{file: file} }

func (r *reader) add(key, format string, args ...any) {
	r.problems = append(r.problems, Problem{Key: key, Message: fmt.Sprintf(format, args...)})
}

func (r *reader) err() error {
	if len(r.problems) == 0 {
		return nil
	}
	return &Error{File: r.file, Problems: r.problems}
}

// maxInt bounds integer settings: far above any real job, low enough
// that products of a few of them cannot overflow int64.
const maxInt = 1 << 31

// number returns a decoded number as float64.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// integer reads a whole number in [lo, maxInt].
func (r *reader) integer(key string, v any, lo int64) (int64, bool) {
	f, ok := number(v)
	if !ok {
		r.add(key, "want a whole number, got %s", decoded.Kind(v))
		return 0, false
	}
	if f != math.Trunc(f) || math.IsInf(f, 0) || math.IsNaN(f) {
		r.add(key, "want a whole number, got %v", v)
		return 0, false
	}
	if f < float64(lo) || f > maxInt {
		if lo == 1 {
			r.add(key, "want a positive whole number, got %v", v)
		} else {
			r.add(key, "want a whole number from %d to %d, got %v", lo, int64(maxInt), v)
		}
		return 0, false
	}
	return int64(f), true
}

// float reads a finite number.
func (r *reader) float(key string, v any) (float64, bool) {
	f, ok := number(v)
	switch {
	case !ok:
		r.add(key, "want a number, got %s", decoded.Kind(v))
		return 0, false
	case math.IsNaN(f) || math.IsInf(f, 0):
		r.add(key, "want a finite number, got %v", f)
		return 0, false
	}
	return f, true
}

func (r *reader) boolean(key string, v any) (bool, bool) {
	b, ok := v.(bool)
	if !ok {
		r.add(key, "want true or false, got %s", decoded.Kind(v))
	}
	return b, ok
}

func (r *reader) str(key string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		r.add(key, "want a string, got %s", decoded.Kind(v))
		return "", false
	}
	return strings.TrimSpace(s), true
}

// strings reads a list of strings, or one comma-separated string.
func (r *reader) strings(key string, v any) ([]string, bool) {
	switch x := v.(type) {
	case string:
		var out []string
		for _, s := range strings.Split(x, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, true
	case []any:
		out := make([]string, 0, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				r.add(fmt.Sprintf("%s[%d]", key, i), "want a string, got %s", decoded.Kind(e))
				return nil, false
			}
			out = append(out, strings.TrimSpace(s))
		}
		return out, true
	}
	r.add(key, "want a list of strings, got %s", decoded.Kind(v))
	return nil, false
}

// count reads a parameter count: a whole number or a human size such as
// "7B", "1.2M" (units.ParseParams).
func (r *reader) count(key string, v any) (int64, bool) {
	if s, ok := v.(string); ok {
		p, err := units.ParseParams(s)
		if err != nil {
			r.add(key, "%v (want a count such as 7B or 1.2M)", err)
			return 0, false
		}
		if p <= 0 {
			r.add(key, "want a positive count, got %q", s)
			return 0, false
		}
		return int64(p), true
	}
	f, ok := number(v)
	if !ok || f != math.Trunc(f) || f <= 0 || f > 1e15 {
		r.add(key, "want a positive count (a whole number, or a string such as \"7B\"), got %v", v)
		return 0, false
	}
	return int64(f), true
}

// size reads a byte size: whole bytes or a human size ("80GiB", "80GB").
func (r *reader) size(key string, v any) (units.Bytes, bool) {
	if s, ok := v.(string); ok {
		b, err := units.ParseBytes(s)
		if err != nil {
			r.add(key, "%v", err)
			return 0, false
		}
		if b <= 0 {
			r.add(key, "want a positive size, got %q", s)
			return 0, false
		}
		return b, true
	}
	f, ok := number(v)
	if !ok || f != math.Trunc(f) || f <= 0 || f >= math.MaxInt64/2 {
		r.add(key, "want a size such as \"80GiB\" or a positive number of bytes, got %v", v)
		return 0, false
	}
	return units.Bytes(f), true
}

// suggest returns the known key nearest to key, or "" when none is close.
func suggest(key string, known []string) string {
	best, bestD := "", 1<<30
	lk := strings.ToLower(key)
	for _, k := range known {
		if len(lk) >= 4 && strings.HasPrefix(k, strings.TrimRight(lk, "s")) {
			return k // an abbreviation: num_params for num_parameters
		}
		if d := editDistance(lk, k); d < bestD {
			best, bestD = k, d
		}
	}
	if bestD <= max(2, len(key)/3) {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance of two short keys; a value
// too long to be a key is far from every key.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 20 // not a key
	}
	return textdist.Levenshtein(a, b)
}

// unknownKey reports an unknown key; the suggestion compares the last
// part of a dotted key with the keys known at that level.
func unknownKey(r *reader, key string, known []string) {
	bare := key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		bare = key[i+1:]
	}
	if s := suggest(bare, known); s != "" {
		r.add(key, "unknown key (did you mean %q?)", s)
		return
	}
	r.add(key, "unknown key")
}

// fields reads the keys of the section prefix in order: read handles
// key, whose path in the file is k, and returns false for a key it does
// not know, which is reported with the section's known keys.
func (r *reader) fields(prefix string, obj map[string]any, known []string, read func(key, k string, v any) bool) {
	for _, key := range sortedKeys(obj) {
		if k := prefix + "." + key; !read(key, k, obj[key]) {
			unknownKey(r, k, known)
		}
	}
}
