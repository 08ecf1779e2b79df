// Package safetensors reads the headers of safetensors checkpoints to
// size a model's weights exactly without downloading them.
//
// A safetensors file starts with an 8-byte little-endian header length,
// then a JSON header naming every tensor with its dtype, shape and byte
// offsets, then the tensor data. [ReadHeader] reads only the first two
// parts from any [io.ReaderAt]: a local file, or a remote file whose
// reads are HTTP Range requests. [ReadCheckpoint] follows
// model.safetensors.index.json across the shards of a large checkpoint.
//
// # Sizing
//
// [Summarize] totals the tensors by dtype (the exact weight bytes of a
// pre-quantized or mixed-precision checkpoint) and by [Kind]. Kinds
// separate real parameters from what makes a checkpoint's element count
// differ from a config-based parameter count: a stored copy of a tied
// output head, buffers such as rotary inv_freq or GPT-2's causal-mask
// attn.bias, quantization scales and zero points, and packed quantized
// weights. [Summary.Compare] sets the result against a config count.
//
// # Safety
//
// Header lengths are bounded by [MaxHeaderSize] before any allocation,
// shapes are multiplied with overflow checks, the tensors' data must tile
// the data section exactly as the reference implementation requires (so
// no byte is counted twice), a tensor name may appear once, and shard
// names from an index must be plain file names.
//
// Usage:
//
//	ck, err := safetensors.ReadCheckpoint(ctx, safetensors.DirOpener(dir), safetensors.Options{})
//	if err != nil {
//		return err
//	}
//	s := safetensors.Summarize(ck.Tensors, tied)
//	fmt.Println(s.Params, s.ByDType)
package safetensors
