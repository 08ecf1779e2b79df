// Package decoded names the kinds of values that encoding/json and YAML
// decoders produce into an any, for the messages of the parsers that
// read job settings (job files, API bodies, training configs).
package decoded

import (
	"encoding/json"
	"fmt"
)

// Kind names v's kind with its article, as a message says what it got:
// "null", "a boolean", "a number", "a string", "a list" or "an object".
// A value no JSON or YAML decoder produces for these files (a YAML
// timestamp) is named by its Go type.
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, int, int64, uint64, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
