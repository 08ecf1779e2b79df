package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpumem/gpumem/units"
)

// kv is one metadata entry for the test writer: the value's Go type picks
// the GGUF type (uint32, uint64, int32, float32, bool, string, []uint32,
// []string).
type kv struct {
	key string
	val any
}

type tensor struct {
	name string
	dims []uint64
	typ  Type
}

// writeGGUF writes a version-3 GGUF file with zeroed tensor data, laid
// out as ggml's gguf writer does (32-byte alignment).
func writeGGUF(t testing.TB, kvs []kv, tensors []tensor) []byte {
	t.Helper()
	var b bytes.Buffer
	le := binary.LittleEndian
	w := func(v any) { binary.Write(&b, le, v) }
	str := func(s string) { w(uint64(len(s))); b.WriteString(s) }
	w(uint32(magic))
	w(uint32(3))
	w(uint64(len(tensors)))
	w(uint64(len(kvs)))
	for _, e := range kvs {
		str(e.key)
		switch v := e.val.(type) {
		case uint32:
			w(uint32(TypeUint32))
			w(v)
		case uint64:
			w(uint32(TypeUint64))
			w(v)
		case int32:
			w(uint32(TypeInt32))
			w(v)
		case float32:
			w(uint32(TypeFloat32))
			w(v)
		case bool:
			w(uint32(TypeBool))
			w(v)
		case string:
			w(uint32(TypeString))
			str(v)
		case []uint32:
			w(uint32(TypeArray))
			w(uint32(TypeUint32))
			w(uint64(len(v)))
			w(v)
		case []string:
			w(uint32(TypeArray))
			w(uint32(TypeString))
			w(uint64(len(v)))
			for _, s := range v {
				str(s)
			}
		default:
			t.Fatalf("unsupported test value %T", v)
		}
	}
	var off uint64
	var sizes []int64
	for _, tn := range tensors {
		str(tn.name)
		w(uint32(len(tn.dims)))
		for _, d := range tn.dims {
			w(d)
		}
		w(uint32(tn.typ))
		w(off)
		ti := TensorInfo{Name: tn.name, Dims: tn.dims, Type: tn.typ}
		if err := ti.size(); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, ti.Bytes)
		off += uint64(alignUp(ti.Bytes, defaultAlignment))
	}
	b.Write(make([]byte, alignUp(int64(b.Len()), defaultAlignment)-int64(b.Len())))
	for _, s := range sizes {
		b.Write(make([]byte, alignUp(s, defaultAlignment)))
	}
	return b.Bytes()
}

// tinyLlama is a 2-layer llama with GQA (8 heads, 2 KV heads, head 64),
// Q4_K matrices, a Q6_K output and F32 norms.
func tinyLlama(t testing.TB, extra ...kv) []byte {
	kvs := append([]kv{
		{"general.architecture", "llama"},
		{"general.name", "tiny"},
		{"llama.block_count", uint32(2)},
		{"llama.context_length", uint32(4096)},
		{"llama.embedding_length", uint32(512)},
		{"llama.attention.head_count", uint32(8)},
		{"llama.attention.head_count_kv", uint32(2)},
		{"tokenizer.ggml.tokens", []string{"<s>", "</s>", "a"}},
	}, extra...)
	var ts []tensor
	ts = append(ts, tensor{"token_embd.weight", []uint64{512, 1000}, 12}, tensor{"output.weight", []uint64{512, 1000}, 14})
	for _, l := range []string{"0", "1"} {
		ts = append(ts,
			tensor{"blk." + l + ".attn_q.weight", []uint64{512, 512}, 12},
			tensor{"blk." + l + ".attn_k.weight", []uint64{512, 128}, 12},
			tensor{"blk." + l + ".attn_norm.weight", []uint64{512}, 0},
		)
	}
	return writeGGUF(t, kvs, ts)
}

