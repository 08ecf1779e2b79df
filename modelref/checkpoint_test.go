package modelref

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/hub"
	"github.com/gpumem/gpumem/model"
)

// tinyConfig is a one-layer Llama small enough to write its weights.
const tinyConfig = `{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
 "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 4,
 "vocab_size": 128, "tie_word_embeddings": true, "torch_dtype": "bfloat16"}`

// stTensor is one tensor to write: a name and its element count.
type stTensor struct {
	name  string
	elems int64
}

// weightsOf lists one BF16 tensor per module instance of m, named as
// transformers names them, so the stored count is m's count.
func weightsOf(t *testing.T, m *model.Model) []stTensor {
	t.Helper()
	var out []stTensor
	for _, mod := range m.Modules {
		for i := range mod.Instances {
			out = append(out, stTensor{strings.Replace(mod.Name, "*", strconv.Itoa(i), 1) + ".weight", mod.Each})
		}
	}
	return out
}

// safetensorsFile writes a safetensors file of BF16 tensors: the header
// length, the JSON header with contiguous offsets, and zero data.
func safetensorsFile(tensors []stTensor) []byte {
	header := map[string]any{}
	var off int64
	for _, t := range tensors {
		header[t.name] = map[string]any{"dtype": "BF16", "shape": []int64{t.elems}, "data_offsets": []int64{off, off + 2*t.elems}}
		off += 2 * t.elems
	}
	h, _ := json.Marshal(header)
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(h)))
	b.Write(h)
	b.Write(make([]byte, off))
	return b.Bytes()
}

func TestResolveCheckpointFolder(t *testing.T) {
	m, err := model.Parse([]byte(tinyConfig))
	if err != nil {
		t.Fatal(err)
	}
	exact := weightsOf(t, m)
	ctx := context.Background()
	o := Options{LocalPaths: true, Checkpoint: true}
	for _, tc := range []struct {
		name    string
		tensors []stTensor // nil: no weights
		stored  int64
		note    string // "": none
	}{
		{"exact", exact, m.TotalParams(), ""},
		{"extra layer", append(exact[:len(exact):len(exact)], stTensor{"model.layers.1.eh_proj.weight", 4096}), m.TotalParams() + 4096,
			fmt.Sprintf("config.json counts %d parameters, the checkpoint's safetensors headers %d", m.TotalParams(), m.TotalParams()+4096)},
		{"no weights", nil, 0, "has no safetensors weights to count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "config.json"), []byte(tinyConfig))
			if tc.tensors != nil {
				writeFile(t, filepath.Join(dir, "model.safetensors"), safetensorsFile(tc.tensors))
			}
			src, err := Resolve(ctx, dir, o)
			if err != nil {
				t.Fatal(err)
			}
			if tc.tensors != nil && (src.Checkpoint == nil || src.Checkpoint.Summary.Params != tc.stored) {
				t.Errorf("checkpoint %+v, want %d stored parameters", src.Checkpoint, tc.stored)
			}
			switch {
			case tc.note == "" && len(src.Notes) != 0:
				t.Errorf("notes %q, want none", src.Notes)
			case tc.note != "" && (len(src.Notes) != 1 || !strings.Contains(src.Notes[0], tc.note)):
				t.Errorf("notes %q, want one containing %q", src.Notes, tc.note)
			}
			if tc.note == "" {
				return
			}
			if w := src.Model.Warnings; len(w) == 0 || w[len(w)-1] != src.Notes[0] {
				t.Errorf("the note is not among the model's warnings: %q", w)
			}
		})
	}
	// Without the option, or for a catalog model, nothing is read.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "config.json"), []byte(tinyConfig))
	writeFile(t, filepath.Join(dir, "model.safetensors"), []byte("not a checkpoint"))
	if src, err := Resolve(ctx, dir, Options{LocalPaths: true}); err != nil || src.Checkpoint != nil {
		t.Errorf("without Checkpoint: %+v, %v", src, err)
	}
	if _, err := Resolve(ctx, dir, o); err == nil || !strings.Contains(err.Error(), "safetensors") {
		t.Errorf("a broken checkpoint asked for: %v, want an error naming it", err)
	}
	if src, err := Resolve(ctx, "llama3-8b", o); err != nil || src.Checkpoint != nil || len(src.Notes) != 0 {
		t.Errorf("catalog model: %+v, %v", src, err)
	}
}

// TestResolveCheckpointHub checks that the weights of a Hub model are
// counted from their headers with Range requests, at the config's
// commit.
func TestResolveCheckpointHub(t *testing.T) {
	m, err := model.Parse([]byte(tinyConfig))
	if err != nil {
		t.Fatal(err)
	}
	tensors := append(weightsOf(t, m), stTensor{"model.layers.1.eh_proj.weight", 4096})
	weights := safetensorsFile(tensors)
	var ranges []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Repo-Commit", testCommit)
		switch r.URL.Path {
		case "/org/tiny/resolve/main/config.json":
			w.Write([]byte(tinyConfig))
		case "/org/tiny/resolve/" + testCommit + "/model.safetensors":
			if rg := r.Header.Get("Range"); rg != "" {
				ranges = append(ranges, rg)
			}
			http.ServeContent(w, r, "model.safetensors", time.Time{}, bytes.NewReader(weights))
		default:
			w.Header().Set("X-Error-Code", "EntryNotFound")
			http.Error(w, "entry not found", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c, err := hub.New(hub.Config{Endpoint: srv.URL, CacheDir: t.TempDir(), Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	src, err := Resolve(context.Background(), "org/tiny", Options{Hub: c, Checkpoint: true})
	if err != nil {
		t.Fatal(err)
	}
	if src.Checkpoint == nil || src.Checkpoint.Comparison.Unexplained != 4096 || len(src.Notes) != 1 ||
		!strings.Contains(src.Notes[0], fmt.Sprintf("config.json counts %d parameters, the checkpoint's safetensors headers %d", m.TotalParams(), m.TotalParams()+4096)) ||
		!strings.Contains(src.Notes[0], "beyond num_hidden_layers") {
		t.Errorf("checkpoint %+v, notes %q", src.Checkpoint, src.Notes)
	}
	if len(ranges) == 0 {
		t.Error("the weights were not read by Range requests")
	}
}
