package report

import (
	"strings"

	"github.com/gpumem/gpumem/model"
)

// ModelRow is one entry of the embedded model catalog as `gpumem models
// --format json` and GET /api/models list it.
type ModelRow struct {
	ID           string   `json:"id"`
	Aliases      []string `json:"aliases"`
	ModelType    string   `json:"model_type"`
	Architecture string   `json:"architecture"`
	TotalParams  int64    `json:"total_params"`
}

// ModelRows lists the catalog entries whose id, alias, model type or
// architecture contains filter, compared case-insensitively; an empty
// filter keeps every entry. The result is never nil, so it encodes as a
// JSON list.
func ModelRows(filter string) []ModelRow {
	filter = strings.ToLower(filter)
	rows := []ModelRow{}
	for _, e := range model.Catalog() {
		hay := strings.ToLower(strings.Join(append([]string{e.ID, e.ModelType, e.Architecture}, e.Aliases...), " "))
		if filter != "" && !strings.Contains(hay, filter) {
			continue
		}
		rows = append(rows, ModelRow{ID: e.ID, Aliases: e.Aliases, ModelType: e.ModelType, Architecture: e.Architecture, TotalParams: e.TotalParams})
	}
	return rows
}
