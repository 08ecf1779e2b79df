package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/gguf"
	"github.com/gpumem/gpumem/hub"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/modelref"
	"github.com/gpumem/gpumem/report"
	"github.com/gpumem/gpumem/safetensors"
	"github.com/gpumem/gpumem/units"
)

// inspectOptions are the inputs of 'gpumem inspect'.
type inspectOptions struct {
	Model string
	File  string
	Hub   hubOptions
	// GGUF estimate settings, named as llama.cpp's flags.
	CtxSize     int
	CacheTypeK  string
	CacheTypeV  string
	Batch       int
	UBatch      int
	SWAFull     bool
	Parallel    int
	KVUnified   bool
	FlashAttn   string
	GPULayers   string
	NoKVOffload bool
	// Stack names the llama.cpp build (--stack llama.cpp=b8390).
	Stack string
}

func newInspectCmd(f *Factory, g *globalOptions) *cobra.Command {
	opts := &inspectOptions{}
	cmd := &cobra.Command{
		Use:     "inspect [MODEL]",
		GroupID: "models",
		Short:   "Size a checkpoint's weights exactly from its safetensors or GGUF headers",
		Long: `Read the headers of a model's weight files, never the weights themselves, and report
the exact stored size by dtype, the tensors that are not parameters (buffers, tied
copies, quantization scales), and how the stored count compares with the count
computed from config.json.

MODEL is a Hub id (org/name or org/name@revision; only the file headers are fetched,
with HTTP Range requests), a local model folder, a .safetensors file or a .gguf file.
For GGUF files the inference memory is estimated as llama.cpp allocates it, on the
GPU and on the host: the weights where -ngl puts the layers, the KV cache (the
context padded to a multiple of 256, split per sequence with -np unless
--kv-unified), the compute buffers of llama.cpp's worst-case graph and the output
buffer. The flags are llama.cpp's, short forms included (-c, -ctk, -ctv, -ngl,
-np, -kvu, -fa, -b, -ub, -nkvo).

The Hub is reached with HF_TOKEN (or the token file of 'huggingface-cli login'),
HF_ENDPOINT and the cache in HF_HOME, like transformers; HF_HUB_OFFLINE=1 or --offline
uses the cache only.`,
		Example: `  gpumem inspect Qwen/Qwen3-8B
  gpumem inspect deepseek-ai/DeepSeek-V3 --format json
  gpumem inspect ./checkpoints/my-model
  gpumem inspect bartowski/Llama-3.2-3B-Instruct-GGUF --file Llama-3.2-3B-Instruct-Q4_K_M.gguf --ctx-size 8192
  gpumem inspect ./model-Q4_K_M.gguf --ctx-size 32768 --cache-type-k q8_0 --cache-type-v q8_0
  gpumem inspect ./model-Q4_K_M.gguf -c 16384 -ngl 20 -fa on -ctk q8_0 -ctv q8_0 -np 4`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := modelFromArgs(&opts.Model, args); err != nil {
				return err
			}
			if opts.Model == "" {
				return usageErrorf("no model given: pass a Hub id, a model folder, or a .safetensors or .gguf file")
			}
			if opts.CtxSize < 0 {
				return usageErrorf("--ctx-size %d: want a positive number of tokens", opts.CtxSize)
			}
			if opts.UBatch < 1 {
				return usageErrorf("--ubatch-size %d: want a positive number of tokens", opts.UBatch)
			}
			if opts.Batch < 1 {
				return usageErrorf("--batch-size %d: want a positive number of tokens", opts.Batch)
			}
			if opts.Parallel < 1 {
				return usageErrorf("--parallel %d: want 1 or more sequences", opts.Parallel)
			}
			return inspectRun(cmd.Context(), f, g, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Model, "model", "m", "", "Hub id, model folder, .safetensors or .gguf file")
	fl.StringVar(&opts.File, "file", "", "a file in the Hub repository to inspect, e.g. a .gguf quantization")
	fl.IntVarP(&opts.CtxSize, "ctx-size", "c", 0, "GGUF: context size n_ctx in tokens, all parallel sequences together (default the model's context_length)")
	fl.StringVar(&opts.CacheTypeK, "cache-type-k", "f16", "GGUF: KV-cache type for K (-ctk): "+strings.Join(gguf.CacheTypes(), ", "))
	fl.StringVar(&opts.CacheTypeV, "cache-type-v", "f16", "GGUF: KV-cache type for V (-ctv); a quantized V cache needs flash attention")
	fl.IntVarP(&opts.Batch, "batch-size", "b", 2048, "GGUF: logical batch size n_batch")
	fl.IntVarP(&opts.UBatch, "ubatch-size", "u", 512, "GGUF: physical batch size n_ubatch (-ub): the worst-case graph that sizes the compute buffers, and the cells sliding-window layers keep beyond the window")
	fl.BoolVar(&opts.SWAFull, "swa-full", false, "GGUF: full-size KV cache on sliding-window layers, as llama.cpp --swa-full")
	fl.IntVar(&opts.Parallel, "parallel", 1, "GGUF: parallel sequences n_seq_max (-np)")
	fl.BoolVar(&opts.KVUnified, "kv-unified", false, "GGUF: one KV stream for all sequences (-kvu) instead of n_ctx / parallel cells each")
	fl.StringVar(&opts.FlashAttn, "flash-attn", "auto", "GGUF: flash attention (-fa): on, off or auto (read as on, as llama.cpp resolves it on a GPU that supports it)")
	fl.StringVar(&opts.GPULayers, "n-gpu-layers", "all", "GGUF: layers offloaded to the GPU (-ngl, --gpu-layers): a number, or all; n_layer + 1 offloads the output layer too")
	fl.BoolVar(&opts.NoKVOffload, "no-kv-offload", false, "GGUF: keep the KV cache in host memory (-nkvo)")
	fl.StringVar(&opts.Stack, "stack", "", "GGUF: the llama.cpp build the estimate is for, llama.cpp=b8390 (default the newest build gpumem's llama.cpp rules were checked against; older builds are refused)")
	fl.Lookup("flash-attn").NoOptDefVal = "on"
	_ = fl.SetAnnotation("flash-attn", valuesAnnotation, []string{"on", "off", "auto", "1", "0", "true", "false"})
	for name, short := range map[string][]string{
		"cache-type-k": {"ctk"}, "cache-type-v": {"ctv"}, "ubatch-size": {"ub"}, "parallel": {"np"},
		"kv-unified": {"kvu"}, "flash-attn": {"fa"}, "n-gpu-layers": {"ngl"}, "no-kv-offload": {"nkvo"},
	} {
		_ = fl.SetAnnotation(name, shortAnnotation, short)
	}
	fl.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "gpu-layers" {
			name = "n-gpu-layers"
		}
		return pflag.NormalizedName(name)
	})
	addHubFlags(fl, &opts.Hub)
	return cmd
}

