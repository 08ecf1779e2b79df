package modelref

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/gpumem/gpumem/hub"
	"github.com/gpumem/gpumem/safetensors"
)

// Checkpoint is what a model's safetensors headers say next to its
// config.json: the stored tensors and how their parameter count compares
// with the count computed from the config.
type Checkpoint struct {
	// Files are the safetensors files read, in shard order.
	Files []string `json:"files"`
	// Summary totals the stored tensors by dtype and kind.
	Summary safetensors.Summary `json:"summary"`
	// Comparison sets the stored parameter count against the model's
	// count from config.json.
	Comparison safetensors.Comparison `json:"comparison"`
}

// HubFiles reads files of a Hub repository, whole (through the cache)
// or by HTTP Range requests; [*hub.Client] implements it. A [HubClient]
// that also implements it lets [Options.Checkpoint] read a Hub model's
// weight headers.
type HubFiles interface {
	Get(ctx context.Context, ref hub.Ref, file string) (*hub.Fetched, error)
	Open(ctx context.Context, ref hub.Ref, file string) (hub.File, error)
}

// HubOpener opens the checkpoint files of ref on the Hub for
// [safetensors.ReadCheckpoint]: the index is fetched whole through the
// cache (so it is there for the next run), weight files are read with
// Range requests. single, when set, replaces model.safetensors as the
// name of a single-file checkpoint.
func HubOpener(c HubFiles, ref hub.Ref, single string) safetensors.Opener {
	return func(ctx context.Context, name string) (safetensors.File, error) {
		if single != "" && name == safetensors.SingleName {
			name = single
		}
		if name == safetensors.IndexName {
			got, err := c.Get(ctx, ref, name)
			if err != nil {
				return nil, err
			}
			return memReaderAt{bytes.NewReader(got.Data)}, nil
		}
		return c.Open(ctx, ref, name)
	}
}

// memReaderAt is a fetched file as a [safetensors.File].
type memReaderAt struct{ *bytes.Reader }

func (memReaderAt) Close() error { return nil }

// readCheckpoint reads the safetensors headers of a model folder or Hub
// repository and sets src.Checkpoint. A count that differs from the
// config's is noted with both figures; a source without safetensors
// weights is noted too. Other sources are left alone.
func (o Options) readCheckpoint(ctx context.Context, src *Source) error {
	var open safetensors.Opener
	switch src.Kind {
	case Folder:
		open = safetensors.DirOpener(src.Path)
	case Hub:
		files, ok := o.hub().(HubFiles)
		if !ok {
			return nil
		}
		r := src.Hub
		if src.Commit != "" {
			r.Revision = src.Commit // the weights of the config's commit
		}
		open = HubOpener(files, r, "")
	default:
		return nil
	}
	ck, err := safetensors.ReadCheckpoint(ctx, open, safetensors.Options{})
	if errors.Is(err, fs.ErrNotExist) {
		src.note("%s has no safetensors weights to count; the parameter count is config.json's", src.Ref)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: read the safetensors headers: %w", src.Ref, err)
	}
	m := src.Model
	out := &Checkpoint{Summary: safetensors.Summarize(ck.Tensors, m.Text.TiedEmbeddings)}
	for _, f := range ck.Files {
		out.Files = append(out.Files, f.Name)
	}
	out.Comparison = out.Summary.Compare(m.TotalParams())
	if extra := safetensors.LayersFrom(ck.Tensors, m.Text.Layers); m.Text.Layers > 0 && out.Comparison.Unexplained != 0 && extra.Tensors > 0 {
		out.Comparison.Notes = append(out.Comparison.Notes, fmt.Sprintf("%d elements in %d tensors belong to layers numbered %d and up, beyond num_hidden_layers (e.g. multi-token-prediction layers the config does not count)", extra.Elements, extra.Tensors, m.Text.Layers))
	}
	src.Checkpoint = out
	for _, w := range ck.Warnings {
		src.note("%s", w)
	}
	c := out.Comparison
	switch {
	case !c.Comparable:
		src.note("the checkpoint's parameter count cannot be compared with config.json's %d: %s", c.ConfigParams, strings.Join(c.Notes, "; "))
	case c.Unexplained != 0:
		src.note("config.json counts %d parameters, the checkpoint's safetensors headers %d (%s); the estimate is built from config.json's modules",
			c.ConfigParams, c.CheckpointParams, strings.Join(c.Notes, "; "))
	}
	return nil
}
