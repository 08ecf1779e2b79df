package decoded

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/yamldoc"
)

func TestKind(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{nil, "null"}, {true, "a boolean"}, {json.Number("1.5"), "a number"}, {7, "a number"}, {int64(-3), "a number"},
		{uint64(1 << 63), "a number"}, {2.5, "a number"}, {"x", "a string"}, {[]any{1}, "a list"},
		{map[string]any{}, "an object"}, {time.Time{}, "time.Time"},
	} {
		if got := Kind(tc.v); got != tc.want {
			t.Errorf("Kind(%#v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestKindOfDecoded checks the kinds of what the decoders the parsers use
// actually produce.
func TestKindOfDecoded(t *testing.T) {
	doc := `{"n": 1, "f": 1.5, "b": true, "s": "x", "l": [1], "o": {"a": 1}, "z": null}`
	want := map[string]string{"n": "a number", "f": "a number", "b": "a boolean", "s": "a string", "l": "a list", "o": "an object", "z": "null"}
	var fromJSON map[string]any
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&fromJSON); err != nil {
		t.Fatal(err)
	}
	v, err := yamldoc.Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	fromYAML, _ := v.(map[string]any)
	for name, obj := range map[string]map[string]any{"json": fromJSON, "yaml": fromYAML} {
		for k, w := range want {
			if got := Kind(obj[k]); got != w {
				t.Errorf("%s %s: Kind = %q, want %q", name, k, got, w)
			}
		}
	}
}