func TestRead(t *testing.T) {
	data := tinyLlama(t)
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Architecture() != "llama" || len(f.Tensors) != 8 {
		t.Fatalf("got version %d arch %q %d tensors", f.Version, f.Architecture(), len(f.Tensors))
	}
	if n, ok := f.Uint("llama.block_count"); !ok || n != 2 {
		t.Errorf("block_count = %d, %v", n, ok)
	}
	toks := f.Metadata["tokenizer.ggml.tokens"].(Array)
	if toks.Len != 3 || !cmp.Equal(toks.Values, []any{"<s>", "</s>", "a"}) {
		t.Errorf("tokens = %+v", toks)
	}
	// Q4_K: 256 values in 144 bytes.
	if got := f.Tensors[0]; got.Elements != 512000 || got.Bytes != 512000/256*144 {
		t.Errorf("token_embd: %d elements, %d bytes", got.Elements, got.Bytes)
	}
	if f.DataOffset%32 != 0 || f.DataOffset <= 0 {
		t.Errorf("DataOffset = %d", f.DataOffset)
	}
}

func TestReadSkipsLongArrays(t *testing.T) {
	long := make([]string, MaxKeptArray+1)
	for i := range long {
		long[i] = "tok"
	}
	data := tinyLlama(t, kv{"tokenizer.ggml.merges", long}, kv{"per_layer", make([]uint32, MaxKeptArray+5)})
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"tokenizer.ggml.merges", "per_layer"} {
		a := f.Metadata[key].(Array)
		if a.Values != nil || a.Len <= MaxKeptArray {
			t.Errorf("%s: kept %d values of %d", key, len(a.Values), a.Len)
		}
	}
	if len(f.Tensors) != 8 {
		t.Errorf("tensors after a skipped array: %d", len(f.Tensors))
	}
}

func TestReadErrors(t *testing.T) {
	good := tinyLlama(t)
	patch := func(off int, v any) []byte {
		b := bytes.Clone(good)
		var buf bytes.Buffer
		binary.Write(&buf, binary.LittleEndian, v)
		copy(b[off:], buf.Bytes())
		return b
	}
	header := func(version uint32, nT, nKV uint64) []byte {
		var b bytes.Buffer
		for _, v := range []any{uint32(magic), version, nT, nKV} {
			binary.Write(&b, binary.LittleEndian, v)
		}
		b.Write(make([]byte, 64))
		return b.Bytes()
	}
	bad := func(name string, dims []uint64, typ uint32) []byte {
		var b bytes.Buffer
		le := binary.LittleEndian
		for _, v := range []any{uint32(magic), uint32(3), uint64(1), uint64(0), uint64(len(name))} {
			binary.Write(&b, le, v)
		}
		b.WriteString(name)
		binary.Write(&b, le, uint32(len(dims)))
		binary.Write(&b, le, dims)
		binary.Write(&b, le, typ)
		binary.Write(&b, le, uint64(0))
		b.Write(make([]byte, 64))
		return b.Bytes()
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "unexpected end of file"},
		{"not gguf", []byte("PK\x03\x04 this is a zip file......"), "not a GGUF file"},
		{"version 1", header(1, 0, 0), "version 1 is not supported"},
		{"big endian", header(3<<24, 0, 0), "big-endian"},
		{"future version", header(4, 0, 0), "newer than this reader"},
		{"huge tensor count", header(3, 1<<60, 0), "tensor count 1152921504606846976 cannot fit"},
		{"huge kv count", header(3, 0, 1<<60), "metadata count"},
		{"truncated", good[:250], "unexpected end of file"},
		{"truncated data", good[:len(good)-64], "past the end of the file"},
		{"huge string", patch(24, uint64(1<<40)), "exceeds the 16777216-byte limit"},
		{"unknown tensor type", bad("w", []uint64{32}, 99), "unknown ggml type 99"},
		{"removed tensor type", bad("w", []uint64{32}, 4), "unknown ggml type 4"},
		{"too many dims", bad("w", []uint64{1, 1, 1, 1, 1}, 0), "5 dimensions"},
		{"overflowing dims", bad("w", []uint64{1 << 40, 1 << 40}, 0), "overflow int64 elements"},
		{"partial block", bad("w", []uint64{100}, 12), "not a multiple of the Q4_K block size 256"},
		{"data past the end", bad("w", []uint64{1024}, 0), "past the end of the file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.data), int64(len(tc.data)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("error does not wrap ErrFormat")
			}
		})
	}
}

