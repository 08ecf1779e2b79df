package web

import (
	"bytes"
	"encoding/json"
	"sync"
)

// The API prints what report.WriteJSON prints: json.Marshal's bytes,
// indented by two spaces, and a newline. encoding/json's Indent runs its
// validating scanner over every byte, which costs more than estimating the
// job; the output of json.Marshal is known to be valid, so a plain pass
// that tracks strings gives the same bytes much faster. Tests compare the
// two on every response kind and under fuzzing.

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// marshalIndent appends v as report.WriteJSON writes it to dst.
func marshalIndent(dst *bytes.Buffer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dst.Grow(len(raw) + len(raw)/2)
	indentValid(dst, raw)
	dst.WriteByte('\n')
	return nil
}

// indentValid writes src, valid compact JSON, with a newline and two
// spaces per level before each element, as json.Indent(dst, src, "", "  ")
// does: empty objects and arrays stay "{}" and "[]", and ':' gets one space.
func indentValid(dst *bytes.Buffer, src []byte) {
	depth := 0
	newline := func() {
		dst.WriteByte('\n')
		for range depth {
			dst.WriteString("  ")
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			dst.Write(src[i : j+1])
			i = j
		case '{', '[':
			dst.WriteByte(c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst.WriteByte(src[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst.WriteByte(c)
		case ',':
			dst.WriteByte(c)
			newline()
		case ':':
			dst.WriteString(": ")
		default:
			dst.WriteByte(c)
		}
	}
}
