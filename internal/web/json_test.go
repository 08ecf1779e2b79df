package web

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/report"
)

// TestWriteJSONMatchesCLI checks the API's encoding on every kind of
// response, for every catalog model: compact, it is json.Marshal's bytes;
// indented (?pretty), it is what report.WriteJSON prints for the CLI.
func TestWriteJSONMatchesCLI(t *testing.T) {
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
				values = append(values, res, &res)
			}
		}
	}
	s := New(Options{})
	for i, v := range values {
		var pretty bytes.Buffer
		if err := report.WriteJSON(&pretty, v); err != nil {
			t.Fatal(err)
		}
		compact, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		compact = append(compact, '\n')
		for _, tt := range []struct {
			pretty bool
			want   []byte
		}{{false, compact}, {true, pretty.Bytes()}} {
			rec := httptest.NewRecorder()
			if tt.pretty {
				s.writeJSON(&prettyWriter{rec}, 200, v)
			} else {
				s.writeJSON(rec, 200, v)
			}
			if got := rec.Body.Bytes(); !bytes.Equal(got, tt.want) {
				t.Fatalf("value %d (%T), pretty %v: the API's JSON differs:\n%s\n---\n%s", i, v, tt.pretty, got, tt.want)
			}
		}
	}
}
