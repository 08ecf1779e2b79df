package gguf

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
)

// A key or a tensor name given twice is refused, as ggml's loader does:
// a repeated llama.block_count made a 2-layer file 100,000 layers with a
// 195 GiB KV cache, and a repeated tensor was counted twice.
func TestReadDuplicates(t *testing.T) {
	dupKey := tinyLlama(t, kv{"llama.block_count", uint32(100000)})
	dupTensor := writeGGUF(t, []kv{{"general.architecture", "llama"}}, []tensor{
		{"token_embd.weight", []uint64{64, 10}, 0}, {"token_embd.weight", []uint64{64, 10}, 0}})
	emptyKey := writeGGUF(t, []kv{{"", "x"}}, nil)
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"metadata key", dupKey, `metadata key "llama.block_count" is given twice`},
		{"tensor name", dupTensor, `tensor name "token_embd.weight" is given twice (tensors 0 and 1)`},
		{"empty key", emptyKey, "metadata key 0 is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.data), int64(len(tc.data)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// Tensors must follow one another in the data section, as ggml's loader
// requires: a second tensor pointing back at the first's bytes would
// count them twice.
func TestReadOverlappingTensors(t *testing.T) {
	data := writeGGUF(t, []kv{{"general.architecture", "llama"}}, []tensor{
		{"a.weight", []uint64{64, 10}, 0}, {"b.weight", []uint64{64, 10}, 0}})
	// b.weight's offset follows its name, dimension count, two
	// dimensions and type.
	at := bytes.Index(data, []byte("b.weight")) + len("b.weight") + 4 + 2*8 + 4
	binary.LittleEndian.PutUint64(data[at:], 0)
	_, err := Read(bytes.NewReader(data), int64(len(data)))
	if want := `tensor "b.weight": offset 0, want 2560`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error containing %q", err, want)
	}
}

// nestedArrays is a GGUF header holding one metadata array of outer
// arrays, each of inner uint8 values: outer·inner bytes of file.
func nestedArrays(outer, inner int) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	w := func(v any) { binary.Write(&b, le, v) }
	w(uint32(magic))
	w(uint32(3))
	w(uint64(0)) // tensors
	w(uint64(1)) // metadata
	w(uint64(len("nested")))
	b.WriteString("nested")
	w(uint32(TypeArray))
	w(uint32(TypeArray))
	w(uint64(outer))
	row := make([]byte, inner)
	for range outer {
		w(uint32(TypeUint8))
		w(uint64(inner))
		b.Write(row)
	}
	return b.Bytes()
}

// Arrays nested in arrays keep their lengths, not their values: a 16 MiB
// header of nested 1-byte values took about 30 bytes of heap per byte.
func TestReadNestedArraysMemory(t *testing.T) {
	data := nestedArrays(4096, 4096)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	a := f.Metadata["nested"].(Array)
	if a.Len != 4096 || len(a.Values) != 4096 {
		t.Fatalf("outer array: %d values of %d", len(a.Values), a.Len)
	}
	if in := a.Values[0].(Array); in.Len != 4096 || in.Values != nil {
		t.Errorf("inner array: %d values kept of %d", len(in.Values), in.Len)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("reading a %d-byte header allocated %d bytes", len(data), alloc)
	}
}

// The memory the kept metadata takes is bounded: many small keys are
// refused rather than held. (The bound is lowered to 1 MiB so the file
// stays small.)
func TestReadMetadataMemoryBound(t *testing.T) {
	defer func(m int64) { metadataMemory = m }(metadataMemory)
	metadataMemory = 1 << 20
	const n = 1 << 15
	le := binary.LittleEndian
	data := make([]byte, 0, 24+n*21)
	data = le.AppendUint32(data, magic)
	data = le.AppendUint32(data, 3)
	data = le.AppendUint64(data, 0)
	data = le.AppendUint64(data, n)
	for i := range n {
		data = le.AppendUint64(data, 8)
		data = le.AppendUint64(data, uint64(i)) // the key's 8 bytes
		data = le.AppendUint32(data, uint32(TypeUint8))
		data = append(data, 1)
	}
	_, err := Read(bytes.NewReader(data), int64(len(data)))
	if want := "metadata takes more than 1048576 bytes of memory"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error containing %q", err, want)
	}
}

// Figures that follow from a header but no real model has are noted:
// more KV heads than attention heads, a KV cache of a pebibyte or more.
func TestEstimateImplausibleNotes(t *testing.T) {
	tests := []struct {
		name  string
		extra []kv
		want  string // a note containing it; "" for no implausible note
	}{
		{"plausible", nil, ""},
		{"more KV heads than heads", []kv{{"llama.attention.head_count_kv", uint32(16)}}, "layer 0 has more KV heads (llama.attention.head_count_kv 16) than attention heads (head_count 8)"},
		{"petabyte KV cache", []kv{{"llama.context_length", uint32(1 << 31)}, {"llama.block_count", uint32(20000)}}, "implausible: the KV cache comes to"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kvs := []kv{
				{"general.architecture", "llama"},
				{"llama.embedding_length", uint32(512)},
				{"llama.attention.head_count", uint32(8)},
				{"llama.vocab_size", uint32(32000)}, // sizes the logits of the compute buffers
			}
			set := map[string]bool{}
			for _, e := range tc.extra {
				set[e.key] = true
			}
			for _, d := range []kv{{"llama.block_count", uint32(2)}, {"llama.context_length", uint32(4096)}, {"llama.attention.head_count_kv", uint32(2)}} {
				if !set[d.key] {
					kvs = append(kvs, d)
				}
			}
			data := writeGGUF(t, append(kvs, tc.extra...), nil)
			f, err := Read(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Estimate(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			notes := strings.Join(m.Notes, "\n")
			switch {
			case tc.want == "" && strings.Contains(notes, "implausible"):
				t.Errorf("notes of a plausible file: %s", notes)
			case tc.want != "" && !strings.Contains(notes, tc.want):
				t.Errorf("notes lack %q:\n%s", tc.want, notes)
			}
		})
	}
}
