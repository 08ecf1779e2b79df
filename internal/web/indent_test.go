package web

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/report"
)

// TestMarshalIndentMatchesWriteJSON compares the API's encoder with
// report.WriteJSON on every kind of response, for every catalog model.
func TestMarshalIndentMatchesWriteJSON(t *testing.T) {
	values := []any{
		report.ModelRows(""), gpu.All(), &Error{Message: `quote " and <html> & tab	`, Field: "x"},
		map[string]any{"empty": map[string]int{}, "list": []int{}, "nested": [][]int{{}, {1, 2}}, "s": "\\\"{[,:]}\""},
	}
	for _, e := range model.Catalog() {
		m, err := model.Lookup(e.ID)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, report.NewParamsReport(m))
		for _, job := range []memory.Job{{SeqLen: 512}, {Mode: memory.Inference, Batch: 2, PromptLen: 256, GenLen: 16}} {
			if res, err := memory.Estimate(m, job); err == nil {
				values = append(values, res)
			}
		}
	}
	var bufs jsonBuffers // reused, as the server's pool reuses them
	for i, v := range values {
		var want bytes.Buffer
		if err := report.WriteJSON(&want, v); err != nil {
			t.Fatal(err)
		}
		got, err := bufs.marshalIndent(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("value %d (%T): marshalIndent differs from report.WriteJSON:\n%s\n---\n%s", i, v, got, want.Bytes())
		}
	}
}

// FuzzAppendIndent checks appendIndent against json.Indent on compact valid JSON.
func FuzzAppendIndent(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,{"b":"c\"}"},[]],"d":{}}`, `"x\\"`, `[{"k":"\u00e9,:{["}]`, `null`, `1.5e3`, strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40), strings.Repeat(`{"a":[`, 20) + `1` + strings.Repeat(`]}`, 20)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, in); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		if got := appendIndent([]byte("prefix"), compact.Bytes()); !bytes.Equal(got, append([]byte("prefix"), want.Bytes()...)) {
			t.Fatalf("appendIndent(%s) = %s, want %s", compact.Bytes(), got, want.Bytes())
		}
	})
}
