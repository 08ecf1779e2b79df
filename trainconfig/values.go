package trainconfig

import (
	"strings"

	"github.com/gpumem/gpumem/memory"
)

// The helpers below read one value of a file into the job and record,
// with [reader.set], the memory.Job key it sets; a value they cannot use
// is recorded with [reader.bad] under the file's key and fails the parse.

// intSettings store the integer job settings the formats share, by
// memory.Job JSON key.
var intSettings = map[string]func(j *memory.Job, n int){
	"per_device_batch": func(j *memory.Job, n int) { j.MicroBatch = n },
	"grad_accum":       func(j *memory.Job, n int) { j.GradAccum = n },
	"seq_len":          func(j *memory.Job, n int) { j.SeqLen = n },
	"num_gpus":         func(j *memory.Job, n int) { j.NumGPUs = n },
	"nodes":            func(j *memory.Job, n int) { j.Nodes = n },
	"tp":               func(j *memory.Job, n int) { j.TP = n },
	"pp":               func(j *memory.Job, n int) { j.PP = n },
	"lora_rank":        func(j *memory.Job, n int) { j.LoRARank = n },
	"lora_alpha":       func(j *memory.Job, n int) { j.LoRAAlpha = n },
}

// boolSettings store the boolean job settings, by memory.Job JSON key.
var boolSettings = map[string]func(j *memory.Job, b bool){
	"packed":                func(j *memory.Job, b bool) { j.Packed = &b },
	"double_quant":          func(j *memory.Job, b bool) { j.DoubleQuant = &b },
	"torch_compile":         func(j *memory.Job, b bool) { j.Compile = b },
	"activation_offload":    func(j *memory.Job, b bool) { j.ActivationOffload = b },
	"optimizer_in_backward": func(j *memory.Job, b bool) { j.OptimizerInBwd = b },
	"sp":                    func(j *memory.Job, b bool) { j.SP = b },
	"grad_checkpoint": func(j *memory.Job, b bool) {
		j.GradCheckpoint = map[bool]string{true: "full", false: "none"}[b]
	},
}

// stringSettings store the string job settings, by memory.Job JSON key.
var stringSettings = map[string]func(j *memory.Job, s string){
	"optimizer":  func(j *memory.Job, s string) { j.Optimizer = s },
	"attn":       func(j *memory.Job, s string) { j.Attention = s },
	"quant_type": func(j *memory.Job, s string) { j.QuantType = s },
}

// intKey reads a positive integer into the job setting jobKey, a key of
// intSettings; null reads as absent.
func (r *reader) intKey(key string, v any, jobKey string) {
	n, ok := toInt(v)
	if !ok || n == 0 {
		if !isNull(v) {
			r.bad(key, v, wantPositive)
		}
		return
	}
	intSettings[jobKey](&r.cfg.Job, int(n))
	r.set(jobKey)
}

// boolKey reads a boolean into the job setting jobKey, a key of
// boolSettings; null reads as absent.
func (r *reader) boolKey(key string, v any, jobKey string) {
	if isNull(v) {
		return
	}
	b, ok := r.boolValue(key, v)
	if !ok {
		return
	}
	boolSettings[jobKey](&r.cfg.Job, b)
	r.set(jobKey)
}

// stringKey reads a non-empty string into the job setting jobKey, a key
// of stringSettings; null reads as absent.
func (r *reader) stringKey(key string, v any, jobKey string) {
	if s, ok := r.stringValue(key, v); ok {
		stringSettings[jobKey](&r.cfg.Job, s)
		r.set(jobKey)
	}
}

// stringValue reads a non-empty string; ok is false for null, and for a
// value that is not a string, which is recorded as bad.
func (r *reader) stringValue(key string, v any) (s string, ok bool) {
	if isNull(v) {
		return "", false
	}
	s, ok = toString(v)
	if !ok || s == "" {
		r.bad(key, v, "a non-empty string")
		return "", false
	}
	return s, true
}

// boolValue reads a boolean (true/false, yes/no, 1/0); any other value is
// a bad value of key. Callers treat null as absent before calling it.
func (r *reader) boolValue(key string, v any) (bool, bool) {
	b, ok := toBool(v)
	if !ok {
		r.bad(key, v, wantBool)
	}
	return b, ok
}

// flag reads an optional boolean: null reads as false.
func (r *reader) flag(key string, v any) bool {
	if isNull(v) {
		return false
	}
	b, _ := r.boolValue(key, v)
	return b
}

// onTrue calls set and marks the job keys when the value of key reads as
// true; false and null leave the job alone, and any other value is bad.
func (r *reader) onTrue(key string, v any, set func(), jobKeys ...string) {
	if r.flag(key, v) {
		set()
		r.set(jobKeys...)
	}
}

// section returns v as a nested mapping; any other value, null included,
// is a bad value of key.
func (r *reader) section(key string, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		r.bad(key, v, "a mapping of keys to values")
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

// offloadDevice reads an offload target (none, cpu or nvme; DeepSpeed's
// OffloadDeviceEnum, deepspeed/runtime/zero/offload_config.py) into the
// job key offload_optimizer or offload_params; null reads as absent.
func (r *reader) offloadDevice(key string, v any, jobKey string) {
	if v == nil {
		return
	}
	d, _ := toString(v)
	d = strings.ToLower(d)
	if d != "none" && d != "cpu" && d != "nvme" {
		r.bad(key, v, "none, cpu or nvme")
		return
	}
	if jobKey == "offload_optimizer" {
		r.cfg.Job.OffloadOptimizer = d
	} else {
		r.cfg.Job.OffloadParams = d
	}
	r.set(jobKey)
}

// Descriptions of accepted values shared by the formats.
const (
	wantPositive = "a positive integer"
	wantBool     = "true or false"
)

// unlisted records a key no case of a format's reader took: name is the
// key's own name, key its path in the file. Keys in noEffect are
// dropped silently; the rest are not modelled or unknown.
func (r *reader) unlisted(name, key string, noEffect, notModelled *keySet) {
	switch {
	case noEffect.has(name):
	case notModelled.has(name):
		r.ignore(key, reasonNotModelled)
	default:
		r.ignore(key, reasonUnknown)
	}
}
