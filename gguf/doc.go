// Package gguf reads the header of a GGUF file (llama.cpp, ollama) and
// estimates the memory of running it: the exact size of its weights by
// tensor type and the KV cache its metadata implies.
//
// [Read] parses the metadata and tensor descriptions from any
// [io.ReaderAt] — a local file, or a remote one read with HTTP Range
// requests — without touching the tensor data. [Estimate] turns a parsed
// file and llama.cpp-style [Options] (context size, cache types) into a
// [Memory] breakdown.
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
// Weights are summed per tensor from the type's block layout, so a
// mixed-quantization file (Q4_K_M keeps some tensors in Q6_K) is sized
// exactly. The KV cache follows llama.cpp's per-layer K and V tensors,
// including per-layer KV head counts, layers without a cache (hybrid
// recurrent models) and multi-head latent attention. Sliding-window and
// chunked layers keep window + ubatch cells, as llama.cpp allocates them,
// for the architectures whose layout llama.cpp fixes (Gemma 2 and 3,
// Command R7B, gpt-oss, Llama 4) or whose file states a pattern; for any
// other file with a sliding window every layer is counted at the full
// context, an upper bound. Compute buffers and the CUDA context are not
// included. [Memory.Notes] says which of these apply.
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
