package gguf

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/units"
)

// llamaLike builds the header of a llama-architecture file in memory (no
// tensor data, so full-size models cost nothing): n layers of a dense
// GQA decoder with Q4_K matrices, F32 norms, a Q6_K output matrix
// unless tied, and the given extra metadata.
func llamaLike(t testing.TB, embd, layers, heads, kvHeads, ffn, vocab int, tied bool, extra map[string]any) *File {
	t.Helper()
	md := map[string]any{
		"general.architecture":          "llama",
		"llama.block_count":             uint64(layers),
		"llama.context_length":          uint64(32768),
		"llama.embedding_length":        uint64(embd),
		"llama.feed_forward_length":     uint64(ffn),
		"llama.attention.head_count":    uint64(heads),
		"llama.attention.head_count_kv": uint64(kvHeads),
	}
	for k, v := range extra {
		md[k] = v
	}
	head := embd / heads
	var ts []TensorInfo
	add := func(name string, typ Type, dims ...uint64) {
		ti := TensorInfo{Name: name, Dims: dims, Type: typ}
		if err := ti.size(); err != nil {
			t.Fatal(err)
		}
		ts = append(ts, ti)
	}
	e := uint64(embd)
	add("token_embd.weight", 12, e, uint64(vocab))
	for il := range layers {
		p := fmt.Sprintf("blk.%d.", il)
		add(p+"attn_norm.weight", 0, e)
		add(p+"attn_q.weight", 12, e, e)
		add(p+"attn_k.weight", 12, e, uint64(kvHeads*head))
		add(p+"attn_v.weight", 12, e, uint64(kvHeads*head))
		add(p+"attn_output.weight", 12, e, e)
		add(p+"ffn_norm.weight", 0, e)
		add(p+"ffn_gate.weight", 12, e, uint64(ffn))
		add(p+"ffn_up.weight", 12, e, uint64(ffn))
		add(p+"ffn_down.weight", 12, uint64(ffn), e)
	}
	add("output_norm.weight", 0, e)
	if !tied {
		add("output.weight", 14, e, uint64(vocab))
	}
	return &File{Version: 3, Metadata: md, Tensors: ts, Alignment: 32}
}

// mistral7B is Mistral-7B-Instruct-v0.2 as its GGUF header describes it:
// 32 layers, n_embd 4096, 32 heads of 128 with 8 KV heads, n_ff 14336,
// 32000 tokens.
func mistral7B(t testing.TB) *File { return llamaLike(t, 4096, 32, 32, 8, 14336, 32000, false, nil) }

func TestContextPadding(t *testing.T) {
	f := mistral7B(t)
	const perCell = 32 * 2 * 1024 * 2 // layers × (K + V) × 1024 values × f16
	tests := []struct {
		name                  string
		opts                  Options
		nCtx, perSeq, streams int
	}{
		{"padded to 256", Options{ContextSize: 5000}, 5120, 5120, 1},
		{"a multiple already", Options{ContextSize: 4096}, 4096, 4096, 1},
		{"one token", Options{ContextSize: 1}, 256, 256, 1},
		// n_ctx_seq = pad(5120 / 4, 256) = 1280.
		{"4 sequences", Options{ContextSize: 5000, Parallel: 4}, 5120, 1280, 4},
		// pad(4096 / 3, 256) = 1536, so n_ctx becomes 3 × 1536 = 4608.
		{"3 sequences", Options{ContextSize: 4000, Parallel: 3}, 4608, 1536, 3},
		{"unified", Options{ContextSize: 5000, Parallel: 4, KVUnified: true}, 5120, 5120, 1},
		{"trained context", Options{}, 32768, 32768, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.FlashAttention = FlashOn
			m, err := Estimate(f, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if m.ContextSize != tc.nCtx || m.ContextPerSeq != tc.perSeq || m.KVStreams != tc.streams {
				t.Errorf("n_ctx %d per seq %d streams %d, want %d %d %d", m.ContextSize, m.ContextPerSeq, m.KVStreams, tc.nCtx, tc.perSeq, tc.streams)
			}
			if want := units.Bytes(perCell * tc.nCtx); m.KVCacheBytes != want {
				t.Errorf("KV = %d, want %d", m.KVCacheBytes, want)
			}
		})
	}
	// The case: at -c 5000 the cache is 5120/5000 = 2.4 % larger
	// than 5000 cells would be.
	m, _ := Estimate(f, Options{ContextSize: 5000, FlashAttention: FlashOn})
	if !strings.Contains(strings.Join(m.Notes, "\n"), "pads the context of 5000 tokens to 5120 cells") {
		t.Errorf("notes %q do not say the context was padded", m.Notes)
	}
}

