package model

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzPythonFloats checks the Infinity/NaN rewrite on any input: it never
// panics, leaves input without the tokens untouched, and turns valid
// JSON-with-Python-floats into JSON that decodes.
func FuzzPythonFloats(f *testing.F) {
	for _, s := range []string{`{"a": [0.0, Infinity]}`, `{"a": -Infinity, "b": NaN}`, `{"s": "NaN \"Infinity\""}`,
		`{"a": Infinit}`, `"\\`, `NaNNaN`, `{"a": 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, changed := rewritePythonFloats(data)
		if !changed && !bytes.Equal(out, data) {
			t.Fatalf("unchanged input rewritten: %q -> %q", data, out)
		}
		if changed && len(out) <= len(data) {
			t.Fatalf("rewrite shrank %q to %q", data, out)
		}
		if json.Valid(data) && !json.Valid(out) {
			t.Fatalf("valid JSON %q became invalid %q", data, out)
		}
		_, _ = decodeConfig("config.json", data)
	})
}
