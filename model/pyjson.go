package model

import (
	"bytes"
	"math"
)

// Python's json module writes the floats inf, -inf and nan as the bare
// tokens Infinity, -Infinity and NaN (json.dumps with allow_nan=True, its
// default), which JSON and Go's encoding/json reject. Hugging Face configs
// carry them: Nemotron-H's time_step_limit is [0.0, Infinity]. A config is
// read by first rewriting those tokens, outside strings, into sentinel
// strings, then turning the decoded sentinels into float64 values, which
// every numeric accessor refuses by name ("want a number, got +Inf") while
// keys nobody reads stay harmless.

// Sentinels for the non-finite tokens, as decoded and as written into the
// JSON text (with the NUL escaped). No Hugging Face config has a NUL in a
// string; one that had would read as the non-finite number, which every
// accessor refuses anyway.
const (
	sentinelInf    = "\x00+Inf"
	sentinelNegInf = "\x00-Inf"
	sentinelNaN    = "\x00NaN"
	escapedNUL     = `\u0000`
)

// rewritePythonFloats replaces the bare tokens Infinity, -Infinity and NaN
// outside strings with quoted sentinels. It returns data unchanged, and
// false, when there are none.
func rewritePythonFloats(data []byte) ([]byte, bool) {
	if !bytes.Contains(data, []byte("Infinity")) && !bytes.Contains(data, []byte("NaN")) {
		return data, false
	}
	var out []byte
	last, inStr, changed := 0, false, false
	for i := 0; i < len(data); i++ {
		ch := data[i]
		if inStr {
			switch ch {
			case '\\':
				i++ // skip the escaped character
			case '"':
				inStr = false
			}
			continue
		}
		var tok, repl string
		switch {
		case ch == '"':
			inStr = true
			continue
		case ch == 'I' && bytes.HasPrefix(data[i:], []byte("Infinity")):
			tok, repl = "Infinity", sentinelInf
		case ch == '-' && bytes.HasPrefix(data[i:], []byte("-Infinity")):
			tok, repl = "-Infinity", sentinelNegInf
		case ch == 'N' && bytes.HasPrefix(data[i:], []byte("NaN")):
			tok, repl = "NaN", sentinelNaN
		default:
			continue
		}
		out = append(out, data[last:i]...)
		out = append(out, '"')
		out = append(out, escapedNUL...)
		out = append(out, repl[1:]...)
		out = append(out, '"')
		i += len(tok) - 1
		last = i + 1
		changed = true
	}
	if !changed {
		return data, false
	}
	return append(out, data[last:]...), true
}

// restorePythonFloats replaces the sentinels in a decoded value by the
// float64 values they stand for, in place where it can.
func restorePythonFloats(v any) any {
	switch x := v.(type) {
	case string:
		switch x {
		case sentinelInf:
			return math.Inf(1)
		case sentinelNegInf:
			return math.Inf(-1)
		case sentinelNaN:
			return math.NaN()
		}
	case map[string]any:
		for k, e := range x {
			x[k] = restorePythonFloats(e)
		}
	case []any:
		for i, e := range x {
			x[i] = restorePythonFloats(e)
		}
	}
	return v
}