// TestComputeBuffersMistral checks the replay of llama.cpp's graph
// allocation against the buffers llama.cpp logged for Mistral 7B v0.2
// (Q4 weights, all layers on one CUDA GPU, flash attention off, n_ubatch
// 512; fedora-copr/logdetective PR #106, January 2025):
//
//	-c 2048:  CUDA0 compute buffer size =  164.00 MiB, CUDA_Host 12.01 MiB, KV 256 MiB
//	-c 32768: CUDA0 compute buffer size = 2144.00 MiB, CUDA_Host 72.01 MiB, KV 4096 MiB
//
// The arithmetic: the GPU buffer is the attention scores [n_kv, 512, 32]
// in f32 (128 MiB; 2048 MiB) placed above the split's inputs (the hidden
// state copied from the CPU, 8 MiB, and the f32 mask [n_kv, 512], 4 MiB;
// 64 MiB), the residual stream and Q (8 MiB each) and the hole the layer's
// normed input left (8 MiB). The current graph also copies the output ids
// and the K and V row indices of the cache stores to the GPU (10 KiB more
// than the build that logged these; positions were copied then too).
// The host buffer is the embeddings looked up on the CPU (8 MiB), the
// mask and the small inputs.
func TestComputeBuffersMistral(t *testing.T) {
	f := mistral7B(t)
	const KiB, MiB = 1 << 10, 1 << 20
	for _, tc := range []struct {
		ctx                   int
		gpu, host, kv, output units.Bytes
	}{
		{2048, 164*MiB + 12*KiB, 12*MiB + 14*KiB, 256 * MiB, 32000 * 4},
		{32768, 2144*MiB + 12*KiB, 72*MiB + 14*KiB, 4096 * MiB, 32000 * 4},
	} {
		m, err := Estimate(f, Options{ContextSize: tc.ctx, FlashAttention: FlashOff})
		if err != nil {
			t.Fatal(err)
		}
		if m.GPU.ComputeBytes != tc.gpu || m.Host.ComputeBytes != tc.host {
			t.Errorf("-c %d: compute GPU %.4f MiB host %.4f MiB, want %.4f and %.4f", tc.ctx,
				float64(m.GPU.ComputeBytes)/MiB, float64(m.Host.ComputeBytes)/MiB, float64(tc.gpu)/MiB, float64(tc.host)/MiB)
		}
		if m.GPU.KVCacheBytes != tc.kv || m.Host.KVCacheBytes != 0 || m.Host.OutputBytes != tc.output {
			t.Errorf("-c %d: KV GPU %d host %d, output %d", tc.ctx, m.GPU.KVCacheBytes, m.Host.KVCacheBytes, m.Host.OutputBytes)
		}
		// Only the token embeddings stay on the host.
		if m.Host.WeightsBytes != units.Bytes(f.Tensors[0].Bytes) || m.GPU.WeightsBytes+m.Host.WeightsBytes != m.WeightsBytes {
			t.Errorf("-c %d: weights GPU %d host %d of %d", tc.ctx, m.GPU.WeightsBytes, m.Host.WeightsBytes, m.WeightsBytes)
		}
	}
}

// TestComputeBuffersLogits checks the output stage: with flash attention
// the scores are never materialised, so for a large vocabulary the f32
// logits of the 512 tokens (128256 × 512 × 4 = 250.5 MiB) decide the GPU
// buffer, placed above the split's inputs (hidden state 8 MiB, f32 mask
// 16 MiB and its f16 cast 8 MiB at 8192 cells, 12 KiB of positions and
// indices) and the output norm (8 MiB).
func TestComputeBuffersLogits(t *testing.T) {
	f := llamaLike(t, 4096, 32, 32, 8, 14336, 128256, false, nil)
	const MiB = 1 << 20
	m, err := Estimate(f, Options{ContextSize: 8192, FlashAttention: FlashOn})
	if err != nil {
		t.Fatal(err)
	}
	logits := units.Bytes(128256 * 512 * 4)
	if want := logits + 40*MiB + 12<<10; m.GPU.ComputeBytes != want {
		t.Errorf("GPU compute %.4f MiB, want %.4f: the logits above 40 MiB of inputs and output norm", float64(m.GPU.ComputeBytes)/MiB, float64(want)/MiB)
	}
	off, err := Estimate(f, Options{ContextSize: 8192, FlashAttention: FlashOff})
	if err != nil {
		t.Fatal(err)
	}
	// Without flash attention the scores [8192, 512, 32] f32 = 512 MiB decide it.
	if off.GPU.ComputeBytes < 512*MiB || off.GPU.ComputeBytes <= m.GPU.ComputeBytes {
		t.Errorf("compute without flash attention %.2f MiB, with %.2f MiB", float64(off.GPU.ComputeBytes)/MiB, float64(m.GPU.ComputeBytes)/MiB)
	}
}

