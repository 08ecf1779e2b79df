package gpu

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
)

// maxBytesPerParam bounds a custom data type: complex128, the widest torch
// dtype, is 16 bytes per element.
const maxBytesPerParam = 16

// DataType is a custom storage format: a name and its bytes per parameter
// (0.5625 for a 4.5-bit format).
type DataType struct {
	Name          string  `json:"name"`
	BytesPerParam float64 `json:"bytes_per_param"`
}

// Bits is the storage width in bits.
func (d DataType) Bits() float64 { return d.BytesPerParam * 8 }

// LoadDataTypes reads a data_types.json file: one JSON object mapping each
// type name to its bytes per parameter, e.g. {"fp6": 0.75, "q4_k": 0.5625}.
func LoadDataTypes(path string) ([]DataType, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	return ParseDataTypes(data, filepath.Base(path))
}

// ParseDataTypes decodes the format of [LoadDataTypes]. Names are
// lower-cased; each width must be a finite number in (0, 16]. The result
// is sorted by name. file names the input in errors.
func ParseDataTypes(data []byte, file string) ([]DataType, error) {
	js, err := toJSON(data, file)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.Number
	dec := json.NewDecoder(strings.NewReader(string(js)))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: %w (want an object of name: bytes per parameter)", file, err)
	}
	out := make([]DataType, 0, len(raw))
	seen := map[string]string{}
	for name, num := range raw {
		key := strings.ToLower(strings.TrimSpace(name))
		if key == "" {
			return nil, fmt.Errorf("%s: empty data type name", file)
		}
		if prev, ok := seen[key]; ok {
			return nil, fmt.Errorf("%s: %q and %q name the same data type", file, prev, name)
		}
		seen[key] = name
		v, err := num.Float64()
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > maxBytesPerParam {
			return nil, fmt.Errorf("%s: %q: bytes per parameter %s, want a number in (0, %d]", file, name, num, maxBytesPerParam)
		}
		out = append(out, DataType{Name: key, BytesPerParam: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
