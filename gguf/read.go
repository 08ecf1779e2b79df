package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Limits that keep a corrupt or hostile file from making the reader
// allocate or loop without bound. Counts are also checked against the
// bytes left in the file before anything is allocated.
const (
	// MaxStringLength bounds one metadata string or tensor name. Chat
	// templates, the longest real strings, are tens of KiB; ollama's
	// fs/gguf uses the same 16 MiB bound.
	MaxStringLength = 16 << 20
	// MaxKeptArray is the longest metadata array whose values are kept;
	// longer arrays (a tokenizer's 150k tokens) are skipped and only
	// their length is recorded. Per-layer arrays are far shorter. The
	// values of arrays nested in arrays are never kept: an estimate reads
	// per-layer numbers, not nested lists, and a kept element costs about
	// 30 bytes of heap for one byte of file (a 35 MB header of nested
	// arrays reached 1 GB).
	MaxKeptArray = 4096
	// MaxMetadataMemory bounds the memory the kept metadata may take, in
	// bytes as counted by keptSize: keys, strings and kept array values.
	// Real headers keep well under a MiB once the tokenizer's long arrays
	// are skipped; the largest strings are chat templates of tens of KiB.
	MaxMetadataMemory = 64 << 20
	// maxDims is GGML_MAX_DIMS (ggml/include/ggml.h).
	maxDims = 4
	// maxNesting bounds arrays of arrays.
	maxNesting = 3
	// readBuffer is the read size; over HTTP each fill is one Range request.
	readBuffer = 1 << 20
	// defaultAlignment is GGUF_DEFAULT_ALIGNMENT (ggml/include/gguf.h).
	defaultAlignment = 32
)

// magic is "GGUF" read as a little-endian uint32.
const magic = 0x46554747

// ErrFormat reports a file that is not a well-formed GGUF file.
var ErrFormat = errors.New("invalid GGUF file")

// File is the header of a GGUF file: metadata and tensor descriptions.
type File struct {
	// Version is the GGUF version (2 or 3).
	Version uint32 `json:"version"`
	// Metadata maps keys such as "llama.block_count" to values: uint64,
	// int64, float64, bool, string or [Array].
	Metadata map[string]any `json:"metadata"`
	// Tensors are the tensor descriptions in file order.
	Tensors []TensorInfo `json:"tensors"`
	// Alignment is general.alignment (default 32).
	Alignment int64 `json:"alignment"`
	// DataOffset is where tensor data starts.
	DataOffset int64 `json:"data_offset"`
	// Size is the file's length in bytes.
	Size int64 `json:"size"`
}

// Array is a metadata array. Values holds the elements (uint64, int64,
// float64, bool, string or Array) unless the array is longer than
// [MaxKeptArray] or is itself an element of an array, in which case only
// Len is known.
type Array struct {
	Type   ValueType `json:"type"`
	Len    uint64    `json:"len"`
	Values []any     `json:"values,omitempty"`
}

// TensorInfo describes one tensor.
type TensorInfo struct {
	Name string `json:"name"`
	// Dims are the dimensions, fastest-varying first (ggml's ne).
	Dims []uint64 `json:"dims"`
	Type Type     `json:"type"`
	// Offset is the data offset relative to [File.DataOffset].
	Offset   uint64 `json:"offset"`
	Elements int64  `json:"elements"`
	Bytes    int64  `json:"bytes"`
}

// ValueType is a GGUF metadata value type (enum gguf_type).
type ValueType uint32

// Metadata value types.
const (
	TypeUint8 ValueType = iota
	TypeInt8
	TypeUint16
	TypeInt16
	TypeUint32
	TypeInt32
	TypeFloat32
	TypeBool
	TypeString
	TypeArray
	TypeUint64
	TypeInt64
	TypeFloat64
)

// fixedSize is the encoded size of the fixed-width value types.
var fixedSize = map[ValueType]int64{
	TypeUint8: 1, TypeInt8: 1, TypeBool: 1, TypeUint16: 2, TypeInt16: 2,
	TypeUint32: 4, TypeInt32: 4, TypeFloat32: 4, TypeUint64: 8, TypeInt64: 8, TypeFloat64: 8,
}

