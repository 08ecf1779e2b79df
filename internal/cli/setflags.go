package cli

import (
	"strconv"
	"strings"
)

// parseSetFlags parses repeated --set name=value flags into constant
// overrides (nil when none are given), checking each name and range
// against memory.Constants up front.
func parseSetFlags(kvs []string) (map[string]float64, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make(map[string]float64, len(kvs))
	for _, kv := range kvs {
		name, val, ok := strings.Cut(kv, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, usageErrorf("--set %q: want name=value", kv)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return nil, usageErrorf("--set %s: value %q is not a number", name, val)
		}
		if err := checkConstant(name, v); err != nil {
			return nil, usageErrorf("--set %w", err)
		}
		out[name] = v
	}
	return out, nil
}