func TestComputeInvariants(t *testing.T) {
	f := llamaLike(t, 2048, 16, 16, 4, 8192, 64000, false, nil)
	est := func(o Options) *Memory {
		t.Helper()
		m, err := Estimate(f, o)
		if err != nil {
			t.Fatal(err)
		}
		if m.GPU.TotalBytes+m.Host.TotalBytes != m.TotalBytes || m.GPU.WeightsBytes+m.Host.WeightsBytes != m.WeightsBytes ||
			m.GPU.KVCacheBytes+m.Host.KVCacheBytes != m.KVCacheBytes || m.ComputeBytes != m.GPU.ComputeBytes+m.Host.ComputeBytes {
			t.Fatalf("parts do not add up: %+v", m)
		}
		return m
	}
	for _, fa := range []string{FlashOn, FlashOff} {
		short, long := est(Options{ContextSize: 4096, FlashAttention: fa}), est(Options{ContextSize: 16384, FlashAttention: fa})
		if long.ComputeBytes < short.ComputeBytes || long.KVCacheBytes <= short.KVCacheBytes {
			t.Errorf("-fa %s: a longer context shrank compute (%d → %d) or KV", fa, short.ComputeBytes, long.ComputeBytes)
		}
		small, big := est(Options{ContextSize: 4096, UBatch: 256, FlashAttention: fa}), est(Options{ContextSize: 4096, UBatch: 2048, FlashAttention: fa})
		if big.GPU.ComputeBytes <= small.GPU.ComputeBytes {
			t.Errorf("-fa %s: a larger ubatch did not grow the compute buffer (%d → %d)", fa, small.GPU.ComputeBytes, big.GPU.ComputeBytes)
		}
	}
	if on, off := est(Options{ContextSize: 16384, FlashAttention: FlashOn}), est(Options{ContextSize: 16384, FlashAttention: FlashOff}); on.ComputeBytes >= off.ComputeBytes {
		t.Errorf("flash attention did not lower the compute buffer: %d ≥ %d", on.ComputeBytes, off.ComputeBytes)
	}
}

func TestPartialOffload(t *testing.T) {
	f := llamaLike(t, 2048, 16, 16, 4, 8192, 64000, false, nil)
	ngl := func(n int) *int { return &n }
	full, err := Estimate(f, Options{ContextSize: 4096, FlashAttention: FlashOn})
	if err != nil {
		t.Fatal(err)
	}
	var perLayer units.Bytes
	for _, ti := range f.Tensors {
		if strings.HasPrefix(ti.Name, "blk.0.") {
			perLayer += units.Bytes(ti.Bytes)
		}
	}
	var output units.Bytes
	for _, ti := range f.Tensors {
		if ti.Name == "output.weight" || ti.Name == "output_norm.weight" {
			output += units.Bytes(ti.Bytes)
		}
	}
	tests := []struct {
		name      string
		ngl       *int
		gpuLayers int
		outGPU    bool
		gpuW      units.Bytes
	}{
		{"all by default", nil, 16, true, 16*perLayer + output},
		{"-1 is all", ngl(-1), 16, true, 16*perLayer + output},
		{"16 layers, output on the CPU", ngl(16), 16, false, 16 * perLayer},
		{"17 = all and the output", ngl(17), 16, true, 16*perLayer + output},
		{"999 capped", ngl(999), 16, true, 16*perLayer + output},
		{"the last 10", ngl(10), 10, false, 10 * perLayer},
		{"none", ngl(0), 0, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Estimate(f, Options{ContextSize: 4096, FlashAttention: FlashOn, GPULayers: tc.ngl})
			if err != nil {
				t.Fatal(err)
			}
			if m.GPULayers != tc.gpuLayers || m.OutputOnGPU != tc.outGPU || m.GPU.WeightsBytes != tc.gpuW {
				t.Errorf("layers %d output %v GPU weights %d, want %d %v %d", m.GPULayers, m.OutputOnGPU, m.GPU.WeightsBytes, tc.gpuLayers, tc.outGPU, tc.gpuW)
			}
			if want := full.KVCacheBytes / 16 * units.Bytes(tc.gpuLayers); m.GPU.KVCacheBytes != want || m.KVCacheBytes != full.KVCacheBytes {
				t.Errorf("KV on the GPU %d, want %d", m.GPU.KVCacheBytes, want)
			}
			if tc.gpuLayers == 0 && (m.GPU.TotalBytes != 0 || m.Host.ComputeBytes <= full.Host.ComputeBytes) {
				t.Errorf("-ngl 0: GPU %d, host compute %d (full offload %d)", m.GPU.TotalBytes, m.Host.ComputeBytes, full.Host.ComputeBytes)
			}
			if tc.gpuLayers > 0 && m.GPU.ComputeBytes == 0 {
				t.Error("offloaded layers without a GPU compute buffer")
			}
		})
	}
	capped, _ := Estimate(f, Options{ContextSize: 4096, GPULayers: ngl(999)})
	if !strings.Contains(strings.Join(capped.Notes, "\n"), "-ngl 999 is more than the 16 layers") {
		t.Errorf("notes %q do not say -ngl was capped", capped.Notes)
	}
	nkvo, _ := Estimate(f, Options{ContextSize: 4096, NoKVOffload: true})
	if nkvo.GPU.KVCacheBytes != 0 || nkvo.Host.KVCacheBytes != full.KVCacheBytes {
		t.Errorf("--no-kv-offload: KV GPU %d host %d", nkvo.GPU.KVCacheBytes, nkvo.Host.KVCacheBytes)
	}
}

