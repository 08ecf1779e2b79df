package cli

import (
	"context"

	"github.com/gpumem/gpumem/model"
)

// resolveModel turns a --model value into a model description: a catalog
// id or alias, a path to a config.json, or a path to a model folder.
func resolveModel(ctx context.Context, f *Factory, ref string) (*model.Model, error) {
	if ref == "" {
		return nil, usageErrorf("no model given: pass --model (a catalog id or alias such as llama3-8b, a Hub id, or a path to config.json); 'gpumem models' lists the catalog")
	}
	return model.Load(ref)
}
