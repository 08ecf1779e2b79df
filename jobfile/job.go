package jobfile

import (
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/decoded"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

var (
	bytesType = reflect.TypeOf(units.Bytes(0))
	boolPtr   = reflect.TypeOf((*bool)(nil))
	int64Ptr  = reflect.TypeOf((*int64)(nil))
)

// Extra keys of a job file that are not memory.Job JSON names.
const (
	keyModel       = "model"
	keyGPUMemory   = "gpu_memory" // human size; sets gpu_memory_bytes
	keyDescription = "description"
)

// knownKeys lists every key a job file accepts, for did-you-mean.
func knownKeys() []string {
	keys := []string{keyModel, keyGPUMemory, keyDescription}
	for _, k := range memory.JobKeys() {
		keys = append(keys, k.Name)
	}
	sort.Strings(keys)
	return keys
}

// Value rules for integer keys: the smallest accepted value (1 unless
// listed here) and the largest where one exists.
var (
	intMin = map[string]int64{"gen_len": 0, "images_per_sample": 0, "zero": 0}
	intMax = map[string]int64{"zero": 3}
)

// normalKey is the spelling a key is matched under when it is not a
// known key as written: lower case, with underscores for dashes. The
// HTTP API has always matched JSON keys without regard to case (as
// encoding/json does), and its query keys take dashes; job files accept
// both spellings so that an API body is a job file.
func normalKey(k string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "-", "_")
}

// canonicalKeys maps each key of obj to the known key it spells: itself
// when known, else its [normalKey] when that is known, else itself (an
// unknown key). Two spellings of one key are a problem, reported once.
func (r *reader) canonicalKeys(obj map[string]any, known []string) map[string]string {
	out := make(map[string]string, len(obj))
	by := map[string]string{}
	for _, k := range sortedKeys(obj) {
		c := k
		if !slices.Contains(known, k) && slices.Contains(known, normalKey(k)) {
			c = normalKey(k)
		}
		if prev, dup := by[c]; dup {
			r.add(k, "%s is given twice (also as %q); give it once", c, prev)
			continue
		}
		by[c], out[k] = k, c
	}
	return out
}

// readJob applies the keys of a flat job object to f. A key whose value
// is null is not set, as if it were absent.
func (r *reader) readJob(obj map[string]any, f *File) {
	known := knownKeys()
	keys := map[string]bool{}
	canonical := r.canonicalKeys(obj, known)
	given := map[string]bool{}
	for _, c := range canonical {
		given[c] = true
	}
	for _, raw := range sortedKeys(obj) {
		v := obj[raw]
		key, ok := canonical[raw]
		if !ok || v == nil {
			continue // a second spelling, or null
		}
		switch key {
		case keyModel:
			r.readModel(v, f)
			continue
		case keyDescription:
			r.str(key, v)
			continue
		case keyGPUMemory:
			if given["gpu_memory_bytes"] {
				r.add(key, "give gpu_memory or gpu_memory_bytes, not both")
				continue
			}
			if b, ok := r.size(key, v); ok {
				f.Job.GPUMemory = b
				keys["gpu_memory_bytes"] = true
			}
			continue
		}
		jk, ok := memory.LookupJobKey(key)
		if !ok {
			unknownKey(r, key, known)
			continue
		}
		if r.setField(key, v, jk.In(&f.Job), jk.Type) {
			keys[key] = true
		}
	}
	r.checkJob(&f.Job, keys)
	for k := range keys {
		f.Keys = append(f.Keys, k)
	}
	sort.Strings(f.Keys)
}

// setField converts v to the field's type and stores it.
func (r *reader) setField(key string, v any, dst reflect.Value, typ reflect.Type) bool {
	switch {
	case key == "constants":
		c, ok := r.constants(key, v)
		if ok {
			dst.Set(reflect.ValueOf(c))
		}
		return ok
	case key == "grad_checkpoint" || key == "fused_loss":
		if b, ok := v.(bool); ok {
			v = strconv.FormatBool(b) // true/false, as the flags take them
		}
		s, ok := r.str(key, v)
		if ok {
			dst.SetString(s)
		}
		return ok
	case key == "trainable_params":
		n, ok := r.count(key, v)
		if ok {
			dst.SetInt(n)
		}
		return ok
	case typ == bytesType:
		b, ok := r.size(key, v)
		if ok {
			dst.SetInt(int64(b))
		}
		return ok
	case typ == boolPtr:
		b, ok := r.boolean(key, v)
		if ok {
			dst.Set(reflect.ValueOf(&b))
		}
		return ok
	case typ == int64Ptr: // a size where 0 is a setting: from 0
		n, ok := r.integer(key, v, 0)
		if ok {
			dst.Set(reflect.ValueOf(&n))
		}
		return ok
	}
	switch typ.Kind() {
	case reflect.String:
		s, ok := r.str(key, v)
		if ok {
			dst.SetString(s)
		}
		return ok
	case reflect.Int, reflect.Int64:
		lo, has := intMin[key]
		if !has {
			lo = 1
		}
		n, ok := r.integer(key, v, lo)
		if ok && intMax[key] > 0 && n > intMax[key] {
			r.add(key, "want %d to %d, got %d", lo, intMax[key], n)
			return false
		}
		if ok {
			dst.SetInt(n)
		}
		return ok
	case reflect.Float64:
		x, ok := r.float(key, v)
		if ok {
			dst.SetFloat(x)
		}
		return ok
	case reflect.Bool:
		b, ok := r.boolean(key, v)
		if ok {
			dst.SetBool(b)
		}
		return ok
	case reflect.Slice:
		ss, ok := r.strings(key, v)
		if ok {
			dst.Set(reflect.ValueOf(ss))
		}
		return ok
	}
	r.add(key, "cannot be set from a file")
	return false
}

