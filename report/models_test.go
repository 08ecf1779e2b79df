package report

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
)

func TestModelRows(t *testing.T) {
	all := ModelRows("")
	if len(all) != len(model.Catalog()) {
		t.Fatalf("%d rows without a filter, want the %d catalog entries", len(all), len(model.Catalog()))
	}
	for _, filter := range []string{"qwen3", "LLAMA", "moe"} {
		rows := ModelRows(filter)
		if len(rows) == 0 || len(rows) == len(all) {
			t.Errorf("filter %q kept %d of %d rows", filter, len(rows), len(all))
		}
		for _, r := range rows {
			hay := strings.ToLower(strings.Join(append([]string{r.ID, r.ModelType, r.Architecture}, r.Aliases...), " "))
			if !strings.Contains(hay, strings.ToLower(filter)) || r.TotalParams <= 0 {
				t.Errorf("filter %q kept %+v", filter, r)
			}
		}
	}
	if rows := ModelRows("no-such-model-xyz"); rows == nil || len(rows) != 0 {
		t.Errorf("no match: %v, want an empty non-nil list", rows)
	}
}
