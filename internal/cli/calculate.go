package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/report"
	"github.com/gpumem/gpumem/units"
)

func newCalculateCmd(f *Factory, g *globalOptions) *cobra.Command {
	opts := &estimateOptions{}
	opts.withEnv(f)
	cmd := &cobra.Command{
		Use:     "calculate --config FILE",
		GroupID: "estimate",
		Short:   "Estimate the job described by a file (engine-calculator or gpumem job file)",
		Long: `Estimate the job a file describes, as the engine calculators' 'calculate --config' does.

The file is either a gpumem job file (see 'gpumem validate' and README "Job files") or a file
in the engine calculators' layout, with "model", "training", "parallelism", "engine" and
"hardware" sections. A model given only by "num_parameters" ("7B") becomes a synthetic
Llama-like model whose assumed shape is printed with the estimate. Flags given on the
command line override the file. With the GPU memory known, the last line says whether
the device peak fits.`,
		Example: `  gpumem calculate --config llama2_7b_deepspeed.json
  gpumem calculate --config job.yaml --seq-len 8192 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.ConfigFile == "" {
				return usageErrorf("calculate: --config FILE is required (an engine-calculator or gpumem job file)")
			}
			ro := g.renderOptions(f)
			ro.Explain = opts.Explain
			in, err := opts.inputs(cmd, f, nil, &configDir{})
			if err != nil {
				return err
			}
			res, err := in.estimate(cmd.Flags(), opts)
			if err != nil {
				return err
			}
			return renderWithFit(f.IO.Out, res, ro)
		},
	}
	addEstimateFlags(cmd.Flags(), opts)
	addHubFlags(cmd.Flags(), &opts.Hub)
	return cmd
}

// renderWithFit renders an estimate and, in tables, whether its device
// peak fits the job's GPU memory.
func renderWithFit(w io.Writer, res memory.Result, ro report.Options) error {
	if err := report.Estimate(w, res, ro); err != nil {
		return err
	}
	if ro.Format == report.JSON {
		return nil
	}
	_, err := io.WriteString(w, fitLine(res, ro))
	return err
}

// fitLine says whether the device peak fits the GPU memory of the job
// ("" when the memory is not known).
func fitLine(res memory.Result, ro report.Options) string {
	limit := res.Job.GPUMemory
	if limit <= 0 {
		return ""
	}
	peak := res.PerGPU.DevicePeakBytes
	verdict := "fits"
	if peak > limit {
		verdict = "does NOT fit"
	}
	total := units.MulInt(int64(peak), int64(max(res.Job.NumGPUs, 1)))
	return fmt.Sprintf("fit: device peak %s of %s per GPU (%.1f%%): %s; %s over %d GPU(s)\n",
		ro.Bytes(peak), ro.Bytes(limit), 100*float64(peak)/float64(limit), verdict, ro.Bytes(units.Bytes(total)), max(res.Job.NumGPUs, 1))
}
