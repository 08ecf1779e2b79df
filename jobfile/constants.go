package jobfile

// LoadConstants reads a constants profile: a JSON or YAML object mapping
// names listed by memory.Constants to values within their bounds, e.g.
// {"fragmentation": 0.08, "cuda_context_mib": 600}. Unknown names (with
// the nearest known name) and values out of range are reported together
// in an [*Error].
func LoadConstants(path string) (map[string]float64, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return ParseConstants(data, path)
}

// ParseConstants decodes a constants profile; see [LoadConstants].
func ParseConstants(data []byte, name string) (map[string]float64, error) {
	obj, err := decodeObject(data, name)
	if err != nil {
		return nil, &Error{File: name, Problems: []Problem{{Message: err.Error()}}}
	}
	r := newReader(name)
	c, _ := r.constantsIn("", obj)
	if err := r.err(); err != nil {
		return nil, err
	}
	return c, nil
}
