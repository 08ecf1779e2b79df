package gguf

import "fmt"

// Architecture returns general.architecture ("llama", "qwen2", ...), the
// prefix of the model's hyperparameter keys.
func (f *File) Architecture() string {
	s, _ := f.Metadata["general.architecture"].(string)
	return s
}

// Uint returns an unsigned or non-negative signed integer value.
func (f *File) Uint(key string) (uint64, bool) {
	switch v := f.Metadata[key].(type) {
	case uint64:
		return v, true
	case int64:
		if v >= 0 {
			return uint64(v), true
		}
	}
	return 0, false
}

// Uints returns an integer value, or each value of an integer array, for
// hyperparameters that may vary per layer (attention.head_count_kv).
// n is the number of layers a scalar is repeated over.
func (f *File) Uints(key string, n int) ([]uint64, bool, error) {
	v, ok := f.Metadata[key]
	if !ok {
		return nil, false, nil
	}
	if a, isArray := v.(Array); isArray {
		if a.Len != uint64(n) || len(a.Values) != n {
			return nil, true, fmt.Errorf("%s: array of %d values, want one per layer (%d)", key, a.Len, n)
		}
		out := make([]uint64, n)
		for i, x := range a.Values {
			u, ok := asUint(x)
			if !ok {
				return nil, true, fmt.Errorf("%s[%d]: %v is not a non-negative integer", key, i, x)
			}
			out[i] = u
		}
		return out, true, nil
	}
	u, ok := asUint(v)
	if !ok {
		return nil, true, fmt.Errorf("%s: %v is not a non-negative integer", key, v)
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = u
	}
	return out, true, nil
}

func asUint(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint64:
		return x, true
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}
