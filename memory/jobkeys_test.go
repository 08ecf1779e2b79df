package memory

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestJobKeysMatchJSON checks the keys against encoding/json: setting a
// field through its JobKey and marshalling the job gives exactly that
// key, so the names front ends accept are the names results carry.
func TestJobKeysMatchJSON(t *testing.T) {
	keys := JobKeys()
	if len(keys) < 50 {
		t.Fatalf("only %d job keys", len(keys))
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k.Name] {
			t.Errorf("key %q twice", k.Name)
		}
		seen[k.Name] = true
		if got, ok := LookupJobKey(k.Name); !ok || got.index != k.index {
			t.Errorf("LookupJobKey(%q) = %v, %v", k.Name, got, ok)
		}
		var j Job
		v := k.In(&j)
		if v.Type() != k.Type {
			t.Errorf("%s: field type %v, key type %v", k.Name, v.Type(), k.Type)
		}
		setNonZero(t, k.Name, v)
		data, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		if _, ok := obj[k.Name]; !ok || len(obj) != 1 {
			t.Errorf("%s: setting its field marshals as %s", k.Name, data)
		}
		var other Job
		k.Copy(&other, &j)
		if !reflect.DeepEqual(other, j) {
			t.Errorf("%s: Copy gave %+v", k.Name, other)
		}
		if k.Value(&j) == nil {
			t.Errorf("%s: Value of a set field is nil", k.Name)
		}
	}
	if _, ok := LookupJobKey("seq-len"); ok {
		t.Error("LookupJobKey accepts a flag spelling")
	}
	if _, ok := LookupJobKey("SeqLen"); ok {
		t.Error("LookupJobKey accepts a Go field name")
	}
}

// setNonZero stores a value other than the zero value in v.
func setNonZero(t *testing.T, name string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64:
		v.SetInt(2)
	case reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		setNonZero(t, name, e.Elem())
		v.Set(e)
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.ValueOf("x")))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		val := reflect.ValueOf(1.0)
		if v.Type().Elem().Kind() == reflect.String {
			val = reflect.ValueOf("1.0")
		}
		v.SetMapIndex(reflect.ValueOf("x"), val)
	default:
		t.Fatalf("%s: kind %v not handled", name, v.Kind())
	}
}

func TestJobKeyValueAndIsBool(t *testing.T) {
	packed, _ := LookupJobKey("packed")
	compile, _ := LookupJobKey("torch_compile")
	seq, _ := LookupJobKey("seq_len")
	if !packed.IsBool() || !compile.IsBool() || seq.IsBool() {
		t.Errorf("IsBool: packed %v, torch_compile %v, seq_len %v", packed.IsBool(), compile.IsBool(), seq.IsBool())
	}
	no := false
	j := Job{SeqLen: 512, Packed: &no}
	if got := seq.Value(&j); got != 512 {
		t.Errorf("seq_len value %v", got)
	}
	if got := packed.Value(&j); got != false {
		t.Errorf("packed value %v, want false", got)
	}
	if got := packed.Value(&Job{}); got != nil {
		t.Errorf("unset packed value %v, want nil", got)
	}
}
