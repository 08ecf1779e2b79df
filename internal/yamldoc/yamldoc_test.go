package yamldoc

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name, doc string
		want      any
	}{
		{"empty", "", nil},
		{"scalars", "a: 1\nb: 2.5\nc: true\nd: null\ne: text\nf: '3'\ng: 2001-12-14\nh: 5e8\n",
			map[string]any{"a": 1, "b": 2.5, "c": true, "d": nil, "e": "text", "f": "3", "g": time.Date(2001, 12, 14, 0, 0, 0, 0, time.UTC), "h": 5e8}},
		{"json", `{"zero_optimization": {"stage": 3}, "bf16": {"enabled": "auto"}}`,
			map[string]any{"zero_optimization": map[string]any{"stage": 3}, "bf16": map[string]any{"enabled": "auto"}}},
		{"sequence", "- 1\n- [a, b]\n", []any{1, []any{"a", "b"}}},
		{"anchor and alias", "base: &b {lr: 1, wd: 0}\nrun: *b\n",
			map[string]any{"base": map[string]any{"lr": 1, "wd": 0}, "run": map[string]any{"lr": 1, "wd": 0}}},
		{"merge key", "base: &b {lr: 1, wd: 0}\nrun:\n  <<: *b\n  lr: 2\n",
			map[string]any{"base": map[string]any{"lr": 1, "wd": 0}, "run": map[string]any{"lr": 2, "wd": 0}}},
		{"merge list, first wins", "a: &a {x: 1}\nb: &b {x: 2, y: 2}\nc:\n  <<: [*a, *b]\n",
			map[string]any{"a": map[string]any{"x": 1}, "b": map[string]any{"x": 2, "y": 2}, "c": map[string]any{"x": 1, "y": 2}}},
		{"numeric key as written", "1: one\n", map[string]any{"1": "one"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		dup       *DuplicateKeyError // nil: another error, containing want
		want      string
	}{
		{"top level", "a: 1\nb: 2\na: 3\n", &DuplicateKeyError{Path: "a", Key: "a", First: 1, Line: 3}, ""},
		{"nested", "zero_optimization:\n  stage: 2\n  stage: 3\n", &DuplicateKeyError{Path: "zero_optimization.stage", Key: "stage", First: 2, Line: 3}, ""},
		{"in a sequence", "gpus:\n- name: a\n  name: b\n", &DuplicateKeyError{Path: "gpus[0].name", Key: "name", First: 2, Line: 3}, ""},
		{"json", `{"stage": 2, "stage": 3}`, &DuplicateKeyError{Path: "stage", Key: "stage", First: 1, Line: 1}, ""},
		{"collection key", "? [a]\n: 1\n", nil, "must be a plain value"},
		{"syntax", "a: [1,\n", nil, "yaml"},
		{"laughs", laughs(12), nil, "aliases expand to more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := Decode([]byte(tt.doc))
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
			if tt.dup != nil {
				de, ok := errors.AsType[*DuplicateKeyError](err)
				if !ok {
					t.Fatalf("err = %v, want %+v", err, tt.dup)
				}
				if *de != *tt.dup {
					t.Errorf("err = %+v, want %+v", *de, *tt.dup)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// laughs is a document whose aliases expand to 10^n values.
func laughs(n int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	return b.String()
}

// A file of 60,000 keys took 42 s through yaml.Unmarshal into an
// interface value, whose duplicate check compares every pair of keys.
// Here a document of MaxKeys keys is read, with its duplicate check, in
// linear time, and one of 60,000 keys is refused quickly.
func TestDecodeManyKeys(t *testing.T) {
	doc := func(n int) []byte {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "k%06d: 1\n", i)
		}
		return []byte(b.String())
	}
	start := time.Now()
	v, err := Decode(doc(MaxKeys))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(v.(map[string]any)); n != MaxKeys {
		t.Fatalf("%d keys", n)
	}
	if _, err := Decode(append(doc(MaxKeys-1), "k000000: 2\n"...)); !IsDuplicate(err) {
		t.Fatalf("err = %v, want the repeated key", err)
	}
	if _, err := Decode(doc(60000)); err == nil || !strings.Contains(err.Error(), "more than 10000 keys") {
		t.Fatalf("err = %v, want too many keys", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("three decodes took %s", d)
	}
}

// FuzzDecode compares Decode with yaml.Unmarshal into an interface value
// on every document both read (and whose keys are all strings), and
// requires a duplicate-key error wherever yaml reports one.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"a: 1\n", "a: 1\na: 2\n", "{\"x\": [1, 2, {\"y\": null}]}", "b: &b {x: 1}\nc: {<<: *b, y: 2}\n", "- &a [1]\n- *a\n", laughs(2)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(data)
		var want any
		werr := yaml.Unmarshal(data, &want)
		if werr != nil && strings.Contains(werr.Error(), "already defined") {
			if _, ok := errors.AsType[*DuplicateKeyError](err); !ok && !strings.Contains(string(data), "<<") {
				t.Fatalf("yaml reports %v, Decode %v", werr, err)
			}
			return
		}
		if err != nil || werr != nil || !stringKeys(want) || strings.Contains(string(data), "<<") {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode = %#v, yaml.Unmarshal = %#v", got, want)
		}
	})
}

// stringKeys reports whether every mapping in v has string keys.
func stringKeys(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if !stringKeys(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !stringKeys(e) {
				return false
			}
		}
	case map[any]any:
		return false
	}
	return true
}
