package cli

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/report"
)

// constantValue is a constant with its value after overrides.
type constantValue struct {
	memory.ConstantInfo
	// Value is the value a job with these overrides uses.
	Value float64 `json:"value"`
	// Overridden is true when Value differs from Default.
	Overridden bool `json:"overridden"`
}

func newConstantsCmd(f *Factory, g *globalOptions) *cobra.Command {
	opts := &estimateOptions{}
	cmd := &cobra.Command{
		Use:     "constants",
		GroupID: "estimate",
		Short:   "List the memory model's empirical constants, their defaults and sources",
		Long: `List every empirical constant of the memory model: fragmentation fractions, CUDA context
sizes, library workspaces, activation scale, ... Each can be overridden for one estimate
with --set name=value (repeatable), a profile file (--constants FILE, a JSON or YAML
object of name: value), or a calibration profile.

Given --set or --constants here, the table adds the value an estimate would use.`,
		Example: `  gpumem constants
  gpumem constants --constants h100.yaml --set fragmentation=0.1
  gpumem estimate --model llama3-8b --set fragmentation=0.1 --set cuda_context_mib=600`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.profile, err = loadConstantsFile(opts.ConstantsFile); err != nil {
				return err
			}
			if err := opts.finishSet(); err != nil {
				return err
			}
			return renderConstants(f, g, opts.Job.Constants)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Set, "set", nil, "override a constant, name=value (repeatable)")
	cmd.Flags().StringVar(&opts.ConstantsFile, "constants", "", "profile of named constants (JSON or YAML object name: value); --set wins over it")
	return cmd
}

// renderConstants lists the constants, with their values under overrides
// when there are any.
func renderConstants(f *Factory, g *globalOptions, overrides map[string]float64) error {
	cs := memory.Constants()
	ro := g.renderOptions(f)
	if len(overrides) == 0 {
		if ro.Format == report.JSON {
			return report.WriteJSON(f.IO.Out, cs)
		}
		t := &report.TableData{
			Headers: []string{"name", "default", "unit", "range", "source"},
			Aligns:  []report.Align{report.Left, report.Right, report.Left, report.Left, report.Left},
		}
		for _, c := range cs {
			t.AddRow(c.Name, defaultText(c), c.Unit, fmtFloat(c.Min)+"–"+fmtFloat(c.Max), c.Source)
		}
		return t.Render(f.IO.Out, ro.Format)
	}
	vals := make([]constantValue, 0, len(cs))
	for _, c := range cs {
		v, err := memory.ConstantValue(overrides, c.Name)
		if err != nil {
			return err
		}
		vals = append(vals, constantValue{ConstantInfo: c, Value: v, Overridden: v != c.Default})
	}
	if ro.Format == report.JSON {
		return report.WriteJSON(f.IO.Out, vals)
	}
	t := &report.TableData{
		Headers: []string{"name", "value", "default", "unit", "range", "source"},
		Aligns:  []report.Align{report.Left, report.Right, report.Right, report.Left, report.Left, report.Left},
	}
	for _, c := range vals {
		v := strconv.FormatFloat(c.Value, 'g', -1, 64)
		if c.Derived && c.Value == 0 {
			v = "derived"
		}
		if c.Overridden {
			v += " *"
		}
		t.AddRow(c.Name, v, defaultText(c.ConstantInfo), c.Unit, fmtFloat(c.Min)+"–"+fmtFloat(c.Max), c.Source)
	}
	return t.Render(f.IO.Out, ro.Format)
}

// defaultText shows a constant's default; constants whose default 0 means
// "derived from the per-tensor inventory" say so.
func defaultText(c memory.ConstantInfo) string {
	if c.Derived && c.Default == 0 {
		return "derived"
	}
	return fmtFloat(c.Default)
}
