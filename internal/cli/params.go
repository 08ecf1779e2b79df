package cli

import (
	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/modelref"
	"github.com/gpumem/gpumem/report"
)

type paramsOptions struct {
	Model string
	Hub   hubOptions
	// Checkpoint is --checkpoint: compare with the safetensors headers.
	Checkpoint bool
}

func newParamsCmd(f *Factory, g *globalOptions) *cobra.Command {
	opts := &paramsOptions{}
	cmd := &cobra.Command{
		Use:     "params [MODEL]",
		GroupID: "models",
		Short:   "Count a model's parameters exactly, by module",
		Long: `Count the parameters of a model from its config.json, module by module, the way
PyTorch's model.num_parameters() does: tied tensors once, buffers excluded. For MoE
models the count used per token (active parameters) is shown too.

--checkpoint also reads the safetensors headers of a model folder or Hub repository
(Range requests on the Hub, or its local cache) and warns, with both figures, when
the stored parameter count differs from config.json's.`,
		Example: `  gpumem params --model meta-llama/Llama-2-7b-hf
  gpumem params llama3-8b --format json
  gpumem params --model ./checkpoints/my-model     # a folder with config.json
  gpumem params Qwen/Qwen3-8B --checkpoint          # and its safetensors headers`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := modelFromArgs(&opts.Model, args); err != nil {
				return err
			}
			src, err := resolveSource(cmd.Context(), f, opts.Model, opts.Hub, modelref.Options{LocalPaths: true, Checkpoint: opts.Checkpoint})
			if err != nil {
				return err
			}
			return report.Params(f.IO.Out, report.NewParamsReport(src.Model), g.renderOptions(f))
		},
	}
	cmd.Flags().StringVarP(&opts.Model, "model", "m", "", "model: catalog id or alias, Hub id, or path to config.json or a model folder")
	addHubFlags(cmd.Flags(), &opts.Hub)
	cmd.Flags().BoolVar(&opts.Checkpoint, "checkpoint", false, "also read the safetensors headers and warn when their parameter count differs from config.json's")
	return cmd
}

// modelFromArgs lets the model be given positionally as well as by --model.
func modelFromArgs(dst *string, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if *dst != "" && *dst != args[0] {
		return usageErrorf("model given twice: --model %q and argument %q", *dst, args[0])
	}
	*dst = args[0]
	return nil
}