// constants reads the "constants" object: names of memory.Constants
// mapped to numbers within each constant's bounds.
func (r *reader) constants(key string, v any) (map[string]float64, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		r.add(key, "want an object of constant names to numbers, got %s", decoded.Kind(v))
		return nil, false
	}
	return r.constantsIn(key+".", obj)
}

// constantsIn reads constant names and values; prefix starts each key
// in messages.
func (r *reader) constantsIn(prefix string, obj map[string]any) (map[string]float64, bool) {
	infos := map[string]memory.ConstantInfo{}
	var names []string
	for _, c := range memory.Constants() {
		infos[c.Name] = c
		names = append(names, c.Name)
	}
	out := map[string]float64{}
	good := true
	for _, name := range sortedKeys(obj) {
		k := prefix + name
		info, ok := infos[strings.ToLower(name)]
		if !ok {
			unknownKey(r, k, names)
			good = false
			continue
		}
		x, ok := r.float(k, obj[name])
		if !ok {
			good = false
			continue
		}
		if x < info.Min || x > info.Max {
			r.add(k, "%v is out of range [%v, %v] %s", x, info.Min, info.Max, info.Unit)
			good = false
			continue
		}
		out[info.Name] = x
	}
	return out, good
}

// checkJob checks the values a job can be wrong about without a model.
func (r *reader) checkJob(j *memory.Job, keys map[string]bool) {
	// The mode is read as the CLI's --mode, whose default is train, so
	// the job states it either way.
	m, err := memory.ParseMode(string(j.Mode))
	if err != nil {
		r.add("mode", "%v", err)
	}
	j.Mode = m
	if keys["grad_checkpoint"] {
		gc, err := memory.ParseGradCheckpoint(j.GradCheckpoint)
		if err != nil {
			r.add("grad_checkpoint", "%v", err)
		}
		j.GradCheckpoint = gc
	}
	switch strings.ToLower(j.FusedLoss) {
	case "true":
		j.FusedLoss = "liger" // as the CLI reads a bare --fused-loss
	case "false":
		j.FusedLoss = "none"
	}
	if keys["gpu_memory_utilization"] && !(j.GPUMemoryUtilization > 0 && j.GPUMemoryUtilization <= 1) {
		r.add("gpu_memory_utilization", "want a fraction in (0, 1], got %g", j.GPUMemoryUtilization)
	}
	if keys["lora_dropout"] && !(j.LoRADropout >= 0 && j.LoRADropout < 1) {
		r.add("lora_dropout", "want a probability in [0, 1), got %g", j.LoRADropout)
	}
	if keys["batch"] && j.Mode == memory.Train {
		r.add("batch", "is the inference batch; a training job sets per_device_batch")
	}
	r.probeValues(j, keys)
}

// Value returns the value of a memory.Job key the file sets, written as
// a command-line flag value: numbers in decimal, lists comma-separated,
// booleans as true/false, sizes in bytes. Keys the file does not set
// give "".
func (f *File) Value(key string) string {
	jk, ok := memory.LookupJobKey(key)
	if !ok || !f.Has(key) {
		return ""
	}
	v := jk.In(&f.Job)
	typ := jk.Type
	switch {
	case typ == boolPtr:
		if v.IsNil() {
			return ""
		}
		return strconv.FormatBool(v.Elem().Bool())
	case typ == int64Ptr:
		if v.IsNil() {
			return ""
		}
		return strconv.FormatInt(v.Elem().Int(), 10)
	case typ.Kind() == reflect.Slice:
		return strings.Join(v.Interface().([]string), ",")
	case typ.Kind() == reflect.Map:
		return ""
	}
	switch typ.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	}
	return ""
}

// CopyTo copies the value of a memory.Job key the file sets onto dst,
// for settings a front end has no flag for. It reports whether the key
// was copied.
func (f *File) CopyTo(dst *memory.Job, key string) bool {
	jk, ok := memory.LookupJobKey(key)
	if !ok || !f.Has(key) || dst == nil {
		return false
	}
	jk.Copy(dst, &f.Job)
	return true
}
