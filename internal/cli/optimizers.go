package cli

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/report"
)

func newOptimizersCmd(f *Factory, g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "optimizers",
		GroupID: "estimate",
		Short:   "List the optimizers the memory model knows, with their state size",
		Long: `List every optimizer --optimizer accepts (Hugging Face optim names and short names), with
the persistent state it keeps per trainable parameter, the dtype of that state, and how its
step is implemented (foreach steps allocate a transient copy of the state).`,
		Example: `  gpumem optimizers
  gpumem optimizers --format json
  gpumem estimate --model llama3-8b --optimizer paged_adamw_8bit`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := memory.Optimizers()
			ro := g.renderOptions(f)
			if ro.Format == report.JSON {
				return report.WriteJSON(f.IO.Out, opts)
			}
			t := &report.TableData{
				Headers: []string{"optimizer", "aliases", "state B/param", "state dtype", "step", "notes"},
				Aligns:  []report.Align{report.Left, report.Left, report.Right, report.Left, report.Left, report.Left},
			}
			for _, o := range opts {
				// 0 also stands for "depends on module shapes" (factored and
				// low-rank optimizers); the note says which.
				b := strconv.FormatFloat(o.StateBytesPerParam, 'f', -1, 64)
				impl := o.Impl
				if o.Paged {
					impl += ", paged"
				}
				t.AddRow(o.Name, strings.Join(o.Aliases, ", "), b, o.StateDtype, impl, o.Note)
			}
			return t.Render(f.IO.Out, ro.Format)
		},
	}
}
