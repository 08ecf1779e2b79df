package memory

import (
	"reflect"
	"strings"
	"sync"
)

// JobKey is one setting of a [Job]: its JSON key and the field that holds
// it. Front ends that read settings by name (query strings, job files,
// training configs, the CLI's flag names) find the field through it, so
// the key → field mapping is written once, here, next to the struct.
type JobKey struct {
	// Name is the JSON key, e.g. "seq_len".
	Name string
	// Type is the field's Go type.
	Type reflect.Type

	index int
}

// jobKeys is built on first use: the keys in field order and by name.
var jobKeys = sync.OnceValues(func() ([]JobKey, map[string]JobKey) {
	t := reflect.TypeFor[Job]()
	list := make([]JobKey, 0, t.NumField())
	byName := make(map[string]JobKey, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		k := JobKey{Name: name, Type: f.Type, index: i}
		list = append(list, k)
		byName[name] = k
	}
	return list, byName
})

// JobKeys returns every setting of a Job, in the order of its fields. The
// slice is shared: callers must not change it.
func JobKeys() []JobKey {
	list, _ := jobKeys()
	return list
}

// LookupJobKey returns the setting whose JSON key is name, as written
// (keys are lower case with underscores).
func LookupJobKey(name string) (JobKey, bool) {
	_, byName := jobKeys()
	k, ok := byName[name]
	return k, ok
}

// In returns the field of job that k names; it can be set.
func (k JobKey) In(job *Job) reflect.Value {
	return reflect.ValueOf(job).Elem().Field(k.index)
}

// Copy sets the field k names in dst to its value in src.
func (k JobKey) Copy(dst, src *Job) {
	k.In(dst).Set(k.In(src))
}

// Value returns the value of the field k names in job, with pointers
// followed: nil for an unset optional setting.
func (k JobKey) Value(job *Job) any {
	v := k.In(job)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	return v.Interface()
}

// IsBool reports whether the setting is a switch: a bool, or a *bool
// whose nil means the default.
func (k JobKey) IsBool() bool {
	t := k.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Bool
}
