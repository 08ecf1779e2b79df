package report

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gpumem/gpumem/internal/jsongen"
	"github.com/gpumem/gpumem/memory"
)

// TestGeneratedJSONIsCurrent fails when zz_generated.json.go is not what
// the generator writes for the types as they are now: after a field is
// added to memory.Result or a type it holds, run go generate ./report.
func TestGeneratedJSONIsCurrent(t *testing.T) {
	want, err := jsongen.Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("zz_generated.json.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("zz_generated.json.go is stale: run go generate ./report")
	}
}

// encodingJSON is what encoding/json writes for v: compact (json.Marshal)
// or as WriteJSON has always written it (Encoder with SetIndent).
func encodingJSON(t testing.TB, v any, indent bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// sameAsEncodingJSON checks the generated encoder against encoding/json,
// compact and indented.
func sameAsEncodingJSON(t testing.TB, name string, r *memory.Result) {
	t.Helper()
	for _, indent := range []bool{false, true} {
		want := encodingJSON(t, r, indent)
		got, err := AppendJSON(nil, r, indent)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Fatalf("%s (indent %v): generated JSON differs from encoding/json at byte %d:\n got  %.200q\n want %.200q", name, indent, i, got[i:], want[i:])
		}
	}
}

// TestGeneratedJSONOnGoldenResults encodes every result of memory's golden
// corpus (every catalog model under training, inference and serving jobs).
func TestGeneratedJSONOnGoldenResults(t *testing.T) {
	files, err := filepath.Glob("../memory/testdata/golden/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden results in ../memory/testdata/golden: %v", err)
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var recs []struct {
			Case   string         `json:"case"`
			Result *memory.Result `json:"result"`
		}
		if err := json.Unmarshal(data, &recs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range recs {
			if r.Result != nil {
				sameAsEncodingJSON(t, filepath.Base(f)+" "+r.Case, r.Result)
				n++
			}
		}
	}
	if n < 1000 {
		t.Errorf("only %d golden results encoded", n)
	}
}

// TestGeneratedJSONOnRandomResults fills every field of memory.Result, at
// every depth, with random values (empty and nil slices and maps, strings
// that need escaping, floats of every magnitude), so a field the golden
// corpus leaves zero is checked too.
func TestGeneratedJSONOnRandomResults(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		var r memory.Result
		fill(rng, reflect.ValueOf(&r).Elem(), 0)
		sameAsEncodingJSON(t, "random result", &r)
		if t.Failed() {
			t.Logf("case %d", i)
			return
		}
	}
}

var nastyStrings = []string{"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "tab\tnew\nline\r\x00\x01\x1f",
	"\u2028\u2029", "bad utf-8 \xff\xfe end", "日本語 émoji 🙂", "\x7f del", "trunc \xe2\x82"}

var someFloats = []float64{0, 1, -1, 0.5, 1e-6, 9.99e-7, 1e-7, 1.5e-10, 1e20, 1e21, 123456789.125, -2.5e-300, math.MaxFloat64,
	math.SmallestNonzeroFloat64, 0.1, 1.0 / 3}

// fill sets v to random contents.
func fill(rng *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(nastyStrings[rng.IntN(len(nastyStrings))])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		switch rng.IntN(4) {
		case 0:
			v.SetInt(0)
		case 1:
			v.SetInt(-rng.Int64N(1000))
		default:
			v.SetInt(rng.Int64() >> (64 - v.Type().Bits()))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(rng.Uint64() >> (64 - v.Type().Bits()))
	case reflect.Float32, reflect.Float64:
		f := someFloats[rng.IntN(len(someFloats))]
		if rng.IntN(2) == 0 {
			f = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		}
		v.SetFloat(f)
	case reflect.Pointer:
		if rng.IntN(3) == 0 || depth > 4 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(rng, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		switch n := rng.IntN(4); {
		case n == 0 || depth > 4:
			v.SetZero()
		default:
			s := reflect.MakeSlice(v.Type(), n-1, n-1)
			for i := range s.Len() {
				fill(rng, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Map:
		switch n := rng.IntN(4); {
		case n == 0 || depth > 4:
			v.SetZero()
		default:
			m := reflect.MakeMap(v.Type())
			for range n - 1 {
				k := reflect.New(v.Type().Key()).Elem()
				fill(rng, k, depth+1)
				e := reflect.New(v.Type().Elem()).Elem()
				fill(rng, e, depth+1)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && rng.IntN(5) != 0 {
				fill(rng, v.Field(i), depth+1)
			}
		}
	}
}

// TestGeneratedJSONRefusesNaN checks a value with no JSON form is an
// error, as encoding/json makes it, and leaves dst as it was.
func TestGeneratedJSONRefusesNaN(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		r := memory.Result{Job: memory.Job{Constants: map[string]float64{"fragmentation": f}}}
		_, want := json.Marshal(r)
		got, err := AppendJSON([]byte("x"), &r, false)
		if err == nil || want == nil || err.Error() != want.Error() || string(got) != "x" {
			t.Errorf("%v: got %q, %v; want error %v", f, got, err, want)
		}
	}
	var nilResult *memory.Result
	if got, err := AppendJSON(nil, nilResult, true); err != nil || string(got) != "null" {
		t.Errorf("nil result: %q, %v", got, err)
	}
}

// FuzzGeneratedJSONString checks strings and floats, the values whose
// encoding has cases, against encoding/json.
func FuzzGeneratedJSONString(f *testing.F) {
	for i, s := range nastyStrings {
		f.Add(s, someFloats[i%len(someFloats)])
	}
	f.Fuzz(func(t *testing.T, s string, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			x = 0
		}
		r := memory.Result{Model: s, Warnings: []string{s, ""}, Job: memory.Job{Constants: map[string]float64{s: x, "b": -x}}}
		r.PerGPU.Components = []memory.Component{{Name: s}}
		sameAsEncodingJSON(t, "fuzz", &r)
	})
}

func BenchmarkWriteJSONResult(b *testing.B) {
	r := goldenResult(b)
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf, _ = AppendJSON(buf[:0], r, false)
	}
}

func BenchmarkEncodingJSONResult(b *testing.B) {
	r := goldenResult(b)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = json.Marshal(r)
	}
}

// goldenResult is a training result with a breakdown and a band.
func goldenResult(b *testing.B) *memory.Result {
	data, err := os.ReadFile("../memory/testdata/golden/meta-llama__Llama-2-7b-hf.json")
	if err != nil {
		b.Fatal(err)
	}
	var recs []struct {
		Result *memory.Result `json:"result"`
	}
	if err := json.Unmarshal(data, &recs); err != nil || len(recs) == 0 || recs[0].Result == nil {
		b.Fatalf("golden file: %v", err)
	}
	return recs[0].Result
}
