// Package gguf reads the header of a GGUF file (llama.cpp, ollama) and
// estimates the memory of running it: the exact size of its weights by
// tensor type and the KV cache its metadata implies.
//
// [Read] parses the metadata and tensor descriptions from any
// [io.ReaderAt] — a local file, or a remote one read with HTTP Range
// requests — without touching the tensor data. [Estimate] turns a parsed
// file and llama.cpp-style [Options] (context size, cache types,
// parallel sequences, flash attention, offloaded layers) into a [Memory]
// breakdown by device.
//
// # Why a small reader of our own
//
// We evaluated github.com/gpustack/gguf-parser-go (MIT, v0.28) first. It
// is well maintained and knows far more than this package (llama.cpp
// compute-graph estimates, ollama registries, tokenizers), but it would
// cost more than it gives here: its parsers open files by path or URL
// with their own HTTP client, so they cannot read through the hub
// package's io.ReaderAt with its token handling, cache and retries; it
// brings about 16,000 lines and a dependency tree of gonum,
// json-iterator, golang.org/x/exp, x/crypto, x/tools and testify into
// a one-binary tool; and several of its accessors panic on unexpected
// input (value-type mismatches, overflow in tensor sizes), where we
// want errors. The GGUF header is a small, documented format (magic,
// version, counts, typed key/values, tensor infos; ggml-org/ggml:
// docs/gguf.md), so this package reads it in a few hundred lines over an
// io.ReaderAt, bounds every length before allocating ([MaxStringLength],
// counts checked against the bytes left, at most four dimensions), bounds
// the memory the kept metadata takes ([MaxMetadataMemory]; nested arrays
// keep only their lengths), rejects what ggml's own loader rejects (a
// metadata key or tensor name given twice, tensors that do not follow
// one another in the data section) and is fuzzed. The ggml type block sizes come from ggml's type_traits.
//
// # What the estimate covers
//
// [Estimate] follows what llama.cpp allocates when it creates a context:
//
//   - Weights, summed per tensor from the type's block layout, so a
//     mixed-quantization file (Q4_K_M keeps some tensors in Q6_K) is sized
//     exactly, and split between the GPU and the host as -ngl places the
//     layers (the token embeddings always stay on the host; the output
//     layer moves to the GPU only with n_layer + 1 offloaded layers).
//   - The context as llama.cpp lays it out: n_ctx padded to a multiple of
//     256, and with -np parallel sequences either one unified stream or
//     one stream of n_ctx / n_seq_max cells (padded) per sequence.
//   - The KV cache, following llama.cpp's per-layer K and V tensors,
//     including per-layer KV head counts, layers without a cache (hybrid
//     recurrent models) and multi-head latent attention. Sliding-window
//     and chunked layers keep window + ubatch cells, as llama.cpp
//     allocates them, for the architectures whose layout llama.cpp fixes
//     (Gemma 2 and 3, Command R7B, gpt-oss, Llama 4) or whose file states
//     a pattern; for any other file with a sliding window every layer is
//     counted at the full context, an upper bound. A quantized V cache
//     with flash attention off is refused, as llama.cpp refuses it.
//   - The compute buffers: llama.cpp reserves them for a worst-case graph
//     of one ubatch, and this package replays ggml-alloc's placement of
//     that graph's tensors for a llama-style decoder (dense or MoE FFN,
//     with or without flash attention) on the GPU and host buffers.
//   - The host output buffer of the logits.
//
// The CUDA context and the backends' scratch pools are not included.
// [Memory.Notes] says what was assumed and what is approximate.
//
// Usage:
//
//	f, err := os.Open("model-Q4_K_M.gguf")
//	...
//	st, _ := f.Stat()
//	file, err := gguf.Read(f, st.Size())
//	...
//	mem, err := gguf.Estimate(file, gguf.Options{ContextSize: 8192, CacheTypeK: "q8_0"})
package gguf
