package memory_test

import (
	"testing"

	"github.com/gpumem/gpumem/gguf"
	"github.com/gpumem/gpumem/memory"
)

// TestGGMLTypesMatchGGUF keeps memory's copy of the ggml block layouts
// (memory may not import gguf) in step with the gguf package's table.
func TestGGMLTypesMatchGGUF(t *testing.T) {
	for _, name := range []string{"F32", "F16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"} {
		block, size, ok := memory.GGMLTypeLayout(name)
		if !ok {
			t.Errorf("%s missing from memory's table", name)
			continue
		}
		typ, err := gguf.ParseType(name)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := float64(size*8)/float64(block), typ.BitsPerElement(); got != want {
			t.Errorf("%s: %g bits per element in memory, %g in gguf", name, got, want)
		}
	}
}