// reader reads little-endian values sequentially and tracks the offset.
type reader struct {
	br   *bufio.Reader
	off  int64
	size int64
	// kept is the memory taken by the metadata kept so far (keptSize).
	kept int64
}

// Approximate heap costs of kept metadata, for the MaxMetadataMemory
// bound: a map entry with its key header, and a boxed value in an any.
const (
	keyOverhead   = 64
	valueOverhead = 24
)

// metadataMemory is MaxMetadataMemory; tests lower it.
var metadataMemory int64 = MaxMetadataMemory

// keep counts n more bytes of kept metadata against MaxMetadataMemory.
func (rd *reader) keep(n int64) error {
	if rd.kept += n; rd.kept > metadataMemory {
		return fmt.Errorf("metadata takes more than %d bytes of memory once read", metadataMemory)
	}
	return nil
}

// Read parses the header of a GGUF file of size bytes: the metadata and
// the tensor infos, never the tensor data. r may be a local file or a
// remote file read with HTTP Range requests (about one request per MiB
// of header; a tokenizer vocabulary is the bulk of it).
func Read(r io.ReaderAt, size int64) (*File, error) {
	rd := &reader{br: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), readBuffer), size: size}
	f := &File{Size: size, Alignment: defaultAlignment}
	if err := f.readHeader(rd); err != nil {
		return nil, fmt.Errorf("%w at byte %d: %w", ErrFormat, rd.off, err)
	}
	return f, nil
}

func (f *File) readHeader(rd *reader) error {
	m, err := rd.u32()
	if err != nil {
		return err
	}
	if m != magic {
		return fmt.Errorf("not a GGUF file (magic %#08x)", m)
	}
	if f.Version, err = rd.u32(); err != nil {
		return err
	}
	switch {
	case f.Version == 1:
		return errors.New("GGUF version 1 is not supported; convert the model again with a current llama.cpp")
	case f.Version > 0xffff:
		return errors.New("big-endian GGUF files are not supported")
	case f.Version > 3:
		return fmt.Errorf("GGUF version %d is newer than this reader (2 or 3)", f.Version)
	}
	nTensors, err := rd.count(24, "tensor count") // name length, dims, type, offset
	if err != nil {
		return err
	}
	nKV, err := rd.count(13, "metadata count") // key length, type, 1-byte value
	if err != nil {
		return err
	}
	if err := f.readMetadata(rd, nKV); err != nil {
		return err
	}
	if err := f.readTensors(rd, nTensors); err != nil {
		return err
	}
	f.DataOffset = alignUp(rd.off, f.Alignment)
	return f.checkTensors()
}

func (f *File) readMetadata(rd *reader, n uint64) error {
	f.Metadata = make(map[string]any, min(n, 1024))
	for i := range n {
		key, err := rd.str()
		if err != nil {
			return fmt.Errorf("metadata key: %w", err)
		}
		// ggml's loader rejects both (gguf_init_from_reader in
		// ggml-org/llama.cpp ggml/src/gguf.cpp at 067d44f6); accepting a
		// repeated key would let the last value win silently.
		if key == "" {
			return fmt.Errorf("metadata key %d is empty", i)
		}
		if _, dup := f.Metadata[key]; dup {
			return fmt.Errorf("metadata key %q is given twice", key)
		}
		if err := rd.keep(keyOverhead + int64(len(key))); err != nil {
			return err
		}
		t, err := rd.u32()
		if err != nil {
			return err
		}
		v, err := rd.value(ValueType(t), 0)
		if err != nil {
			return fmt.Errorf("metadata %q: %w", key, err)
		}
		f.Metadata[key] = v
	}
	if a, ok := f.Metadata["general.alignment"]; ok {
		n, ok := a.(uint64)
		if !ok || n == 0 || n&(n-1) != 0 || n > 1<<20 {
			return fmt.Errorf("general.alignment %v: want a power of two", a)
		}
		f.Alignment = int64(n)
	}
	return nil
}

