package trainconfig

import "strings"

// The helpers below read one value of a file into the job and record,
// with [reader.set], the memory.Job key it sets; a value they cannot use
// is recorded with [reader.ignore] under the file's key.

// intKey reads a positive integer job setting.
func (r *reader) intKey(key string, v any, jobKey string, set func(int64)) {
	n, ok := toInt(v)
	if !ok || n == 0 {
		if !isNull(v) {
			r.ignore(key, reasonBadValue)
		}
		return
	}
	set(n)
	r.set(jobKey)
}

// boolKey reads a boolean job setting.
func (r *reader) boolKey(key string, v any, jobKey string, set func(bool)) {
	if isNull(v) {
		return
	}
	b, ok := toBool(v)
	if !ok {
		r.ignore(key, reasonBadValue)
		return
	}
	set(b)
	r.set(jobKey)
}

// stringKey reads a non-empty string job setting.
func (r *reader) stringKey(key string, v any, jobKey string, set func(string)) {
	if isNull(v) {
		return
	}
	s, ok := toString(v)
	if !ok || s == "" {
		r.ignore(key, reasonBadValue)
		return
	}
	set(s)
	r.set(jobKey)
}

// onTrue calls set and marks the job keys when v reads as true; false,
// null and unreadable values leave the job alone.
func (r *reader) onTrue(v any, set func(), jobKeys ...string) {
	if b, ok := toBool(v); ok && b {
		set()
		r.set(jobKeys...)
	}
}

// section returns v as a nested mapping; any other value, null included,
// is a bad value of key.
func (r *reader) section(key string, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		r.ignore(key, reasonBadValue)
	}
	return m, ok
}

// optionalSection is [reader.section] for a key that may also be null:
// null reads as an absent section.
func (r *reader) optionalSection(key string, v any) (map[string]any, bool) {
	if isNull(v) {
		return nil, false
	}
	return r.section(key, v)
}

// offloadDevice reads an offload target (none, cpu or nvme) into the job
// key offload_optimizer or offload_params.
func (r *reader) offloadDevice(key string, v any, jobKey string) {
	d, _ := toString(v)
	d = strings.ToLower(d)
	if d != "none" && d != "cpu" && d != "nvme" {
		r.ignore(key, reasonBadValue)
		return
	}
	if jobKey == "offload_optimizer" {
		r.cfg.Job.OffloadOptimizer = d
	} else {
		r.cfg.Job.OffloadParams = d
	}
	r.set(jobKey)
}

// unlisted records a key no case of a format's reader took: name is the
// key's own name, key its path in the file. Keys in noEffect are
// dropped silently; the rest are not modelled or unknown.
func (r *reader) unlisted(name, key string, noEffect, notModelled map[string]bool) {
	switch {
	case noEffect[name]:
	case notModelled[name]:
		r.ignore(key, reasonNotModelled)
	default:
		r.ignore(key, reasonUnknown)
	}
}
