package hub

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gpumem/gpumem/safetensors"
)

// TestSafetensorsHeaderOverRange reads a checkpoint header through Range
// requests: only the header's bytes cross the network, not the weights.
func TestSafetensorsHeaderOverRange(t *testing.T) {
	f := newFakeHub(t)
	r := newRepo(f)
	header := []byte(`{"model.embed_tokens.weight":{"dtype":"BF16","shape":[1024,256],"data_offsets":[0,524288]}}`)
	var file bytes.Buffer
	binary.Write(&file, binary.LittleEndian, uint64(len(header)))
	file.Write(header)
	file.Write(make([]byte, 524288))
	r.lfs["model.safetensors"] = file.Bytes()

	c := f.client(t, Config{})
	rf, err := c.Open(ctx, Ref{Repo: "org/model"}, "model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	h, err := safetensors.ReadHeader(rf, rf.Size())
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Tensors) != 1 || h.Tensors[0].Elements != 1024*256 {
		t.Errorf("tensors = %+v", h.Tensors)
	}
	if n := f.count("cdn:/blob/org/model/model.safetensors"); n != 1 {
		t.Errorf("CDN requests = %d, want 1 (length and header in one read)", n)
	}
}