func (f *File) readTensors(rd *reader, n uint64) error {
	f.Tensors = make([]TensorInfo, 0, n)
	seen := make(map[string]int, n)
	for i := range int(n) {
		var t TensorInfo
		var err error
		if t.Name, err = rd.str(); err != nil {
			return fmt.Errorf("tensor name: %w", err)
		}
		// As ggml's loader does (gguf.cpp, gguf_init_from_reader):
		// a tensor listed twice would be counted twice.
		if j, dup := seen[t.Name]; dup {
			return fmt.Errorf("tensor name %q is given twice (tensors %d and %d)", t.Name, j, i)
		}
		seen[t.Name] = i
		nd, err := rd.u32()
		if err != nil {
			return err
		}
		if nd > maxDims {
			return fmt.Errorf("tensor %q: %d dimensions (at most %d)", t.Name, nd, maxDims)
		}
		t.Dims = make([]uint64, nd)
		for i := range t.Dims {
			if t.Dims[i], err = rd.u64(); err != nil {
				return err
			}
		}
		tt, err := rd.u32()
		if err != nil {
			return err
		}
		t.Type = Type(tt)
		if t.Offset, err = rd.u64(); err != nil {
			return err
		}
		if err := t.size(); err != nil {
			return err
		}
		f.Tensors = append(f.Tensors, t)
	}
	return nil
}