func TestTiedOutputDuplicated(t *testing.T) {
	f := llamaLike(t, 2048, 4, 16, 4, 8192, 64000, true, nil)
	embd := units.Bytes(f.Tensors[0].Bytes)
	m, err := Estimate(f, Options{ContextSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if m.Host.WeightsBytes != embd || m.GPU.WeightsBytes != m.WeightsBytes {
		t.Errorf("tied output: host %d GPU %d of %d; want the embeddings on the host and again on the GPU", m.Host.WeightsBytes, m.GPU.WeightsBytes, m.WeightsBytes)
	}
}

func TestEstimateRunErrors(t *testing.T) {
	f := llamaLike(t, 2048, 4, 16, 4, 8192, 64000, false, nil)
	ngl := -2
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"quantized V without flash attention", Options{CacheTypeV: "q8_0", FlashAttention: "off"}, `cache-type-v Q8_0 with flash-attn off: llama.cpp refuses to start`},
		{"a type the cache lacks", Options{CacheTypeK: "q4_k"}, `cache-type-k: "q4_k" is not a KV-cache type llama.cpp accepts (want f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1)`},
		{"bad flash setting", Options{FlashAttention: "maybe"}, `flash-attn "maybe": want on, off or auto`},
		{"negative -ngl", Options{GPULayers: &ngl}, "n-gpu-layers -2: want 0 to 5 (the 4 layers and the output layer), or -1 or all"},
		{"too many sequences", Options{Parallel: 257}, "parallel 257: want 1 to 256"},
		{"negative ubatch", Options{UBatch: -1}, "ubatch-size -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Estimate(f, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// A quantized K without flash attention is fine, as in llama.cpp.
	if _, err := Estimate(f, Options{CacheTypeK: "q8_0", FlashAttention: "off"}); err != nil {
		t.Errorf("q8_0 K without flash attention: %v", err)
	}
	m, err := Estimate(f, Options{CacheTypeV: "q8_0"})
	if err != nil || !m.FlashAttention || !m.FlashAssumed {
		t.Errorf("q8_0 V with -fa auto: %v, flash %v assumed %v", err, m.FlashAttention, m.FlashAssumed)
	}
}

func TestParseGPULayers(t *testing.T) {
	for in, want := range map[string]int{"all": -1, "auto": -1, "": -1, "-1": -1, "0": 0, "33": 33} {
		got, err := ParseGPULayers(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if (got == nil) != (want == -1) || got != nil && *got != want {
			t.Errorf("ParseGPULayers(%q) = %v, want %d", in, got, want)
		}
	}
	for _, bad := range []string{"-2", "x", "1.5"} {
		if _, err := ParseGPULayers(bad); err == nil {
			t.Errorf("ParseGPULayers(%q) accepted", bad)
		}
	}
}

func FuzzParseGPULayers(f *testing.F) {
	for _, s := range []string{"all", "33", "-1", "auto", " 7 ", "-5", "9999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseGPULayers(s)
		if err == nil && n != nil && *n < 0 {
			t.Fatalf("ParseGPULayers(%q) = %d", s, *n)
		}
	})
}

// TestComputeSaturates feeds sizes whose products overflow int64: the
// buffers saturate instead of wrapping negative.
func TestComputeSaturates(t *testing.T) {
	f := llamaLike(t, 256, 2, 4, 1, 512, 1000, false, map[string]any{
		"llama.attention.head_count":   uint64(1 << 20),
		"llama.attention.key_length":   uint64(1 << 20),
		"llama.attention.value_length": uint64(1 << 20),
	})
	m, err := Estimate(f, Options{ContextSize: 1 << 32, Batch: 1 << 32, UBatch: 1 << 32, FlashAttention: FlashOff})
	if err != nil {
		t.Fatal(err)
	}
	if m.GPU.ComputeBytes <= 0 || m.ComputeBytes < m.GPU.ComputeBytes || m.TotalBytes < m.ComputeBytes {
		t.Errorf("compute %d (GPU %d), total %d", m.ComputeBytes, m.GPU.ComputeBytes, m.TotalBytes)
	}
}
