package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/report"
	"github.com/gpumem/gpumem/units"
)

type gpusOptions struct {
	Filter   string
	GPUsFile string
}

func newGPUsCmd(f *Factory, g *globalOptions) *cobra.Command {
	opts := &gpusOptions{}
	cmd := &cobra.Command{
		Use:     "gpus [FILTER]",
		GroupID: "models",
		Short:   "List the GPU catalog: usable memory, architecture and number formats",
		Long: `List the GPUs gpumem plans for. MEMORY is the total the driver reports for one device
(nvidia-smi's "Total", rocm-smi's "VRAM Total Memory", hl-smi's memory.total), which is
what a job's device peak is compared with, not the marketing size. Any name or alias
works with --gpu, as do the names nvidia-smi prints ("NVIDIA H100 80GB HBM3").
CUDA TOTAL is what CUDA itself reports (torch.cuda.mem_get_info), a few hundred MiB
less on recent drivers, where a published log shows it; vLLM budgets from it. Where it
is blank no log shows it, and a serving estimate budgets from MEMORY and says so.

--gpus-file adds boards or corrects figures from a JSON or YAML file in the same
format as 'gpumem gpus --format json'; use memory_mib for the MiB nvidia-smi shows.`,
		Example: `  gpumem gpus
  gpumem gpus h100
  gpumem gpus --gpus-file site-gpus.yaml --format json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := filterFromArgs(&opts.Filter, args); err != nil {
				return err
			}
			cat, err := loadGPUCatalog(opts.GPUsFile)
			if err != nil {
				return err
			}
			rows := gpu.Filter(cat.All(), opts.Filter)
			ro := g.renderOptions(f)
			if ro.Format == report.JSON {
				return report.WriteJSON(f.IO.Out, rows)
			}
			return gpuTable(rows, ro).Render(f.IO.Out, ro.Format)
		},
	}
	cmd.Flags().StringVar(&opts.Filter, "filter", "", "keep GPUs whose name, alias, vendor or architecture contains this text")
	addGPUsFileFlag(cmd.Flags(), &opts.GPUsFile)
	return cmd
}

// filterFromArgs takes a list command's optional FILTER argument into
// *filter (its --filter), refusing both.
func filterFromArgs(filter *string, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if *filter != "" {
		return usageErrorf("filter given twice: --filter %q and argument %q", *filter, args[0])
	}
	*filter = args[0]
	return nil
}

// addGPUsFileFlag declares --gpus-file, shared by the commands that look GPUs up.
func addGPUsFileFlag(fs *pflag.FlagSet, dst *string) {
	fs.StringVar(dst, "gpus-file", "", "JSON or YAML file of extra GPUs merged over the built-in catalog")
}

// loadGPUCatalog returns the built-in catalog, merged with path if given.
func loadGPUCatalog(path string) (*gpu.Catalog, error) {
	if path == "" {
		return gpu.Default(), nil
	}
	cat, err := gpu.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--gpus-file: %w", err)
	}
	return cat, nil
}

func gpuTable(gs []gpu.GPU, ro report.Options) *report.TableData {
	t := &report.TableData{
		Headers: []string{"gpu", "memory", "MiB", "cuda total", "nominal", "arch", "cc", "formats", "aliases"},
		Aligns:  []report.Align{report.Left, report.Right, report.Right, report.Right, report.Right, report.Left, report.Left, report.Left, report.Left},
	}
	for _, g := range gs {
		formats := []string{"fp16"}
		for _, f := range []struct {
			ok   bool
			name string
		}{{g.BF16, "bf16"}, {g.FP8, "fp8"}, {g.FP4, "fp4"}} {
			if f.ok {
				formats = append(formats, f.name)
			}
		}
		cuda := ""
		if g.CUDAMemory > 0 {
			cuda = ro.Bytes(g.CUDAMemory)
		}
		t.AddRow(g.Name, ro.Bytes(g.Memory), fmt.Sprint(int64(g.Memory/units.MiB)), cuda, fmt.Sprintf("%d GB", g.NominalGB),
			g.Arch, g.ComputeCapability, strings.Join(formats, " "), strings.Join(g.Aliases, ", "))
	}
	t.AddFooter(fmt.Sprintf("%d GPUs", len(gs)), "", "", "", "", "", "", "", "")
	return t
}
