package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/gpumem/gpumem/internal/jsonkeys"
)

// MaxHeaderSize is the largest JSON header the reader accepts, in bytes.
// It is the limit of the reference implementation (MAX_HEADER_SIZE in
// huggingface/safetensors: safetensors/src/tensor.rs), so every file that
// library can load is read here too, while a corrupt or hostile length
// field cannot make the reader allocate more than this. The largest real
// headers (a shard of a several-hundred-billion parameter MoE model lists
// tens of thousands of tensors) are a few MiB.
const MaxHeaderSize = 100_000_000

// prefixLen is the size of the little-endian uint64 header length that
// starts every safetensors file.
const prefixLen = 8

// firstRead is how many bytes are read with the length prefix, so that a
// typical header needs one read (one HTTP Range request) instead of two.
const firstRead = 256 << 10

// metadataKey is the reserved header key holding free-form string metadata.
const metadataKey = "__metadata__"

// ErrFormat reports a file that is not a well-formed safetensors file.
var ErrFormat = errors.New("invalid safetensors file")

// Tensor is one entry of a safetensors header.
type Tensor struct {
	// Name is the tensor's key, e.g. "model.layers.0.self_attn.q_proj.weight".
	Name string `json:"name"`
	// DType is the element type as written in the header.
	DType DType `json:"dtype"`
	// Shape is the tensor's dimensions; empty for a scalar.
	Shape []int64 `json:"shape"`
	// Elements is the product of Shape (1 for a scalar).
	Elements int64 `json:"elements"`
	// Bytes is the size of the tensor's data in the file.
	Bytes int64 `json:"bytes"`
	// Begin and End are the tensor's data offsets, relative to the end of
	// the header.
	Begin int64 `json:"begin"`
	End   int64 `json:"end"`
}

// Header is the parsed header of one safetensors file.
type Header struct {
	// Tensors are the file's tensors, sorted by name.
	Tensors []Tensor `json:"tensors"`
	// Metadata is the "__metadata__" map (e.g. {"format": "pt"}), nil if absent.
	Metadata map[string]string `json:"metadata,omitempty"`
	// HeaderBytes is the length of the JSON header.
	HeaderBytes int64 `json:"header_bytes"`
	// FileBytes is the size of the whole file.
	FileBytes int64 `json:"file_bytes"`
}

// ReadHeader reads the header of a safetensors file of size bytes from r,
// reading only the length prefix and the JSON header, never the tensor
// data. It checks every entry: a known dtype, non-negative dimensions
// whose product fits in int64, data offsets that match the dtype and
// shape, tensors that tile the data section exactly (no overlap, no gap,
// none past the end), and each tensor name once.
func ReadHeader(r io.ReaderAt, size int64) (*Header, error) {
	if size < prefixLen {
		return nil, fmt.Errorf("%w: file is %d bytes, shorter than the %d-byte header length", ErrFormat, size, prefixLen)
	}
	first := make([]byte, min(size, firstRead))
	if err := readFull(r, first, 0); err != nil {
		return nil, fmt.Errorf("read header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(first[:prefixLen])
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("%w: header length %d exceeds the %d-byte limit", ErrFormat, n, MaxHeaderSize)
	}
	if int64(n) > size-prefixLen {
		return nil, fmt.Errorf("%w: header length %d exceeds the %d bytes after the length field", ErrFormat, n, size-prefixLen)
	}
	raw, err := headerBytes(r, first, int64(n))
	if err != nil {
		return nil, err
	}
	h, err := parseJSON(raw)
	if err != nil {
		return nil, err
	}
	h.HeaderBytes = int64(n)
	h.FileBytes = size
	if err := h.checkOffsets(size - prefixLen - int64(n)); err != nil {
		return nil, err
	}
	return h, nil
}

// headerBytes returns the n header bytes, reusing the first read when it
// already holds them.
func headerBytes(r io.ReaderAt, first []byte, n int64) ([]byte, error) {
	if prefixLen+n <= int64(len(first)) {
		return first[prefixLen : prefixLen+n], nil
	}
	raw := make([]byte, n)
	if err := readFull(r, raw, prefixLen); err != nil {
		return nil, fmt.Errorf("read %d-byte header: %w", n, err)
	}
	return raw, nil
}

// readFull fills p from r at off. A short read is an error even when the
// reader reports io.EOF, since the caller's size promised the bytes.
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: got %d of %d bytes at offset %d", io.ErrUnexpectedEOF, n, len(p), off)
	}
	return err
}

// entry is one tensor as written in the JSON header.
type entry struct {
	DType   *string  `json:"dtype"`
	Shape   *[]int64 `json:"shape"`
	Offsets *[]int64 `json:"data_offsets"`
}

