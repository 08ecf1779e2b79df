// Package jsonkeys finds a key given twice in one JSON object.
// encoding/json accepts such a document and keeps the last value, so a
// config whose author wrote "num_hidden_layers" twice would be read with
// whichever came last, silently. RFC 8259 §4 says names "SHOULD be
// unique" and leaves the behaviour to the reader; gpumem's readers treat
// a repeated key as an error that names it.
//
// [Check] scans the document once, in linear time, without decoding
// values; callers run it next to their decoder, which reports syntax
// errors.
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// DuplicateError reports a key given twice in the same object.
type DuplicateError struct {
	// Path is the key's dotted path from the top of the document, with
	// array elements as [i]: "text_config.hidden_size", "gpus[2].name".
	Path string
	// Key is the key itself, as decoded.
	Key string
	// Depth is the nesting of the object holding it: 0 for the top.
	Depth int
	// First and Line are the lines of the first and the second occurrence.
	First, Line int
}

// Error names the key and both lines.
func (e *DuplicateError) Error() string {
	return fmt.Sprintf("key %q is given twice (lines %d and %d)", e.Path, e.First, e.Line)
}

// smallObject is the number of keys an object holds before its keys are
// kept in a map rather than compared one by one.
const smallObject = 8

// frame is an object or array being scanned.
type frame struct {
	object    bool
	path      string
	expectKey bool   // an object's next string is a key
	key       string // an object's last key
	index     int    // an array's current element
	small     []seen // an object's keys while it has few
	keys      map[string]int
}

// seen is a key and the line it was met on.
type seen struct {
	key  string
	line int
}

// Check returns a *DuplicateError for the first key given twice in one
// object of data, or nil. It does not validate data: a malformed
// document is the decoder's to report, and Check stops at its end.
func Check(data []byte) error {
	var stack []*frame
	line := 1
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
		case '{', '[':
			f := &frame{object: c == '{', expectKey: c == '{'}
			if n := len(stack); n > 0 {
				f.path = stack[n-1].childPath()
			}
			stack = append(stack, f)
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if n := len(stack); n > 0 {
				if top := stack[n-1]; top.object {
					top.expectKey = true
				} else {
					top.index++
				}
			}
		case '"':
			end := stringEnd(data, i)
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				top := stack[n-1]
				key := unquote(data[i : end+1])
				if first, dup := top.add(key, line); dup {
					return &DuplicateError{Path: join(top.path, key), Key: key, Depth: n - 1, First: first, Line: line}
				}
				top.key, top.expectKey = key, false
			}
			i = end
		}
	}
	return nil
}

// add records key, reporting the line of an earlier occurrence.
func (f *frame) add(key string, line int) (int, bool) {
	if f.keys == nil {
		for _, s := range f.small {
			if s.key == key {
				return s.line, true
			}
		}
		if len(f.small) < smallObject {
			f.small = append(f.small, seen{key, line})
			return 0, false
		}
		f.keys = make(map[string]int, 2*smallObject)
		for _, s := range f.small {
			f.keys[s.key] = s.line
		}
		f.small = nil
	}
	if first, ok := f.keys[key]; ok {
		return first, true
	}
	f.keys[key] = line
	return 0, false
}

// childPath is the path of the value now being read in f.
func (f *frame) childPath() string {
	if f.object {
		return join(f.path, f.key)
	}
	return f.path + "[" + strconv.Itoa(f.index) + "]"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// stringEnd returns the index of the quote closing the string that
// starts at data[start], or the last index when it is unterminated.
func stringEnd(data []byte, start int) int {
	for j := start + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(data) - 1
}

// unquote decodes a JSON string literal, quotes included, as
// encoding/json does: escapes resolved, invalid UTF-8 replaced by U+FFFD
// (so two keys the decoder reads as one are one here too).
func unquote(raw []byte) string {
	if len(raw) < 2 {
		return ""
	}
	if bytes.IndexByte(raw, '\\') < 0 && ascii(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(raw[1 : len(raw)-1])
	}
	return s
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