func TestEstimate(t *testing.T) {
	data := tinyLlama(t)
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	// Weights: Q4_K 512·1000 + 2·(512·512 + 512·128) values at 144/256
	// bytes; Q6_K 512·1000 at 210/256; F32 2·512 at 4.
	q4 := int64(512*1000+2*(512*512+512*128)) / 256 * 144
	q6 := int64(512*1000) / 256 * 210
	f32 := int64(2 * 512 * 4)
	// KV per cell per layer: head 512/8 = 64, 2 KV heads → 128 values each of K and V.
	tests := []struct {
		name   string
		opts   Options
		wantKV units.Bytes
	}{
		{"trained context, f16", Options{}, 2 * 2 * 128 * 2 * 4096},
		{"8k cells", Options{ContextSize: 8192}, 2 * 2 * 128 * 2 * 8192},
		{"q8_0 K and V", Options{ContextSize: 1024, CacheTypeK: "q8_0", CacheTypeV: "Q8_0"}, 2 * 2 * (128 / 32 * 34) * 1024},
		{"f32 K, q4_0 V", Options{ContextSize: 1024, CacheTypeK: "f32", CacheTypeV: "q4_0"}, 2 * (128*4 + 128/32*18) * 1024},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Estimate(f, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if m.WeightsBytes != units.Bytes(q4+q6+f32) || m.Params != 512*1000*2+2*(512*512+512*128+512) {
				t.Errorf("weights = %d bytes %d params, want %d", m.WeightsBytes, m.Params, q4+q6+f32)
			}
			if m.KVCacheBytes != tc.wantKV || m.KCacheBytes+m.VCacheBytes != m.KVCacheBytes {
				t.Errorf("KV = %d (K %d, V %d), want %d", m.KVCacheBytes, m.KCacheBytes, m.VCacheBytes, tc.wantKV)
			}
			if m.TotalBytes != m.WeightsBytes+m.KVCacheBytes+m.ComputeBytes+m.Host.OutputBytes || m.KVLayers != 2 ||
				m.TotalBytes != m.GPU.TotalBytes+m.Host.TotalBytes {
				t.Errorf("total %d (GPU %d, host %d), kv layers %d", m.TotalBytes, m.GPU.TotalBytes, m.Host.TotalBytes, m.KVLayers)
			}
			if m.WeightsByType[0].Type != "Q4_K" || len(m.WeightsByType) != 3 {
				t.Errorf("by type = %+v", m.WeightsByType)
			}
		})
	}
}

func TestEstimateInvariants(t *testing.T) {
	data := tinyLlama(t)
	f, _ := Read(bytes.NewReader(data), int64(len(data)))
	kv := func(o Options) units.Bytes {
		m, err := Estimate(f, o)
		if err != nil {
			t.Fatal(err)
		}
		return m.KVCacheBytes
	}
	if kv(Options{ContextSize: 2048}) >= kv(Options{ContextSize: 4096}) {
		t.Error("more context did not grow the KV cache")
	}
	if kv(Options{ContextSize: 2048, CacheTypeK: "q8_0", CacheTypeV: "q8_0"}) >= kv(Options{ContextSize: 2048}) {
		t.Error("q8_0 KV is not smaller than f16")
	}
}

