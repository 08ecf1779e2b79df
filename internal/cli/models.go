package cli

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/report"
	"github.com/gpumem/gpumem/units"
)

type modelsOptions struct {
	Filter string
}

func newModelsCmd(f *Factory, g *globalOptions) *cobra.Command {
	opts := &modelsOptions{}
	cmd := &cobra.Command{
		Use:     "models [FILTER]",
		GroupID: "models",
		Short:   "List the models in the embedded catalog",
		Long: `List the models whose config.json ships inside gpumem, so they work offline. Any of
the id or the aliases can be given to --model. A filter keeps the entries whose id,
alias, model type or architecture contains it (case-insensitive).`,
		Example: `  gpumem models
  gpumem models qwen3
  gpumem models --filter moe --format json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := filterFromArgs(&opts.Filter, args); err != nil {
				return err
			}
			rows := report.ModelRows(opts.Filter)
			ro := g.renderOptions(f)
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
	return cmd
}
