package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/accuracy"
	"github.com/gpumem/gpumem/internal/fsutil"
	"github.com/gpumem/gpumem/report"
)

type accuracyOptions struct {
	Set []string
}

func newAccuracyCmd(f *Factory, g *globalOptions) *cobra.Command {
	opts := &accuracyOptions{}
	cmd := &cobra.Command{
		Use:     "validate-against [FILE]",
		Aliases: []string{"accuracy"},
		GroupID: "estimate",
		Short:   "Compare estimates with published measurements of real runs",
		Long: `Estimate every run in a measurements file and compare like with like: torch's
max_memory_allocated with the allocated peak, max_memory_reserved with the reserved
peak, nvidia-smi with the device peak. Prints the error of each record and the median
and 90th-percentile |error| per group.

Without FILE the development set built into gpumem is used (published measurements of
training, fine-tuning, inference and serving runs, each with its source), and the report
ends with the runs gpumem's own probe campaign measured (none yet). A FILE has the
same schema: a JSON array of records, each with a "job" object describing the run and
its measured value.`,
		Example: `  gpumem validate-against
  gpumem accuracy --format markdown > ACCURACY.md
  gpumem validate-against my-runs.json --format json
  gpumem validate-against --set fragmentation=0.08`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			recs, err := loadAccuracyRecords(f, args)
			if err != nil {
				return err
			}
			consts, err := parseSetFlags(opts.Set)
			if err != nil {
				return err
			}
			rep := accuracy.Run(recs, accuracy.Options{Constants: consts})
			if len(args) == 0 {
				// The built-in report has a section for gpumem's own
				// probe runs, kept apart from the published records.
				runs, err := accuracy.BuiltinProbeRuns()
				if err != nil {
					return err
				}
				p := accuracy.ProbeRunsReport(runs, accuracy.Options{Constants: consts})
				rep.Probe = &p
			}
			ro := g.renderOptions(f)
			switch ro.Format {
			case report.JSON:
				return report.WriteJSON(f.IO.Out, rep)
			case report.Markdown:
				_, err = io.WriteString(f.IO.Out, rep.Markdown())
			default:
				_, err = io.WriteString(f.IO.Out, rep.Text())
			}
			return err
		},
	}
	cmd.Flags().StringArrayVar(&opts.Set, "set", nil, "override a named constant for every record, name=value (repeatable)")
	return cmd
}

// maxMeasurementsFile bounds a measurements file: the published set of
// about 200 records is under 1 MiB.
const maxMeasurementsFile = 64 << 20

func loadAccuracyRecords(f *Factory, args []string) ([]accuracy.Record, error) {
	if len(args) == 0 {
		return accuracy.DevRecords()
	}
	data, err := fsutil.ReadFile(args[0], maxMeasurementsFile)
	if err != nil {
		return nil, fmt.Errorf("read measurements: %w", err)
	}
	recs, err := accuracy.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", args[0], err)
	}
	return recs, nil
}
