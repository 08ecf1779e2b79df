package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/gpumem/gpumem/safetensors"
)

// Example reads the header of a small checkpoint held in memory (any
// io.ReaderAt works: a file, or a remote file read with Range requests)
// and sizes it by dtype and by kind.
func Example() {
	header := []byte(`{"__metadata__":{"format":"pt"},` +
		`"model.embed_tokens.weight":{"dtype":"BF16","shape":[1000,64],"data_offsets":[0,128000]},` +
		`"lm_head.weight":{"dtype":"BF16","shape":[1000,64],"data_offsets":[128000,256000]},` +
		`"model.rotary_emb.inv_freq":{"dtype":"F32","shape":[32],"data_offsets":[256000,256128]}}`)
	var file bytes.Buffer
	binary.Write(&file, binary.LittleEndian, uint64(len(header)))
	file.Write(header)
	file.Write(make([]byte, 256128))

	h, err := safetensors.ReadHeader(bytes.NewReader(file.Bytes()), int64(file.Len()))
	if err != nil {
		fmt.Println(err)
		return
	}
	s := safetensors.Summarize(h.Tensors, true) // tie_word_embeddings: true
	for _, g := range s.ByKind {
		fmt.Printf("%-9s %d tensors %7d elements %7d bytes\n", g.Key, g.Tensors, g.Elements, g.Bytes)
	}
	c := s.Compare(64000)
	fmt.Println("unexplained:", c.Unexplained)
	// Output:
	// parameter 1 tensors   64000 elements  128000 bytes
	// tied_copy 1 tensors   64000 elements  128000 bytes
	// buffer    1 tensors      32 elements     128 bytes
	// unexplained: 0
}
