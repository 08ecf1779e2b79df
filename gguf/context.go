package gguf

import (
	"fmt"
	"strings"
)

// llama.cpp's defaults for the settings an estimate depends on
// (common/common.h common_params; llama_context_default_params in
// src/llama-context.cpp).
const (
	// defaultBatch is n_batch (-b, --batch-size): the logical batch.
	defaultBatch = 2048
	// defaultUBatch is n_ubatch (-ub, --ubatch-size): the physical batch
	// one graph evaluates, and the size of the worst-case graph that
	// sizes the compute buffers.
	defaultUBatch = 512
	// ctxPad is the multiple n_ctx and the per-sequence context are
	// padded to: llama_context's constructor rounds cparams.n_ctx up with
	// GGML_PAD(n_ctx, 256), and without a unified cache each sequence's
	// n_ctx_seq = GGML_PAD(n_ctx / n_seq_max, 256)
	// (ggml-org/llama.cpp PR #17046, "kv-cache : pad the cache size to
	// 256 for performance", src/llama-context.cpp).
	ctxPad = 256
	// maxSeq is LLAMA_MAX_SEQ (src/llama-cparams.h): the most parallel
	// sequences a context accepts.
	maxSeq = 256
)

// FlashAttention settings (-fa, --flash-attn).
const (
	FlashAuto = "auto"
	FlashOn   = "on"
	FlashOff  = "off"
)

// parseFlash reads -fa as llama.cpp's common/arg.cpp does: on, off or
// auto, with 1/0 and true/false (and enabled/disabled) as spellings.
func parseFlash(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto", "-1":
		return FlashAuto, nil
	case "on", "1", "true", "enabled":
		return FlashOn, nil
	case "off", "0", "false", "disabled":
		return FlashOff, nil
	}
	return "", fmt.Errorf("flash-attn %q: want on, off or auto", s)
}

// contextLayout is how llama.cpp lays out its KV cells for a context
// size and a number of parallel sequences.
type contextLayout struct {
	requested int // n_ctx as asked for (0 = the trained context)
	nCtx      int // n_ctx after padding: all cells of all streams
	perSeq    int // n_ctx_seq: the cells of one stream
	streams   int // KV streams: 1 with a unified cache, else n_seq_max
	seqMax    int
	unified   bool
	batch     int // n_batch
	ubatch    int // n_ubatch
	tokens    int // tokens of the worst-case graph: min(n_ctx, n_ubatch)
}

// layoutContext applies llama_context's rules: n_ctx defaults to the
// trained context and is padded to a multiple of 256; with a unified KV
// cache (--kv-unified) one stream of n_ctx cells serves every sequence,
// otherwise each of the n_seq_max sequences (-np) gets a stream of
// n_ctx_seq = pad(n_ctx / n_seq_max, 256) cells and n_ctx becomes
// n_ctx_seq · n_seq_max (llama.cpp logs "n_ctx is not divisible by
// n_seq_max - rounding down"). The batch is capped by the requested
// context for causal models, and n_ubatch by n_batch.
func layoutContext(arch string, trained uint64, hasTrained bool, opts Options) (contextLayout, error) {
	c := contextLayout{requested: opts.ContextSize, seqMax: opts.Parallel, unified: opts.KVUnified}
	if c.seqMax == 0 {
		c.seqMax = 1
	}
	switch {
	case opts.ContextSize < 0 || opts.ContextSize > maxContext:
		return c, fmt.Errorf("ctx-size %d: want 1 to %d tokens, or 0 for the model's context_length", opts.ContextSize, maxContext)
	case c.seqMax < 0 || c.seqMax > maxSeq:
		return c, fmt.Errorf("parallel %d: want 1 to %d sequences (LLAMA_MAX_SEQ)", opts.Parallel, maxSeq)
	case opts.Batch < 0 || opts.Batch > maxContext:
		return c, fmt.Errorf("batch-size %d: want 1 to %d tokens", opts.Batch, maxContext)
	case opts.UBatch < 0 || opts.UBatch > maxContext:
		return c, fmt.Errorf("ubatch-size %d: want 1 to %d tokens", opts.UBatch, maxContext)
	}
	n := int64(opts.ContextSize)
	if n == 0 {
		if !hasTrained || trained == 0 || trained > maxContext {
			return c, fmt.Errorf("%s.context_length: missing or out of range; pass a context size", arch)
		}
		n = int64(trained)
	}
	c.batch = orDefault(opts.Batch, defaultBatch)
	c.batch = int(min(int64(c.batch), n))
	c.ubatch = min(orDefault(opts.UBatch, defaultUBatch), c.batch)
	padded := alignUp(n, ctxPad)
	if c.unified || c.seqMax == 1 {
		c.streams, c.perSeq, c.nCtx = 1, int(padded), int(padded)
	} else {
		c.streams = c.seqMax
		c.perSeq = int(alignUp(padded/int64(c.seqMax), ctxPad))
		if c.perSeq == 0 {
			return c, fmt.Errorf("ctx-size %d over %d parallel sequences leaves no cells per sequence", n, c.seqMax)
		}
		c.nCtx = c.perSeq * c.seqMax
	}
	c.tokens = min(c.nCtx, c.ubatch)
	return c, nil
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
