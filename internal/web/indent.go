package web

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
)

// The API prints what report.WriteJSON prints: json.Marshal's bytes,
// indented by two spaces, and a newline. encoding/json's Indent runs its
// validating scanner over every byte, which costs more than estimating the
// job; the output of json.Marshal is known to be valid, so a plain pass
// that tracks strings gives the same bytes much faster. Tests compare the
// two on every response kind and under fuzzing.

// jsonBuffers holds the two buffers of one response: compact and indented.
type jsonBuffers struct {
	compact bytes.Buffer
	out     []byte
}

var bufPool = sync.Pool{New: func() any { return new(jsonBuffers) }}

// structural marks the bytes indentation acts on.
var structural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true, ',': true, ':': true}

// spaces is the indentation of the deepest level written in one append.
var spaces = strings.Repeat("  ", 32)

// marshalIndent returns v as report.WriteJSON writes it, in b.out.
func (b *jsonBuffers) marshalIndent(v any) ([]byte, error) {
	b.compact.Reset()
	enc := json.NewEncoder(&b.compact) // escapes HTML as json.Marshal does
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	raw := bytes.TrimSuffix(b.compact.Bytes(), []byte("\n"))
	b.out = appendIndent(b.out[:0], raw)
	b.out = append(b.out, '\n')
	return b.out, nil
}

// appendIndent appends src, valid compact JSON, with a newline and two
// spaces per level before each element, as json.Indent(dst, src, "", "  ")
// does: empty objects and arrays stay "{}" and "[]", and ':' gets one space.
func appendIndent(dst, src []byte) []byte {
	depth := 0
	for i := 0; i < len(src); {
		j := i
		for j < len(src) && !structural[src[j]] {
			j++
		}
		dst = append(dst, src[i:j]...)
		if j == len(src) {
			break
		}
		switch c := src[j]; c {
		case '"':
			k := j + 1
			for k < len(src) && src[k] != '"' {
				if src[k] == '\\' {
					k++
				}
				k++
			}
			k = min(k, len(src)-1)
			dst = append(dst, src[j:k+1]...)
			i = k + 1
			continue
		case '{', '[':
			if j+1 < len(src) && (src[j+1] == '}' || src[j+1] == ']') {
				dst = append(dst, c, src[j+1])
				i = j + 2
				continue
			}
			depth++
			dst = newline(append(dst, c), depth)
		case '}', ']':
			depth--
			dst = append(newline(dst, depth), c)
		case ',':
			dst = newline(append(dst, c), depth)
		case ':':
			dst = append(dst, ':', ' ')
		}
		i = j + 1
	}
	return dst
}

func newline(dst []byte, depth int) []byte {
	dst = append(dst, '\n')
	for n := 2 * depth; n > 0; n -= len(spaces) {
		dst = append(dst, spaces[:min(n, len(spaces))]...)
	}
	return dst
}
