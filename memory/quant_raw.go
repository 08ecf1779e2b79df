package memory

import "math"

// Readers of quantization_config keys kept verbatim in
// model.Quantization.Raw (decoded JSON: numbers are float64, lists []any).
// A key of the wrong type reads as absent.

func rawInt(raw map[string]any, key string, def int) int {
	switch v := raw[key].(type) {
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<31 {
			return int(v)
		}
	case int:
		return v
	case int64:
		if v > -(1<<31) && v < 1<<31 {
			return int(v)
		}
	}
	return def
}

func rawBool(raw map[string]any, key string) bool {
	b, _ := raw[key].(bool)
	return b
}

func rawString(raw map[string]any, key, def string) string {
	if s, ok := raw[key].(string); ok && s != "" {
		return s
	}
	return def
}

func rawInts(raw map[string]any, key string) []int {
	list, _ := raw[key].([]any)
	out := make([]int, 0, len(list))
	for i := range list {
		out = append(out, rawInt(map[string]any{"v": list[i]}, "v", 0))
	}
	return out
}

func rawStrings(raw map[string]any, key string) []string {
	switch v := raw[key].(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