// inspection is the result of 'gpumem inspect', printed as JSON or a table.
type inspection struct {
	Model  string `json:"model"`
	Commit string `json:"commit,omitempty"`
	// ConfigParams is the parameter count from config.json, 0 when there is none.
	ConfigParams int64 `json:"config_params,omitempty"`
	// configLayers is the text stack's num_hidden_layers, 0 when unknown.
	configLayers int
	Files        []string                `json:"files,omitempty"`
	Summary      *safetensors.Summary    `json:"safetensors,omitempty"`
	Comparison   *safetensors.Comparison `json:"comparison,omitempty"`
	GGUF         *gguf.Memory            `json:"gguf,omitempty"`
	// LlamaCpp is the llama.cpp build a GGUF estimate is for.
	LlamaCpp *memory.StackVersion `json:"llama_cpp,omitempty"`
	Warnings []string             `json:"warnings,omitempty"`
}

func inspectRun(ctx context.Context, f *Factory, g *globalOptions, opts *inspectOptions) error {
	// inspect reads the weights of the model named, so it takes no
	// stand-in: a catalog name is read from the Hub under its id.
	loc, err := modelref.Locate(opts.Model, modelref.Options{LocalPaths: true, Revision: opts.Hub.Revision})
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("inspect: %w", err)
	}
	if err != nil {
		return refError(opts.Model, err)
	}
	var res *inspection
	switch loc.Kind {
	case modelref.File, modelref.Folder:
		res, err = inspectLocal(ctx, opts, loc.Path, loc.Kind == modelref.Folder)
	default:
		res, err = inspectHub(ctx, f, opts, loc.Hub)
	}
	if err != nil {
		return err
	}
	if r := g.renderOptions(f); r.Format == report.JSON {
		enc := json.NewEncoder(f.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.writeTable(f.IO.Out, g.renderOptions(f).Units)
}

// inspectLocal inspects a local folder, .safetensors or .gguf file.
func inspectLocal(ctx context.Context, opts *inspectOptions, path string, dir bool) (*inspection, error) {
	res := &inspection{Model: path}
	switch {
	case dir && opts.File != "":
		return inspectLocal(ctx, opts, filepath.Join(path, opts.File), false)
	case dir:
		var tied bool
		if src, err := modelref.Resolve(ctx, path, modelref.Options{LocalPaths: true, Exact: true}); err == nil {
			m := src.Model
			res.ConfigParams, tied, res.configLayers = m.TotalParams(), m.Text.TiedEmbeddings, m.Text.Layers
		} else if !errors.Is(err, fs.ErrNotExist) {
			res.Warnings = append(res.Warnings, fmt.Sprintf("config.json: %v", err))
		}
		ck, err := safetensors.ReadCheckpoint(ctx, safetensors.DirOpener(path), safetensors.Options{})
		if errors.Is(err, fs.ErrNotExist) {
			return inspectLocalGGUF(ctx, opts, path, err)
		}
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", path, err)
		}
		res.addCheckpoint(ck, tied)
		return res, nil
	}
	if isGGUF(path) {
		names := shardNames(filepath.ToSlash(path))
		return res, res.addGGUFShards(names, opts, func(n string) (safetensors.File, error) {
			return safetensors.OpenFile(filepath.FromSlash(n))
		})
	}
	file, err := safetensors.OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	h, err := safetensors.ReadHeader(file, file.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	res.addCheckpoint(&safetensors.Checkpoint{Files: []safetensors.FileHeader{{Name: filepath.Base(path), Header: h}}, Tensors: h.Tensors}, false)
	return res, nil
}

// inspectLocalGGUF inspects the one GGUF model (possibly split) of a
// folder without safetensors weights; notFound is returned when there is none.
func inspectLocalGGUF(ctx context.Context, opts *inspectOptions, dir string, notFound error) (*inspection, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	models := ggufModels(names)
	switch {
	case len(models) == 0:
		return nil, fmt.Errorf("inspect %s: no safetensors or GGUF weights (.bin and .pt checkpoints are not read): %w", dir, notFound)
	case len(models) > 1:
		return nil, usageErrorf("%s holds %d GGUF models; pick one with --file: %s", dir, len(models), strings.Join(models, ", "))
	}
	return inspectLocal(ctx, opts, filepath.Join(dir, models[0]), false)
}

// ggufModels returns the GGUF models among file names, one name per
// model: a split model is named by its first shard.
func ggufModels(names []string) []string {
	var models []string
	seen := map[string]bool{}
	for _, name := range names {
		if !isGGUF(name) {
			continue
		}
		key := name
		if parts := gguf.SplitNames(path.Base(name)); parts != nil {
			key = path.Join(path.Dir(name), parts[0])
		}
		if !seen[key] {
			seen[key] = true
			models = append(models, key)
		}
	}
	sort.Strings(models)
	return models
}

// inspectHub inspects a Hub repository: its config and weight headers,
// or one named file. A repository without safetensors weights but with
// one GGUF model (possibly split) is inspected as that GGUF model.
func inspectHub(ctx context.Context, f *Factory, opts *inspectOptions, ref hub.Ref) (*inspection, error) {
	c, err := newHubClient(f, opts.Hub)
	if err != nil {
		return nil, err
	}
	res := &inspection{Model: ref.String()}
	if isGGUF(opts.File) {
		return res, res.addHubGGUF(ctx, c, ref, opts.File, opts)
	}
	snap, err := c.FetchConfig(ctx, ref)
	if errors.Is(err, fs.ErrNotExist) && opts.File == "" {
		return res, res.findHubGGUF(ctx, c, ref, opts, err)
	}
	if err != nil {
		return nil, hubError(err)
	}
	res.Commit, res.Warnings = snap.Commit, snap.Warnings
	pinned := ref
	if snap.Commit != "" {
		pinned.Revision = snap.Commit
	}
	var tied bool
	if m, err := model.ParseFS(snap, "."); err == nil {
		res.ConfigParams, tied, res.configLayers = m.TotalParams(), m.Text.TiedEmbeddings, m.Text.Layers
	} else {
		res.Warnings = append(res.Warnings, fmt.Sprintf("config.json: %v", err))
	}
	prog := c.Config().Progress
	ck, err := safetensors.ReadCheckpoint(ctx, modelref.HubOpener(c, pinned, opts.File), safetensors.Options{
		Progress: func(done, total int) { prog.Update("safetensors headers", int64(done), int64(total)) },
	})
	if errors.Is(err, fs.ErrNotExist) && opts.File == "" {
		return res, res.findHubGGUF(ctx, c, pinned, opts, err)
	}
	if err != nil {
		return nil, hubError(err)
	}
	res.addCheckpoint(ck, tied)
	return res, nil
}

func isGGUF(name string) bool { return strings.HasSuffix(strings.ToLower(name), ".gguf") }

// findHubGGUF lists the repository and inspects its GGUF model when it
// has exactly one; otherwise it returns notFound, or asks for --file.
func (r *inspection) findHubGGUF(ctx context.Context, c *hub.Client, ref hub.Ref, opts *inspectOptions, notFound error) error {
	info, err := c.Info(ctx, ref)
	if err != nil {
		return hubError(notFound)
	}
	models := ggufModels(info.Files)
	switch {
	case len(models) == 0:
		return hubError(notFound)
	case len(models) > 1:
		n := len(models)
		if n > 12 {
			models = append(models[:12], "...")
		}
		return usageErrorf("%s has no safetensors weights but %d GGUF models; pick one with --file: %s", ref, n, strings.Join(models, ", "))
	}
	pinned := ref
	pinned.Revision = info.Commit
	r.Commit = info.Commit
	return r.addHubGGUF(ctx, c, pinned, models[0], opts)
}

// addHubGGUF reads a GGUF model (all shards of a split one) from the Hub.
func (r *inspection) addHubGGUF(ctx context.Context, c *hub.Client, ref hub.Ref, name string, opts *inspectOptions) error {
	return r.addGGUFShards(shardNames(name), opts, func(n string) (safetensors.File, error) {
		f, err := c.Open(ctx, ref, n)
		return f, hubError(err)
	})
}

// shardNames returns every shard of a split GGUF, or name alone.
func shardNames(name string) []string {
	dir, base := path.Split(name)
	parts := gguf.SplitNames(base)
	if parts == nil {
		return []string{name}
	}
	for i := range parts {
		parts[i] = dir + parts[i]
	}
	return parts
}

func (r *inspection) addCheckpoint(ck *safetensors.Checkpoint, tied bool) {
	s := safetensors.Summarize(ck.Tensors, tied)
	r.Summary = &s
	for _, f := range ck.Files {
		r.Files = append(r.Files, f.Name)
	}
	if r.ConfigParams > 0 {
		c := s.Compare(r.ConfigParams)
		if extra := safetensors.LayersFrom(ck.Tensors, r.configLayers); r.configLayers > 0 && c.Unexplained != 0 && extra.Tensors > 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("%d elements in %d tensors belong to layers numbered %d and up, beyond num_hidden_layers (e.g. multi-token-prediction layers the config does not count)", extra.Elements, extra.Tensors, r.configLayers))
		}
		r.Comparison = &c
	}
	r.Warnings = append(r.Warnings, ck.Warnings...)
}