// parseJSON decodes the JSON header and validates each entry on its own.
func parseJSON(raw []byte) (*Header, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%w: header does not start with '{'", ErrFormat)
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&fields); err != nil {
		return nil, fmt.Errorf("%w: header JSON: %w", ErrFormat, err)
	}
	if err := jsonkeys.Check(raw[:dec.InputOffset()]); err != nil {
		var de *jsonkeys.DuplicateError
		if errors.As(err, &de) && de.Depth == 0 {
			return nil, fmt.Errorf("%w: tensor %q is listed twice", ErrFormat, de.Key)
		}
		return nil, fmt.Errorf("%w: header JSON: %w", ErrFormat, err)
	}
	// Writers pad the header with spaces to an 8-byte boundary; anything
	// else after the object is corruption.
	if rest := raw[dec.InputOffset():]; len(bytes.TrimRight(rest, " \t\r\n")) != 0 {
		return nil, fmt.Errorf("%w: unexpected data after the header JSON", ErrFormat)
	}
	h := &Header{Tensors: make([]Tensor, 0, len(fields))}
	for name, value := range fields {
		if name == metadataKey {
			if err := json.Unmarshal(value, &h.Metadata); err != nil {
				return nil, fmt.Errorf("%w: %s: want an object of strings: %w", ErrFormat, metadataKey, err)
			}
			continue
		}
		t, err := parseEntry(name, value)
		if err != nil {
			return nil, err
		}
		h.Tensors = append(h.Tensors, t)
	}
	sort.Slice(h.Tensors, func(i, j int) bool { return h.Tensors[i].Name < h.Tensors[j].Name })
	return h, nil
}

// parseEntry decodes and checks one tensor entry.
func parseEntry(name string, value json.RawMessage) (Tensor, error) {
	var e entry
	if err := json.Unmarshal(value, &e); err != nil {
		return Tensor{}, fmt.Errorf("%w: tensor %q: %w", ErrFormat, name, err)
	}
	if e.DType == nil || e.Shape == nil || e.Offsets == nil {
		return Tensor{}, fmt.Errorf("%w: tensor %q: want dtype, shape and data_offsets", ErrFormat, name)
	}
	t := Tensor{Name: name, DType: DType(*e.DType), Shape: *e.Shape}
	if _, ok := t.DType.Bits(); !ok {
		return Tensor{}, fmt.Errorf("%w: tensor %q: unknown dtype %q", ErrFormat, name, *e.DType)
	}
	elems, err := product(t.Shape)
	if err != nil {
		return Tensor{}, fmt.Errorf("%w: tensor %q: %w", ErrFormat, name, err)
	}
	t.Elements = elems
	if t.Bytes, err = byteSize(t.DType, elems); err != nil {
		return Tensor{}, fmt.Errorf("%w: tensor %q: %w", ErrFormat, name, err)
	}
	offs := *e.Offsets
	if len(offs) != 2 || offs[0] < 0 || offs[1] < offs[0] {
		return Tensor{}, fmt.Errorf("%w: tensor %q: data_offsets %v: want [begin, end] with 0 <= begin <= end", ErrFormat, name, offs)
	}
	t.Begin, t.End = offs[0], offs[1]
	if t.End-t.Begin != t.Bytes {
		return Tensor{}, fmt.Errorf("%w: tensor %q: data_offsets span %d bytes, but %s %v needs %d", ErrFormat, name, t.End-t.Begin, t.DType, t.Shape, t.Bytes)
	}
	return t, nil
}

// product multiplies dimensions, rejecting negative ones and overflow.
func product(shape []int64) (int64, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
		if d != 0 && n > maxElements/d {
			return 0, fmt.Errorf("shape %v overflows int64 elements", shape)
		}
		n *= d
	}
	return n, nil
}

// checkOffsets verifies that the tensors tile the data section exactly,
// as the reference implementation requires (huggingface/safetensors
// safetensors/src/tensor.rs at 000a16f4: Metadata::validate takes the
// tensors in order of their offsets and fails with InvalidOffset unless
// each begins where the previous one ended, the first at 0, and
// SafeTensors::read_metadata fails with MetadataIncompleteBuffer unless
// the last ends where the file does). Overlapping tensors would count
// the same bytes twice: a 4 MiB file listing many tensors over one range
// would claim gigabytes of weights.
func (h *Header) checkOffsets(data int64) error {
	order := make([]*Tensor, len(h.Tensors))
	for i := range h.Tensors {
		order[i] = &h.Tensors[i]
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		return a.Begin < b.Begin || (a.Begin == b.Begin && a.End < b.End)
	})
	var end int64
	for _, t := range order {
		switch {
		case t.Begin < end:
			return fmt.Errorf("%w: tensor %q: data [%d, %d) overlaps the tensor before it, which ends at %d", ErrFormat, t.Name, t.Begin, t.End, end)
		case t.Begin > end:
			return fmt.Errorf("%w: tensor %q: data starts at %d, leaving bytes [%d, %d) that no tensor holds", ErrFormat, t.Name, t.Begin, end, t.Begin)
		}
		end = t.End
	}
	switch {
	case end > data:
		return fmt.Errorf("%w: tensor data ends at byte %d, past the %d-byte data section (truncated file?)", ErrFormat, end, data)
	case end < data:
		return fmt.Errorf("%w: the tensors hold %d bytes of the %d-byte data section; the rest belongs to no tensor", ErrFormat, end, data)
	}
	return nil
}