// size computes Elements and Bytes with overflow checks.
func (t *TensorInfo) size() error {
	if !t.Type.Known() {
		return fmt.Errorf("tensor %q: unknown ggml type %d", t.Name, uint32(t.Type))
	}
	n := int64(1)
	for _, d := range t.Dims {
		if d > uint64(maxInt64) || (d != 0 && n > maxInt64/int64(d)) {
			return fmt.Errorf("tensor %q: dimensions %v overflow int64 elements", t.Name, t.Dims)
		}
		n *= int64(d)
	}
	t.Elements = n
	if len(t.Dims) > 0 && t.Dims[0]%uint64(types[t.Type].blockSize) != 0 {
		return fmt.Errorf("tensor %q: first dimension %d is not a multiple of the %s block size %d", t.Name, t.Dims[0], t.Type, types[t.Type].blockSize)
	}
	b, err := rowBytes(t.Type, n)
	if err != nil {
		return fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	t.Bytes = b
	return nil
}

// checkTensors verifies alignment, that data lies inside the file, and
// that each tensor starts where the previous one's aligned data ends, as
// ggml's loader requires ("tensor '%s' has offset %d, expected %d" in
// gguf_init_from_reader, ggml/src/gguf.cpp at 067d44f6): tensors that
// overlap would count the same bytes twice.
func (f *File) checkTensors() error {
	data := f.Size - f.DataOffset
	var next int64
	for _, t := range f.Tensors {
		if t.Offset%uint64(f.Alignment) != 0 {
			return fmt.Errorf("tensor %q: offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		if t.Offset > uint64(maxInt64) || int64(t.Offset) > data || t.Bytes > data-int64(t.Offset) {
			return fmt.Errorf("tensor %q: data [%d, +%d) lies past the end of the file (truncated or split file?)", t.Name, t.Offset, t.Bytes)
		}
		if int64(t.Offset) != next {
			return fmt.Errorf("tensor %q: offset %d, want %d, where the tensor before it ends", t.Name, t.Offset, next)
		}
		next = alignUp(int64(t.Offset)+t.Bytes, f.Alignment)
	}
	return nil
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

func (rd *reader) read(p []byte) error {
	n, err := io.ReadFull(rd.br, p)
	rd.off += int64(n)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("unexpected end of file")
	}
	return err
}

func (rd *reader) u32() (uint32, error) {
	var b [4]byte
	if err := rd.read(b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

func (rd *reader) u64() (uint64, error) {
	var b [8]byte
	if err := rd.read(b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// count reads a count of items of at least minSize bytes each and checks
// that they can fit in the rest of the file.
func (rd *reader) count(minSize int64, what string) (uint64, error) {
	n, err := rd.u64()
	if err != nil {
		return 0, err
	}
	if left := rd.size - rd.off; n > uint64(left/minSize) {
		return 0, fmt.Errorf("%s %d cannot fit in the %d bytes left", what, n, left)
	}
	return n, nil
}

func (rd *reader) str() (string, error) {
	n, err := rd.u64()
	if err != nil {
		return "", err
	}
	if n > MaxStringLength || int64(n) > rd.size-rd.off {
		return "", fmt.Errorf("string of %d bytes exceeds the %d-byte limit or the file", n, MaxStringLength)
	}
	b := make([]byte, n)
	if err := rd.read(b); err != nil {
		return "", err
	}
	return string(b), nil
}

func (rd *reader) skip(n int64) error {
	if n > rd.size-rd.off {
		return errors.New("unexpected end of file")
	}
	k, err := rd.br.Discard(int(n))
	rd.off += int64(k)
	if err != nil {
		return errors.New("unexpected end of file")
	}
	return nil
}

// value reads one metadata value of type t, counting it as kept.
func (rd *reader) value(t ValueType, depth int) (any, error) {
	switch t {
	case TypeString:
		s, err := rd.str()
		if err == nil {
			err = rd.keep(valueOverhead + int64(len(s)))
		}
		return s, err
	case TypeArray:
		if err := rd.keep(valueOverhead); err != nil {
			return nil, err
		}
		return rd.array(depth)
	}
	if err := rd.keep(valueOverhead); err != nil {
		return nil, err
	}
	size, ok := fixedSize[t]
	if !ok {
		return nil, fmt.Errorf("unknown value type %d", t)
	}
	var b [8]byte
	if err := rd.read(b[:size]); err != nil {
		return nil, err
	}
	return decodeFixed(t, b[:size]), nil
}

func decodeFixed(t ValueType, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return uint64(b[0])
	case TypeInt8:
		return int64(int8(b[0]))
	case TypeBool:
		return b[0] != 0
	case TypeUint16:
		return uint64(le.Uint16(b))
	case TypeInt16:
		return int64(int16(le.Uint16(b)))
	case TypeUint32:
		return uint64(le.Uint32(b))
	case TypeInt32:
		return int64(int32(le.Uint32(b)))
	case TypeFloat32:
		return float64(math.Float32frombits(le.Uint32(b)))
	case TypeUint64:
		return le.Uint64(b)
	case TypeInt64:
		return int64(le.Uint64(b))
	default: // TypeFloat64
		return math.Float64frombits(le.Uint64(b))
	}
}

// array reads an array, keeping its values only when it is short and
// not itself inside an array; otherwise only its length.
func (rd *reader) array(depth int) (Array, error) {
	if depth >= maxNesting {
		return Array{}, fmt.Errorf("arrays nested deeper than %d", maxNesting)
	}
	et, err := rd.u32()
	if err != nil {
		return Array{}, err
	}
	a := Array{Type: ValueType(et)}
	minSize, fixed := fixedSize[a.Type]
	switch {
	case a.Type == TypeString || a.Type == TypeArray:
		minSize = 8
	case !fixed:
		return Array{}, fmt.Errorf("array of unknown value type %d", et)
	}
	if a.Len, err = rd.count(minSize, "array length"); err != nil {
		return Array{}, err
	}
	keep := a.Len <= MaxKeptArray && depth == 0
	switch {
	case keep:
		a.Values = make([]any, 0, a.Len)
		for range a.Len {
			v, err := rd.value(a.Type, depth+1)
			if err != nil {
				return Array{}, err
			}
			a.Values = append(a.Values, v)
		}
		return a, nil
	case fixed:
		return a, rd.skip(int64(a.Len) * minSize)
	case a.Type == TypeString:
		return a, rd.skipStrings(a.Len)
	}
	for range a.Len { // arrays of arrays: walked for their structure, not kept
		if _, err := rd.array(depth + 1); err != nil {
			return Array{}, err
		}
	}
	return a, nil
}

// skipStrings skips n strings without allocating them.
func (rd *reader) skipStrings(n uint64) error {
	for range n {
		l, err := rd.u64()
		if err != nil {
			return err
		}
		if l > MaxStringLength {
			return fmt.Errorf("string of %d bytes exceeds the %d-byte limit", l, MaxStringLength)
		}
		if err := rd.skip(int64(l)); err != nil {
			return err
		}
	}
	return nil
}