// addGGUFShards reads the GGUF shards named and estimates their memory.
func (r *inspection) addGGUFShards(names []string, opts *inspectOptions, open func(string) (safetensors.File, error)) error {
	var shards []*gguf.File
	for _, name := range names {
		file, err := open(name)
		if err != nil {
			return err
		}
		gf, err := gguf.Read(file, file.Size())
		file.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		shards = append(shards, gf)
		r.Files = append(r.Files, name)
	}
	gf, err := gguf.Merge(shards)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Model, err)
	}
	ngl, err := gguf.ParseGPULayers(opts.GPULayers)
	if err != nil {
		return usageErrorf("--%s", err)
	}
	if r.LlamaCpp, err = llamaCppVersion(opts.Stack); err != nil {
		return usageErrorf("--stack: %w", err)
	}
	m, err := gguf.Estimate(gf, gguf.Options{
		ContextSize: opts.CtxSize, CacheTypeK: opts.CacheTypeK, CacheTypeV: opts.CacheTypeV,
		Batch: opts.Batch, UBatch: opts.UBatch, SWAFull: opts.SWAFull,
		Parallel: opts.Parallel, KVUnified: opts.KVUnified, FlashAttention: opts.FlashAttn,
		GPULayers: ngl, NoKVOffload: opts.NoKVOffload,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", r.Model, err)
	}
	r.GGUF = m
	return nil
}

