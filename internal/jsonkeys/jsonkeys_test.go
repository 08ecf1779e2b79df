package jsonkeys

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	many := func(dup string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range 20 {
			fmt.Fprintf(&b, `"k%d": %d, `, i, i)
		}
		b.WriteString(`"` + dup + `": 0}`)
		return b.String()
	}
	tests := []struct {
		name, doc string
		want      *DuplicateError // nil: no duplicate
	}{
		{"empty object", `{}`, nil},
		{"distinct keys", `{"a": 1, "b": {"a": 2}, "c": [{"a": 3}, {"a": 4}]}`, nil},
		{"top level", "{\"a\": 1,\n \"b\": 2,\n \"a\": 3}", &DuplicateError{Path: "a", Key: "a", First: 1, Line: 3}},
		{"nested", `{"text_config": {"hidden_size": 1, "hidden_size": 2}}`, &DuplicateError{Path: "text_config.hidden_size", Key: "hidden_size", Depth: 1, First: 1, Line: 1}},
		{"in an array", `{"gpus": [{"name": "a"}, {"name": "b", "name": "c"}]}`, &DuplicateError{Path: "gpus[1].name", Key: "name", Depth: 2, First: 1, Line: 1}},
		{"escaped spelling", `{"a": 1, "\u0061": 2}`, &DuplicateError{Path: "a", Key: "a", First: 1, Line: 1}},
		{"keys inside strings", `{"a": "{\"a\": 1, \"a\": 2}", "b": "\\", "c": ["a", "a"]}`, nil},
		{"a value equal to a key", `{"a": "a", "b": "a"}`, nil},
		{"invalid UTF-8 read as U+FFFD", "{\"\xff\": 1, \"\xfe\": 2}", &DuplicateError{Path: "\ufffd", Key: "\ufffd", First: 1, Line: 1}},
		{"many keys", many("k7"), &DuplicateError{Path: "k7", Key: "k7", First: 1, Line: 1}},
		{"many distinct keys", many("k20"), nil},
		{"not an object", `["a", "a"]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check([]byte(tt.doc))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			de, ok := errors.AsType[*DuplicateError](err)
			if !ok {
				t.Fatalf("Check = %v, want %+v", err, tt.want)
			}
			if *de != *tt.want {
				t.Errorf("Check = %+v, want %+v", *de, *tt.want)
			}
		})
	}
}

func TestDuplicateErrorMessage(t *testing.T) {
	err := &DuplicateError{Path: "text_config.hidden_size", Key: "hidden_size", First: 3, Line: 9}
	if got, want := err.Error(), `key "text_config.hidden_size" is given twice (lines 3 and 9)`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// FuzzCheck compares Check with a reference built on encoding/json's
// token stream, for every valid document.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `{"a":{"b":[{"c":1},{"c":2,"c":3}]}}`, `{"\u0061":1,"a":2}`, `{"a":"\"","b":"}"}`, `[{"x":1},{"x":2}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(data) // must not panic on any input
		if !json.Valid(data) {
			return
		}
		want := reference(t, data)
		got := ""
		if de, ok := errors.AsType[*DuplicateError](err); ok {
			got = de.Path
		} else if err != nil {
			t.Fatalf("Check = %v", err)
		}
		if got != want {
			t.Fatalf("Check finds %q, the reference %q", got, want)
		}
	})
}

// reference returns the path of the first duplicate key, found with
// json.Decoder's tokens, or "".
func reference(t *testing.T, data []byte) string {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	type level struct {
		object bool
		keys   map[string]bool
		path   string
		key    string
		index  int
		isKey  bool
	}
	var stack []*level
	child := func() string {
		if len(stack) == 0 {
			return ""
		}
		top := stack[len(stack)-1]
		if top.object {
			return join(top.path, top.key)
		}
		return fmt.Sprintf("%s[%d]", top.path, top.index)
	}
	// afterValue advances the enclosing container past one value.
	afterValue := func() {
		if len(stack) == 0 {
			return
		}
		top := stack[len(stack)-1]
		if top.object {
			top.isKey = true
		} else {
			top.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				stack = append(stack, &level{object: v == '{', keys: map[string]bool{}, path: child(), isKey: v == '{'})
			default:
				stack = stack[:len(stack)-1]
				afterValue()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].isKey {
				top := stack[n-1]
				if top.keys[v] {
					return join(top.path, v)
				}
				top.keys[v], top.key, top.isKey = true, v, false
				continue
			}
			afterValue()
		default:
			afterValue()
		}
	}
}
