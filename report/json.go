package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

//go:generate go run gen.go

// WriteJSON writes v as JSON indented by two spaces, followed by a
// newline: the bytes of encoding/json's Encoder with SetIndent("", "  ").
// An estimate result ([memory.Result]) is written by a generated encoder
// (zz_generated.json.go) that gives those bytes without reflection; other
// values go through encoding/json.
func WriteJSON(w io.Writer, v any) error {
	b, err := AppendJSON(nil, v, true)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// AppendJSON appends v's JSON to dst, compact as json.Marshal writes it or,
// with indent, as [WriteJSON] writes it (without its final newline). On
// error dst is returned unchanged.
func AppendJSON(dst []byte, v any, indent bool) ([]byte, error) {
	w := jsonWriter{b: dst, indent: indent}
	if appendGenerated(&w, v) {
		if w.err != nil {
			return dst, w.err
		}
		return w.b, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // escapes HTML as json.Marshal does
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return dst, err
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// jsonWriter appends JSON for the generated encoders: compact, or with
// each member and element on its own line indented by two spaces per
// level, which is what json.Indent(dst, src, "", "  ") makes of the
// compact form (empty objects and arrays stay "{}" and "[]").
type jsonWriter struct {
	b      []byte
	indent bool
	depth  int
	// empty is true right after an object or array opens, until its
	// first member or element.
	empty bool
	err   error
}

// spaces is the indentation of the deepest level written in one append.
const spaces = "                                                                "

func (w *jsonWriter) newline() {
	if !w.indent {
		return
	}
	w.b = append(w.b, '\n')
	for n := 2 * w.depth; n > 0; n -= len(spaces) {
		w.b = append(w.b, spaces[:min(n, len(spaces))]...)
	}
}

func (w *jsonWriter) open(c byte) {
	w.b = append(w.b, c)
	w.depth++
	w.empty = true
}

func (w *jsonWriter) close(c byte) {
	w.depth--
	if !w.empty {
		w.newline()
	}
	w.b = append(w.b, c)
	w.empty = false
}

// elem starts an array element or object member.
func (w *jsonWriter) elem() {
	if !w.empty {
		w.b = append(w.b, ',')
	}
	w.empty = false
	w.newline()
}

// key starts an object member whose key k is already quoted and escaped.
func (w *jsonWriter) key(k string) {
	w.elem()
	w.b = append(w.b, k...)
	w.colon()
}

// mapKey starts a map member with key k.
func (w *jsonWriter) mapKey(k string) {
	w.elem()
	w.string(k)
	w.colon()
}

func (w *jsonWriter) colon() {
	if w.indent {
		w.b = append(w.b, ':', ' ')
	} else {
		w.b = append(w.b, ':')
	}
}

func (w *jsonWriter) null() { w.b = append(w.b, "null"...) }

func (w *jsonWriter) bool(v bool) { w.b = strconv.AppendBool(w.b, v) }

func (w *jsonWriter) int(v int64) { w.b = strconv.AppendInt(w.b, v, 10) }

// uint is for unsigned fields, which the generated encoders call once a
// struct has one.
//
//lint:ignore U1000 called by generated code when an encoded type has an unsigned field
func (w *jsonWriter) uint(v uint64) { w.b = strconv.AppendUint(w.b, v, 10) }

// float writes f as encoding/json does: the shortest decimal that reads
// back as f, in exponent form below 1e-6 and from 1e21 on, with a
// one-digit negative exponent written without its leading zero ("1e-7").
// NaN and infinities have no JSON form: they are an error, as there.
func (w *jsonWriter) float(f float64, bits int) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if w.err == nil {
			w.err = fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, bits))
		}
		w.null()
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	w.b = strconv.AppendFloat(w.b, f, format, -1, bits)
	if format == 'e' {
		if n := len(w.b); n >= 4 && w.b[n-4] == 'e' && w.b[n-3] == '-' && w.b[n-2] == '0' {
			w.b[n-2] = w.b[n-1]
			w.b = w.b[:n-1]
		}
	}
}

// jsonSafe marks the ASCII bytes a JSON string carries as they are; the
// rest are escaped, '<', '>' and '&' too, as encoding/json does so the
// output can sit in HTML.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// string writes s quoted, with encoding/json's escapes: the short forms
// for quote, backslash and \b \f \n \r \t, \u00XX for other control
// characters and HTML's special characters, \ufffd for each byte of
// invalid UTF-8, and \u2028 and \u2029 (line separators to JavaScript).
func (w *jsonWriter) string(s string) {
	b := append(w.b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	w.b = append(append(b, s[start:]...), '"')
}

// sortedKeys returns m's keys in the order encoding/json writes them.
func sortedKeys[M ~map[K]V, K ~string, V any](m M) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