func TestEstimateLayouts(t *testing.T) {
	base := []kv{
		{"general.architecture", "hyb"},
		{"hyb.block_count", uint32(4)},
		{"hyb.context_length", uint32(100)},
		{"hyb.embedding_length", uint32(256)},
		{"hyb.attention.head_count", uint32(4)},
	}
	w := []tensor{{"token_embd.weight", []uint64{256, 64}, 0}}
	// context_length 100 runs as 256 cells: llama.cpp pads n_ctx to a
	// multiple of 256.
	tests := []struct {
		name   string
		extra  []kv
		wantKV units.Bytes
		layers int
		note   string
	}{
		// Per-layer KV heads, 0 for recurrent layers: 2 attention layers × (64·2 K + 64·2 V) × 2 bytes × 100.
		{"hybrid per-layer heads", []kv{{"hyb.attention.head_count_kv", []uint32{0, 2, 0, 2}}}, 2 * 2 * 128 * 2 * 256, 2, "2 layers keep no KV cache"},
		// Explicit key/value lengths (Gemma-style head_dim != embd/heads).
		{"key and value length", []kv{{"hyb.attention.head_count_kv", uint32(1)}, {"hyb.attention.key_length", uint32(128)}, {"hyb.attention.value_length", uint32(96)}}, 4 * (128 + 96) * 2 * 256, 4, ""},
		// MLA (converted with key_length_mla): one head of 512 + 64, no V.
		{"MLA", []kv{{"hyb.attention.kv_lora_rank", uint32(512)}, {"hyb.attention.key_length_mla", uint32(192)},
			{"hyb.attention.head_count_kv", uint32(1)}, {"hyb.attention.key_length", uint32(576)}, {"hyb.attention.value_length", uint32(512)}}, 4 * 576 * 2 * 256, 4, "latent"},
		// An older DeepSeek file without key_length_mla caches full K (192) and V (128) per head.
		{"DeepSeek without MLA", []kv{{"hyb.attention.kv_lora_rank", uint32(512)}, {"hyb.attention.head_count_kv", uint32(4)},
			{"hyb.attention.key_length", uint32(192)}, {"hyb.attention.value_length", uint32(128)}}, 4 * 4 * (192 + 128) * 2 * 256, 4, ""},
		{"sliding window", []kv{{"hyb.attention.sliding_window", uint32(32)}}, 4 * 2 * 256 * 2 * 256, 4, "upper bound"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := writeGGUF(t, append(append([]kv{}, base...), tc.extra...), w)
			f, err := Read(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Estimate(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if m.KVCacheBytes != tc.wantKV || m.KVLayers != tc.layers {
				t.Errorf("KV = %d over %d layers, want %d over %d", m.KVCacheBytes, m.KVLayers, tc.wantKV, tc.layers)
			}
			if tc.note != "" && !strings.Contains(strings.Join(m.Notes, "\n"), tc.note) {
				t.Errorf("notes %v lack %q", m.Notes, tc.note)
			}
		})
	}
}

func TestEstimateErrors(t *testing.T) {
	w := []tensor{{"w", []uint64{32}, 0}}
	tests := []struct {
		name string
		kvs  []kv
		opts Options
		want string
	}{
		{"no architecture", nil, Options{}, "general.architecture is missing"},
		{"no block count", []kv{{"general.architecture", "x"}}, Options{}, "x.block_count"},
		{"no context", []kv{{"general.architecture", "x"}, {"x.block_count", uint32(1)}}, Options{}, "pass a context size"},
		{"negative context", []kv{{"general.architecture", "x"}, {"x.block_count", uint32(1)}}, Options{ContextSize: -1}, "want 1 to"},
		{"bad cache type", []kv{{"general.architecture", "x"}, {"x.block_count", uint32(1)}, {"x.context_length", uint32(8)}}, Options{CacheTypeK: "q3"}, `cache-type-k: "q3" is not a KV-cache type llama.cpp accepts (want f32, f16, bf16, q8_0, q4_0`},
		{"per-layer array of the wrong length", []kv{{"general.architecture", "x"}, {"x.block_count", uint32(2)}, {"x.context_length", uint32(8)},
			{"x.embedding_length", uint32(64)}, {"x.attention.head_count", uint32(1)}, {"x.attention.head_count_kv", []uint32{1, 1, 1}}}, Options{}, "want one per layer (2)"},
		{"cache type not dividing the row", []kv{{"general.architecture", "x"}, {"x.block_count", uint32(1)}, {"x.context_length", uint32(8)},
			{"x.embedding_length", uint32(48)}, {"x.attention.head_count", uint32(1)}}, Options{CacheTypeK: "q8_0"}, "not a whole number of 32-element blocks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := writeGGUF(t, tc.kvs, w)
			f, err := Read(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Estimate(f, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestTypes(t *testing.T) {
	if bits := Type(12).BitsPerElement(); bits != 4.5 {
		t.Errorf("Q4_K bits = %v, want 4.5", bits)
	}
	if Type(4).Known() || Type(4).String() != "type(4)" {
		t.Error("removed type 4 accepted")
	}
	if typ, err := ParseType("bf16"); err != nil || typ != 30 {
		t.Errorf("ParseType(bf16) = %v, %v", typ, err)
	}
	if _, err := rowBytes(28, math.MaxInt64/4); err == nil {
		t.Error("rowBytes accepted an overflowing row")
	}
}

func FuzzRead(f *testing.F) {
	f.Add(tinyLlama(f))
	f.Add(writeGGUF(f, []kv{{"general.architecture", "hyb"}, {"hyb.attention.head_count_kv", []uint32{0, 2}}}, nil))
	f.Add([]byte("GGUF"))
	f.Add(tinyLlama(f, kv{"llama.block_count", uint32(100000)}))
	f.Add(writeGGUF(f, nil, []tensor{{"w", []uint64{32}, 0}, {"w", []uint64{32}, 0}}))
	f.Add(nestedArrays(3, 5))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		var next int64
		for _, tn := range file.Tensors {
			if tn.Elements < 0 || tn.Bytes < 0 || file.DataOffset+int64(tn.Offset)+tn.Bytes > file.Size {
				t.Fatalf("accepted an inconsistent tensor %+v", tn)
			}
			if seen[tn.Name] || int64(tn.Offset) != next {
				t.Fatalf("accepted a repeated or overlapping tensor %+v (next offset %d)", tn, next)
			}
			seen[tn.Name], next = true, alignUp(int64(tn.Offset)+tn.Bytes, file.Alignment)
		}
		if m, err := Estimate(file, Options{ContextSize: 4096}); err == nil {
			if m.KVCacheBytes < 0 || m.WeightsBytes < 0 || m.ComputeBytes < 0 || m.GPU.ComputeBytes < 0 || m.Host.ComputeBytes < 0 ||
				m.TotalBytes < m.WeightsBytes || m.TotalBytes < m.ComputeBytes || m.ContextSize%256 != 0 {
				t.Fatalf("inconsistent estimate %+v", m)
			}
		}
	})
}

func TestSplit(t *testing.T) {
	names := SplitNames("Qwen3-235B-Q4_K_M-00002-of-00003.gguf")
	want := []string{"Qwen3-235B-Q4_K_M-00001-of-00003.gguf", "Qwen3-235B-Q4_K_M-00002-of-00003.gguf", "Qwen3-235B-Q4_K_M-00003-of-00003.gguf"}
	if !cmp.Equal(names, want) {
		t.Errorf("SplitNames = %v", names)
	}
	for _, bad := range []string{"model.gguf", "m-00004-of-00003.gguf", "m-00000-of-00003.gguf", "m-1-of-2.gguf"} {
		if SplitNames(bad) != nil {
			t.Errorf("SplitNames(%q) accepted", bad)
		}
	}
	shard := func(no uint16, extra []kv, ts []tensor) *File {
		kvs := append([]kv{{"split.no", uint32(no)}, {"split.count", uint32(2)}}, extra...)
		data := writeGGUF(t, kvs, ts)
		f, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	first := shard(0, []kv{{"general.architecture", "llama"}}, []tensor{{"a", []uint64{32}, 0}})
	second := shard(1, nil, []tensor{{"b", []uint64{64}, 1}})
	m, err := Merge([]*File{first, second})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tensors) != 2 || m.Architecture() != "llama" || m.Size != first.Size+second.Size {
		t.Errorf("merged: %d tensors, arch %q, size %d", len(m.Tensors), m.Architecture(), m.Size)
	}
	if _, err := Merge([]*File{second, first}); err == nil || !strings.Contains(err.Error(), "split.no") {
		t.Errorf("out-of-order shards: %v", err)
	}
	if _, err := Merge([]*File{first}); err != nil {
		t.Errorf("single shard: %v", err)
	}
	if _, err := Merge([]*File{first, second, second}); err == nil || !strings.Contains(err.Error(), "split.count") {
		t.Errorf("wrong count: %v", err)
	}
}

func TestEstimateSlidingWindow(t *testing.T) {
	// 12 layers, 1 KV head of 64 values for K and V: 256 bytes per cell
	// per layer in f16.
	const perCell = 2 * 64 * 2
	base := func(arch string, extra ...kv) []kv {
		return append([]kv{
			{"general.architecture", arch},
			{arch + ".block_count", uint32(12)},
			{arch + ".context_length", uint32(32768)},
			{arch + ".embedding_length", uint32(256)},
			{arch + ".attention.head_count", uint32(4)},
			{arch + ".attention.head_count_kv", uint32(1)},
		}, extra...)
	}
	tests := []struct {
		name      string
		kvs       []kv
		opts      Options
		swaLayers int
		swaCells  int
	}{
		// Gemma 3: layers 5 and 11 are global; window 1024 + ubatch 512 = 1536 cells.
		{"gemma3", base("gemma3", kv{"gemma3.attention.sliding_window", uint32(1024)}), Options{}, 10, 1536},
		{"gemma3 swa-full", base("gemma3", kv{"gemma3.attention.sliding_window", uint32(1024)}), Options{SWAFull: true}, 10, 32768},
		// 1000 tokens run as 1024 cells (padded to 256), the SWA layers' cap.
		{"gemma3 small context", base("gemma3", kv{"gemma3.attention.sliding_window", uint32(1024)}), Options{ContextSize: 1000}, 10, 1024},
		{"gemma3 ubatch 2048", base("gemma3", kv{"gemma3.attention.sliding_window", uint32(1024)}), Options{UBatch: 2048}, 10, 3072},
		// Gemma 2 without the key uses its default window 4096: pad(4608, 256) = 4608.
		{"gemma2 default window", base("gemma2"), Options{}, 6, 4608},
		// Llama 4 chunks are 8192 tokens whatever the key says.
		{"llama4 chunked", base("llama4", kv{"llama4.attention.sliding_window", uint32(10)}), Options{}, 9, 8704},
		// An explicit pattern overrides the table: period 4 → 9 windowed layers.
		{"gpt-oss pattern key", base("gpt-oss", kv{"gpt-oss.attention.sliding_window", uint32(128)}, kv{"gpt-oss.attention.sliding_window_pattern", uint32(4)}), Options{}, 9, 768},
		{"gemma3 without a window", base("gemma3"), Options{}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := writeGGUF(t, tc.kvs, []tensor{{"token_embd.weight", []uint64{256, 64}, 0}})
			f, err := Read(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Estimate(f, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if m.SWALayers != tc.swaLayers || m.SWACells != tc.swaCells {
				t.Errorf("SWA layers %d cells %d, want %d, %d", m.SWALayers, m.SWACells, tc.swaLayers, tc.swaCells)
			}
			want := units.Bytes(perCell * (int64(12-tc.swaLayers)*int64(m.ContextSize) + int64(tc.swaLayers*tc.swaCells)))
			if m.KVCacheBytes != want {
				t.Errorf("KV = %d, want %d", m.KVCacheBytes, want)
			}
			full, _ := Estimate(f, Options{ContextSize: tc.opts.ContextSize, SWAFull: true})
			if m.KVCacheBytes > full.KVCacheBytes {
				t.Errorf("windowed KV %d exceeds the full-size KV %d", m.KVCacheBytes, full.KVCacheBytes)
			}
		})
	}
}
