// Package cli implements the gpumem command line: one file per subcommand,
// each with an options struct, a constructor that declares and validates
// flags, and a run function that does the work.
package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/build"
	"github.com/gpumem/gpumem/report"
)

// globalOptions are the flags every command shares.
type globalOptions struct {
	Format string
	Units  string
	// Timeout is --timeout: the command's deadline (see applyDeadline).
	Timeout time.Duration
	// cancelDeadline releases the deadline's context (Main's cancel
	// releases it too).
	cancelDeadline context.CancelFunc
}

// Main runs the gpumem command line with args (without the program name)
// and returns the process exit code. Errors are printed to f.IO.ErrOut as
// one line, "gpumem: <message>", never as a stack trace; the job settings
// an error names are written as the flags that set them.
func Main(ctx context.Context, args []string, f *Factory) int {
	ctx, cancel := context.WithCancel(ctx) // ends the command's deadline too
	defer cancel()
	root := rootFor(f, args)
	root.SetArgs(rewriteBoolArgs(root, args))
	err := classifyCobraError(root.ExecuteContext(ctx))
	if err != nil {
		var ce *ExitCodeError
		if !(errors.As(err, &ce) && ce.Err == nil) {
			fmt.Fprintf(f.IO.ErrOut, "gpumem: %s\n", renderError(err))
		}
		var ue *UsageError
		if errors.As(err, &ue) {
			fmt.Fprintln(f.IO.ErrOut, "Run 'gpumem help' or add --help to a command for usage.")
		}
	}
	return exitCode(err)
}

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	return newRootCmd(f, commands)
}

// command is a subcommand's constructor with the names that invoke it.
type command struct {
	// names are the command's name and aliases, as its cobra.Command
	// declares them (TestCommandTableNames keeps the two in step).
	names []string
	build func(*Factory, *globalOptions) *cobra.Command
}

// commands are the subcommands, in the order help lists them within a group.
var commands = []command{
	{[]string{"models"}, newModelsCmd},
	{[]string{"params"}, newParamsCmd},
	{[]string{"estimate"}, func(f *Factory, g *globalOptions) *cobra.Command {
		return withCalibration(newEstimateCmd(f, g))
	}},
	{[]string{"constants"}, newConstantsCmd},
	{[]string{"optimizers"}, newOptimizersCmd},
	{[]string{"validate-against", "accuracy"}, newAccuracyCmd},
	{[]string{"inspect"}, newInspectCmd},
	{[]string{"serve"}, newServeCmd},
	{[]string{"gpus"}, newGPUsCmd},
	{[]string{"fit"}, newFitCmd},
	{[]string{"plan"}, newPlanCmd},
	{[]string{"probe"}, newProbeCmd},
	{[]string{"calibrate"}, newCalibrateCmd},
	{[]string{"serve-plan"}, newServePlanCmd},
	{[]string{"calculate"}, newCalculateCmd},
	{[]string{"quick"}, newQuickCmd},
	{[]string{"validate"}, newValidateCmd},
}

// commandsFor returns the subcommands a run with args needs. Declaring
// every command's flags costs more than running most commands, so a
// command line that names a subcommand gets that one alone (Main checks
// that cobra resolves the line to it), and a bare --version gets none.
// Anything else (help, completion, an unknown or misspelt name, no
// command) gets the whole tree: help, completion and cobra's suggestions
// list every command.
func commandsFor(args []string) []command {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-v") {
		return nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return commands
		case a != "" && !strings.HasPrefix(a, "-"):
			for _, c := range commands {
				if slices.Contains(c.names, a) {
					return []command{c}
				}
			}
			return commands
		case !strings.Contains(a, "=") && (strings.HasPrefix(a, "--") || len(a) == 2):
			// Cobra's search for the command name takes a flag before
			// the name to consume the next argument; so does this one.
			i++
		}
	}
	return commands
}

// rootFor builds the command tree a run with args needs: the tree of
// [commandsFor], or the whole tree when cobra would resolve args to
// another command in it than the one it holds.
func rootFor(f *Factory, args []string) *cobra.Command {
	root := newRootCmd(f, commandsFor(args))
	if cmds := root.Commands(); len(cmds) == 1 {
		if c, _, err := root.Find(args); err != nil || c != cmds[0] {
			return NewRootCmd(f)
		}
	}
	return root
}

// newRootCmd builds the root command with the subcommands cmds.
func newRootCmd(f *Factory, cmds []command) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "gpumem",
		Short: "Estimate the GPU memory of LLM/VLM training, fine-tuning, inference and serving",
		Long: `gpumem tells you how much GPU memory a job needs before you launch it, and what to
change so it fits. It reads a model's config.json (from the embedded catalog, a local
path, or the Hugging Face Hub), counts parameters exactly, and estimates the per-GPU
peak with a per-component breakdown: torch max_memory_allocated, max_memory_reserved
and what nvidia-smi shows.`,
		Example: `  gpumem estimate --model llama3-8b --seq-len 4096 --lora-rank 16 --method lora
  gpumem params --model meta-llama/Llama-2-7b-hf
  gpumem models --filter qwen
  gpumem estimate --model ./my-model/config.json --mode inference --batch-size 8 --seq-len 8192`,
		Version:       build.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if _, err := report.ParseFormat(g.Format); err != nil {
				return &UsageError{Err: fmt.Errorf("--format: %w", err)}
			}
			if _, err := report.ParseUnits(g.Units); err != nil {
				return &UsageError{Err: fmt.Errorf("--units: %w", err)}
			}
			return applyDeadline(cmd, f, g)
		},
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetVersionTemplate("gpumem {{.Version}}\n")
	root.PersistentFlags().StringVarP(&g.Format, "format", "f", "table", "output format: table, json or markdown")
	root.PersistentFlags().StringVar(&g.Units, "units", "iec", "byte units in tables: iec (GiB) or si (GB)")
	addTimeoutFlag(root.PersistentFlags(), g)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &UsageError{Err: err}
	})
	root.AddGroup(&cobra.Group{ID: "estimate", Title: "Estimating:"}, &cobra.Group{ID: "models", Title: "Models and hardware:"})

	for _, c := range cmds {
		root.AddCommand(c.build(f, g))
	}
	for _, c := range root.Commands() {
		c.SetFlagErrorFunc(root.FlagErrorFunc())
	}
	return root
}

// renderOptions turns the global flags into report options.
func (g *globalOptions) renderOptions(f *Factory) report.Options {
	format, _ := report.ParseFormat(g.Format)
	units, _ := report.ParseUnits(g.Units)
	return report.Options{Format: format, Units: units, Width: f.IO.Width, TTY: f.IO.OutTTY}
}

// classifyCobraError marks the errors cobra itself returns for a wrong
// command line (unknown command, wrong number of arguments) as usage errors.
func classifyCobraError(err error) error {
	if err == nil {
		return nil
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return err
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument"} {
		if strings.HasPrefix(msg, p) {
			return &UsageError{Err: err}
		}
	}
	return err
}
