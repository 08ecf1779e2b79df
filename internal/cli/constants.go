package cli

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/report"
)

func newConstantsCmd(f *Factory, g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "constants",
		GroupID: "estimate",
		Short:   "List the memory model's empirical constants, their defaults and sources",
		Long: `List every empirical constant of the memory model: fragmentation fractions, CUDA context
sizes, library workspaces, activation scale, ... Each can be overridden for one estimate
with --set name=value (repeatable), or by a calibration profile.`,
		Example: `  gpumem constants
  gpumem estimate --model llama3-8b --set fragmentation=0.1 --set cuda_context_mib=600`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cs := memory.Constants()
			ro := g.renderOptions(f)
			if ro.Format == report.JSON {
				return report.WriteJSON(f.IO.Out, cs)
			}
			t := &report.TableData{
				Headers: []string{"name", "default", "unit", "range", "source"},
				Aligns:  []report.Align{report.Left, report.Right, report.Left, report.Left, report.Left},
			}
			for _, c := range cs {
				t.AddRow(c.Name, strconv.FormatFloat(c.Default, 'g', -1, 64), c.Unit,
					strconv.FormatFloat(c.Min, 'g', -1, 64)+"–"+strconv.FormatFloat(c.Max, 'g', -1, 64), c.Source)
			}
			return t.Render(f.IO.Out, ro.Format)
		},
	}
}
