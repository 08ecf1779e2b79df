package trainconfig

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gpumem/gpumem/internal/decoded"
)

// ValueError is returned by the parsers for a file with values that
// cannot be used: of the wrong type, or outside what the tool that reads
// the file accepts (a ZeRO stage of 7, a negative bucket size, an offload
// device of "disk"). Such a file would fail in the training run too, so
// it is not estimated with defaults in their place. Keys that are
// unknown, or known but not modelled, are not errors: they are listed in
// [Config.Ignored].
type ValueError struct {
	// File is the file name used in messages.
	File string
	// Values are the values at fault, sorted by key.
	Values []BadValue
}

// BadValue is one value of a config file that cannot be used.
type BadValue struct {
	// Key is the value's key path in the file, e.g. "zero_optimization.stage".
	Key string `json:"key"`
	// Got is the value as written ("7", "\"three\"", "a list").
	Got string `json:"got"`
	// Want says what the key accepts ("0, 1, 2 or 3").
	Want string `json:"want"`
}

// String renders the value as "key: got: want ...".
func (b BadValue) String() string { return b.Key + ": " + b.Got + ": want " + b.Want }

// Error names the file and every bad value, one per line after the first
// when there are several.
func (e *ValueError) Error() string {
	if len(e.Values) == 1 {
		return e.File + ": " + e.Values[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d values cannot be used:", e.File, len(e.Values))
	for _, v := range e.Values {
		b.WriteString("\n  ")
		b.WriteString(v.String())
	}
	return b.String()
}

// bad records a value that cannot be used: key is its path in the file,
// want what the key accepts.
func (r *reader) bad(key string, v any, want string, args ...any) {
	if len(args) > 0 {
		want = fmt.Sprintf(want, args...)
	}
	r.bads = append(r.bads, BadValue{Key: key, Got: describe(v), Want: want})
}

// err returns the bad values as a [*ValueError], or nil.
func (r *reader) err() error {
	if len(r.bads) == 0 {
		return nil
	}
	sort.SliceStable(r.bads, func(i, j int) bool { return r.bads[i].Key < r.bads[j].Key })
	return &ValueError{File: r.cfg.Name, Values: r.bads}
}

// maxShown bounds how much of a bad string value a message repeats.
const maxShown = 60

// describe renders a decoded value for a message: scalars as written,
// strings quoted (and shortened), containers by kind.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if utf8.RuneCountInString(x) > maxShown {
			x = string([]rune(x)[:maxShown]) + "…"
		}
		return strconv.Quote(x)
	case bool, int, int64, uint64:
		return fmt.Sprint(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return decoded.Kind(v)
}
