package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// spec describes one tensor of a synthetic file.
type spec struct {
	name  string
	dtype string
	shape []int64
}

// build writes a safetensors file holding the given tensors (zero data),
// with optional metadata, laid out as the reference writer does.
func build(t testing.TB, meta map[string]string, specs ...spec) []byte {
	t.Helper()
	header := map[string]any{}
	if meta != nil {
		header[metadataKey] = meta
	}
	var off int64
	for _, s := range specs {
		n, err := product(s.shape)
		if err != nil {
			t.Fatal(err)
		}
		b, err := byteSize(DType(s.dtype), n)
		if err != nil {
			t.Fatal(err)
		}
		header[s.name] = map[string]any{"dtype": s.dtype, "shape": s.shape, "data_offsets": []int64{off, off + b}}
		off += b
	}
	js, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	return withHeader(js, off)
}

// withHeader assembles a file from raw header bytes and dataLen zero bytes.
func withHeader(js []byte, dataLen int64) []byte {
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint64(len(js)))
	buf.Write(js)
	buf.Write(make([]byte, dataLen))
	return buf.Bytes()
}

func TestReadHeader(t *testing.T) {
	data := build(t, map[string]string{"format": "pt"},
		spec{"model.embed_tokens.weight", "BF16", []int64{32, 16}},
		spec{"model.norm.weight", "F32", []int64{16}},
		spec{"scalar", "F16", []int64{}},
		spec{"mx", "F4", []int64{4, 8}},
	)
	h, err := ReadHeader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int64{ // elements, bytes
		"model.embed_tokens.weight": {512, 1024},
		"model.norm.weight":         {16, 64},
		"scalar":                    {1, 2},
		"mx":                        {32, 16},
	}
	if len(h.Tensors) != len(want) {
		t.Fatalf("got %d tensors, want %d", len(h.Tensors), len(want))
	}
	for _, tn := range h.Tensors {
		w := want[tn.Name]
		if tn.Elements != w[0] || tn.Bytes != w[1] {
			t.Errorf("%s: got %d elements %d bytes, want %d, %d", tn.Name, tn.Elements, tn.Bytes, w[0], w[1])
		}
	}
	if h.Metadata["format"] != "pt" {
		t.Errorf("metadata = %v, want format=pt", h.Metadata)
	}
	if h.FileBytes != int64(len(data)) {
		t.Errorf("FileBytes = %d, want %d", h.FileBytes, len(data))
	}
}

// countingReader records how many ReadAt calls were made.
type countingReader struct {
	r     *bytes.Reader
	calls int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.calls++
	return c.r.ReadAt(p, off)
}

func TestReadHeaderReads(t *testing.T) {
	small := build(t, nil, spec{"a", "F32", []int64{4}})
	var specs []spec
	for i := range 6000 { // a header larger than the first read
		specs = append(specs, spec{fmt.Sprintf("model.layers.%d.mlp.gate_proj.weight", i), "BF16", []int64{2}})
	}
	large := build(t, nil, specs...)
	for _, tc := range []struct {
		name string
		data []byte
		want int
	}{
		{"small header in one read", small, 1},
		{"large header in two reads", large, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &countingReader{r: bytes.NewReader(tc.data)}
			if _, err := ReadHeader(cr, int64(len(tc.data))); err != nil {
				t.Fatal(err)
			}
			if cr.calls != tc.want {
				t.Errorf("ReadAt calls = %d, want %d", cr.calls, tc.want)
			}
		})
	}
}