// llamaCppVersion resolves --stack to the llama.cpp build a GGUF
// estimate is for: the one stated, or the default, marked assumed. A
// build older than the memory model covers is an error.
func llamaCppVersion(stack string) (*memory.StackVersion, error) {
	st, err := memory.ParseStack(stack)
	if err != nil {
		return nil, err
	}
	rs, err := memory.ResolveStack(st, nil)
	if err != nil {
		return nil, err
	}
	for _, v := range rs.Versions {
		if v.Package == "llama.cpp" {
			return &v, nil
		}
	}
	return nil, fmt.Errorf("no llama.cpp version")
}

// writeTable prints the inspection as aligned text.
func (r *inspection) writeTable(w io.Writer, u report.Units) error {
	size := func(b int64) string {
		if u == report.SI {
			return units.FormatSI(units.Bytes(b))
		}
		return units.FormatIEC(units.Bytes(b))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s\n", r.Model)
	if r.Commit != "" {
		fmt.Fprintf(tw, "commit\t%s\n", r.Commit)
	}
	if r.Summary != nil {
		r.writeSafetensors(tw, size)
	}
	if r.GGUF != nil {
		r.writeGGUF(tw, size)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(tw, "warning\t%s\n", warn)
	}
	return tw.Flush()
}

func (r *inspection) writeSafetensors(tw io.Writer, size func(int64) string) {
	s := r.Summary
	fmt.Fprintf(tw, "files\t%d\n", len(r.Files))
	fmt.Fprintf(tw, "tensors\t%d\n", s.Tensors)
	fmt.Fprintf(tw, "stored elements\t%d\n", s.Elements)
	fmt.Fprintf(tw, "weights\t%s\t(%d bytes)\n", size(s.Bytes), s.Bytes)
	fmt.Fprintf(tw, "\ndtype\ttensors\telements\tsize\n")
	for _, g := range s.ByDType {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", g.Key, g.Tensors, g.Elements, size(g.Bytes))
	}
	fmt.Fprintf(tw, "\nkind\ttensors\telements\tsize\n")
	for _, g := range s.ByKind {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", g.Key, g.Tensors, g.Elements, size(g.Bytes))
	}
	if c := r.Comparison; c != nil {
		fmt.Fprintf(tw, "\nconfig.json parameters\t%d\n", c.ConfigParams)
		fmt.Fprintf(tw, "checkpoint parameters\t%d\n", c.CheckpointParams)
		for _, n := range c.Notes {
			fmt.Fprintf(tw, "note\t%s\n", n)
		}
	}
}

func (r *inspection) writeGGUF(tw io.Writer, size func(int64) string) {
	m := r.GGUF
	fmt.Fprintf(tw, "architecture\t%s\n", m.Architecture)
	if m.Name != "" {
		fmt.Fprintf(tw, "name\t%s\n", m.Name)
	}
	fmt.Fprintf(tw, "parameters\t%d\n", m.Params)
	if v := r.LlamaCpp; v != nil {
		assumed := ""
		if v.Assumed {
			assumed = "\t(assumed: pass --stack llama.cpp=bNNNN for another build)"
		}
		fmt.Fprintf(tw, "llama.cpp\t%s%s\n", v.Version, assumed)
	}
	fmt.Fprintf(tw, "\ntype\ttensors\telements\tsize\n")
	for _, g := range m.WeightsByType {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", g.Type, g.Tensors, g.Elements, size(g.Bytes))
	}
	fmt.Fprintf(tw, "\nweights\t%s\n", size(int64(m.WeightsBytes)))
	ctx := fmt.Sprintf("n_ctx %d", m.ContextSize)
	if m.KVStreams > 1 {
		ctx += fmt.Sprintf(" (%d sequences × %d)", m.KVStreams, m.ContextPerSeq)
	} else if m.Parallel > 1 {
		ctx += fmt.Sprintf(" (unified, %d sequences)", m.Parallel)
	}
	fmt.Fprintf(tw, "context\t%s\tn_batch %d, n_ubatch %d\n", ctx, m.Batch, m.UBatch)
	fa := "off"
	if m.FlashAttention {
		fa = "on"
		if m.FlashAssumed {
			fa = "on (auto, assumed)"
		}
	}
	fmt.Fprintf(tw, "flash attention\t%s\n", fa)
	out := "output layer on the host"
	if m.OutputOnGPU {
		out = "and the output layer"
	}
	fmt.Fprintf(tw, "offload\t%d of %d layers\t%s\n", m.GPULayers, m.Layers, out)
	fmt.Fprintf(tw, "KV cache\t%s\t(%d cells, %d layers, K %s, V %s)\n", size(int64(m.KVCacheBytes)), m.ContextSize, m.KVLayers, m.CacheTypeK, m.CacheTypeV)
	if m.SWALayers > 0 {
		fmt.Fprintf(tw, "sliding window\t%d layers\t(%d cells each per sequence stream)\n", m.SWALayers, m.SWACells)
	}
	fmt.Fprintf(tw, "\n\tGPU\thost\n")
	for _, row := range []struct {
		name      string
		gpu, host int64
	}{
		{"weights", int64(m.GPU.WeightsBytes), int64(m.Host.WeightsBytes)},
		{"KV cache", int64(m.GPU.KVCacheBytes), int64(m.Host.KVCacheBytes)},
		{"compute buffer", int64(m.GPU.ComputeBytes), int64(m.Host.ComputeBytes)},
		{"output buffer", int64(m.GPU.OutputBytes), int64(m.Host.OutputBytes)},
		{"total", int64(m.GPU.TotalBytes), int64(m.Host.TotalBytes)},
	} {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", row.name, size(row.gpu), size(row.host))
	}
	fmt.Fprintf(tw, "\ntotal\t%s\n", size(int64(m.TotalBytes)))
	for _, n := range m.Notes {
		fmt.Fprintf(tw, "note\t%s\n", n)
	}
}
