package cli

import (
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/report"
	"github.com/gpumem/gpumem/units"
)

type modelsOptions struct {
	Filter   string
	Families bool
}

func newModelsCmd(f *Factory, g *globalOptions) *cobra.Command {
	opts := &modelsOptions{}
	cmd := &cobra.Command{
		Use:     "models [FILTER]",
		GroupID: "models",
		Short:   "List the models in the embedded catalog",
		Long: `List the models whose config.json ships inside gpumem, so they work offline. Any of
the id or the aliases can be given to --model. A filter keeps the entries whose id,
alias, model type or architecture contains it (case-insensitive).

--families lists instead every model_type gpumem reads natively (catalog or not): what its
reader covers (text, moe, hybrid, vision, audio, encoder) and the source file whose module
layout it follows. A filter then keeps the families whose model_type or covers contain it.`,
		Example: `  gpumem models
  gpumem models qwen3
  gpumem models --filter moe --format json
  gpumem models --families
  gpumem models --families moe --format markdown`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := filterFromArgs(&opts.Filter, args); err != nil {
				return err
			}
			ro := g.renderOptions(f)
			if opts.Families {
				return writeFamilies(f, ro, opts.Filter)
			}
			rows := report.ModelRows(opts.Filter)
			if ro.Format == report.JSON {
				return report.WriteJSON(f.IO.Out, rows)
			}
			t := &report.TableData{
				Headers: []string{"id", "aliases", "type", "params"},
				Aligns:  []report.Align{report.Left, report.Left, report.Left, report.Right},
			}
			for _, r := range rows {
				t.AddRow(r.ID, strings.Join(r.Aliases, ", "), r.ModelType, units.Params(r.TotalParams).String())
			}
			t.AddFooter(strconv.Itoa(len(rows))+" models", "", "", "")
			return t.Render(f.IO.Out, ro.Format)
		},
	}
	cmd.Flags().StringVar(&opts.Filter, "filter", "", "keep entries whose id, alias, type or architecture contains this text")
	cmd.Flags().BoolVar(&opts.Families, "families", false, "list the model families gpumem reads natively, what each covers and the source its layout follows")
	return cmd
}

// writeFamilies prints model.Families(), those whose model_type or
// covers contain filter (case-insensitive).
func writeFamilies(f *Factory, ro report.Options, filter string) error {
	want := strings.ToLower(strings.TrimSpace(filter))
	var rows []model.Family
	for _, fam := range model.Families() {
		if want == "" || strings.Contains(strings.ToLower(fam.ModelType), want) || slices.Contains(fam.Covers, want) {
			rows = append(rows, fam)
		}
	}
	if ro.Format == report.JSON {
		if rows == nil {
			rows = []model.Family{}
		}
		return report.WriteJSON(f.IO.Out, rows)
	}
	t := &report.TableData{
		Headers: []string{"model_type", "covers", "source"},
		Aligns:  []report.Align{report.Left, report.Left, report.Left},
	}
	for _, r := range rows {
		t.AddRow(r.ModelType, strings.Join(r.Covers, ", "), r.Source)
	}
	t.AddFooter(strconv.Itoa(len(rows))+" families", "", "")
	return t.Render(f.IO.Out, ro.Format)
}