func TestReadHeaderErrors(t *testing.T) {
	good := build(t, nil, spec{"w", "F16", []int64{2, 2}})
	lenOnly := func(n uint64) []byte {
		b := make([]byte, 16)
		binary.LittleEndian.PutUint64(b, n)
		return b
	}
	raw := func(js string, data int64) []byte { return withHeader([]byte(js), data) }
	tests := []struct {
		name string
		data []byte
		size int64 // 0 means len(data)
		want string
	}{
		{"empty file", nil, 0, "shorter than the 8-byte header length"},
		{"header length beyond the bound", lenOnly(MaxHeaderSize + 1), 0, "exceeds the 100000000-byte limit"},
		{"header length beyond the file", lenOnly(100), 0, "exceeds the 8 bytes after the length field"},
		{"huge header length", lenOnly(1 << 63), 0, "exceeds the 100000000-byte limit"},
		{"truncated JSON", raw(`{"w": {"dtype": "F16"`, 0), 0, "header JSON"},
		{"not an object", raw(`[1,2,3]`, 0), 0, "does not start with '{'"},
		{"trailing garbage", raw(`{}xx`, 0), 0, "unexpected data after the header JSON"},
		{"unknown dtype", raw(`{"w":{"dtype":"Q4_K","shape":[2],"data_offsets":[0,2]}}`, 2), 0, `unknown dtype "Q4_K"`},
		{"missing shape", raw(`{"w":{"dtype":"F16","data_offsets":[0,2]}}`, 2), 0, "want dtype, shape and data_offsets"},
		{"negative dimension", raw(`{"w":{"dtype":"F16","shape":[-1,2],"data_offsets":[0,2]}}`, 2), 0, "negative dimension"},
		{"overflowing shape", raw(`{"w":{"dtype":"F16","shape":[4294967296,4294967296],"data_offsets":[0,2]}}`, 2), 0, "overflows int64"},
		{"overflowing bits", raw(`{"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,2]}}`, 2), 0, "overflow int64 bits"},
		{"dimension beyond int64", raw(`{"w":{"dtype":"F16","shape":[9223372036854775808],"data_offsets":[0,2]}}`, 2), 0, "tensor \"w\""},
		{"offsets do not match shape", raw(`{"w":{"dtype":"F16","shape":[4],"data_offsets":[0,6]}}`, 6), 0, "span 6 bytes, but F16 [4] needs 8"},
		{"reversed offsets", raw(`{"w":{"dtype":"F16","shape":[1],"data_offsets":[4,2]}}`, 6), 0, "0 <= begin <= end"},
		{"three offsets", raw(`{"w":{"dtype":"F16","shape":[1],"data_offsets":[0,2,4]}}`, 6), 0, "want [begin, end]"},
		{"data past the end", raw(`{"w":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}`, 4), 0, "past the 4-byte data section"},
		// The reference implementation's Metadata::validate and
		// MetadataIncompleteBuffer: the tensors tile the data exactly.
		{"overlapping tensors", raw(`{"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},"b":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}`, 8), 0,
			`tensor "b": data [0, 8) overlaps the tensor before it, which ends at 8`},
		{"partly overlapping", raw(`{"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},"b":{"dtype":"F16","shape":[4],"data_offsets":[4,12]}}`, 12), 0, "overlaps"},
		{"gap before a tensor", raw(`{"w":{"dtype":"F16","shape":[2],"data_offsets":[4,8]}}`, 8), 0, `tensor "w": data starts at 4, leaving bytes [0, 4) that no tensor holds`},
		{"gap between tensors", raw(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"F16","shape":[2],"data_offsets":[6,10]}}`, 10), 0, "leaving bytes [4, 6)"},
		{"data after the last tensor", raw(`{"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, 8), 0, "the tensors hold 4 bytes of the 8-byte data section"},
		{"duplicate tensor name", raw(`{"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"w":{"dtype":"F16","shape":[2],"data_offsets":[4,8]}}`, 8), 0, `tensor "w" is listed twice`},
		{"duplicate key inside an entry", raw(`{"w":{"dtype":"F16","dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4), 0, `key "w.dtype" is given twice`},
		{"half-byte F4", raw(`{"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}`, 2), 0, "do not fill whole bytes"},
		{"metadata not strings", raw(`{"__metadata__":{"a":1}}`, 0), 0, "__metadata__"},
		{"size larger than the data", good, int64(len(good)) + 100, "unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			size := tc.size
			if size == 0 {
				size = int64(len(tc.data))
			}
			_, err := ReadHeader(bytes.NewReader(tc.data), size)
			if err == nil {
				t.Fatalf("got no error, want one containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestReadHeaderFormatSentinel(t *testing.T) {
	data := withHeader([]byte(`{"w":{"dtype":"F99","shape":[1],"data_offsets":[0,1]}}`), 1)
	_, err := ReadHeader(bytes.NewReader(data), int64(len(data)))
	if !errors.Is(err, ErrFormat) {
		t.Errorf("error %v does not wrap ErrFormat", err)
	}
}

func TestDTypeBits(t *testing.T) {
	tests := []struct {
		dtype string
		bits  int
		ok    bool
	}{
		{"BF16", 16, true}, {"F8_E4M3", 8, true}, {"F4", 4, true}, {"F6_E2M3", 6, true},
		{"I64", 64, true}, {"BOOL", 8, true}, {"bf16", 0, false}, {"", 0, false},
	}
	for _, tc := range tests {
		bits, ok := DType(tc.dtype).Bits()
		if bits != tc.bits || ok != tc.ok {
			t.Errorf("%q: got %d, %v; want %d, %v", tc.dtype, bits, ok, tc.bits, tc.ok)
		}
	}
	if got := len(KnownDTypes()); got != len(dtypeBits) {
		t.Errorf("KnownDTypes has %d entries, want %d", got, len(dtypeBits))
	}
}

func FuzzHeader(f *testing.F) {
	f.Add(build(f, map[string]string{"format": "pt"}, spec{"a", "BF16", []int64{2, 3}}, spec{"b", "F4", []int64{2}}))
	f.Add(withHeader([]byte(`{"w":{"dtype":"F16","shape":[4294967296,4294967296],"data_offsets":[0,2]}}`), 2))
	f.Add(withHeader([]byte(`{"w":{"dtype":"F16","shape":[],"data_offsets":[0,2]}}  `), 2))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadHeader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		dataLen := int64(len(data)) - prefixLen - h.HeaderBytes
		var sum int64
		for _, tn := range h.Tensors {
			if tn.Elements < 0 || tn.Bytes < 0 || tn.Begin < 0 || tn.End > dataLen || tn.End-tn.Begin != tn.Bytes {
				t.Fatalf("accepted an inconsistent tensor: %+v (data section %d)", tn, dataLen)
			}
			sum += tn.Bytes
		}
		// The tensors tile the data section: their sizes add up to it, so
		// no byte is counted twice.
		if sum != dataLen {
			t.Fatalf("tensors hold %d bytes of a %d-byte data section", sum, dataLen)
		}
		s := Summarize(h.Tensors, true)
		if s.Elements < 0 || s.Bytes < 0 || s.Params > s.Elements {
			t.Fatalf("inconsistent summary %+v", s)
		}
	})
}
