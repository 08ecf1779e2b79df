package memory

import (
	"fmt"

	"github.com/gpumem/gpumem/units"
)

// vLLM serves a hybrid model (attention layers and linear-attention or
// SSM layers) from one pool of equal pages (vllm-project/vllm at
// 001cabc1be16a59a70d720ed61a13b678c060a18):
//
//   - A recurrent layer's page holds one sequence's state (MambaSpec,
//     vllm/v1/kv_cache_interface.py: page_size_bytes = Σ prod(shape) ·
//     dtype size), and a request needs one page per layer (1 +
//     num_speculative_blocks with mamba_cache_mode "none", the default
//     without prefix caching).
//   - The attention block size grows until an attention page holds a state
//     page: block_size = a · ⌈state page / (a · attention bytes per token)⌉,
//     a = max(the attention kernel's block alignment, 16, the configured
//     block size); the state page is then padded to the attention page
//     (Platform._align_hybrid_block_size in vllm/platforms/interface.py).
//   - Layers of each kind are split into groups of group_size layers,
//     group_size the smallest kind's count (or the largest when no kind has
//     1.5 times as many), each kind padded to whole groups; the pool is
//     group_size tensors of num_blocks pages, each tensor shared by one
//     layer of every group, so num_blocks = pool / (page · group_size)
//     (_get_kv_cache_groups_uniform_page_size and
//     get_kv_cache_config_from_groups in vllm/v1/core/kv_cache_utils.py).
//   - A request of n tokens takes, per group, ⌈n/block⌉ blocks for full
//     attention, the sliding window's blocks for sliding layers and one
//     block for recurrent layers; the engine holds num_blocks / (blocks per
//     request) requests at once, and logs num_blocks / groups · block_size
//     as its "GPU KV cache size" in tokens.

// vllmKernelBlockAlign is the smallest block-size multiple of the
// attention backends vLLM pairs with hybrid models (FlashAttention and
// FlashInfer advertise MultipleOf(16); the default block_size is 16 too).
const vllmKernelBlockAlign = 16

// hybridPool is vLLM's layout of one GPU's KV pool for a hybrid model.
type hybridPool struct {
	blockSize int   // attention tokens per block after alignment
	page      int64 // bytes of one page (one layer's block), shared by all groups
	groupSize int
	// groups per kind: full attention, sliding-window attention, recurrent.
	full, sliding, state int
	window               int
	maxBatched           int
	blocks               int64
}

// newHybridPool lays out pool bytes for the attention cache kv and the
// recurrent state s of one GPU's layers.
func newHybridPool(kv kvSpec, s stateSpec, pool units.Bytes, setup servingSetup) hybridPool {
	h := hybridPool{window: kv.window, maxBatched: setup.maxBatched}
	per := int64(0) // attention bytes per token of one layer
	nFull, nSliding := 0, 0
	if kv.layers > 0 {
		per = kv.maxLayer
		nFull = int(kv.full / max(per, 1))
		nSliding = int(kv.sliding / max(per, 1))
	}
	align := max(vllmKernelBlockAlign, setup.blockSize)
	h.blockSize = setup.blockSize
	switch {
	case per > 0:
		need := align * int(ceilDiv(s.page(), int64(align)*per))
		h.blockSize = max(h.blockSize, need)
		h.page = int64(h.blockSize) * per
	default:
		// No attention layer: every layer keeps a state page (vLLM's
		// uniform-spec grouping, one group of all layers).
		h.page = s.page()
	}
	counts := []int{nFull, nSliding, s.layers}
	lo, hi := 0, 0
	for _, c := range counts {
		if c > 0 && (lo == 0 || c < lo) {
			lo = c
		}
		hi = max(hi, c)
	}
	h.groupSize = lo
	if float64(hi) < 1.5*float64(lo) {
		h.groupSize = hi
	}
	if per == 0 {
		h.groupSize = s.layers
	}
	groups := func(n int) int { return int(ceilDiv(int64(n), int64(max(h.groupSize, 1)))) }
	h.full, h.sliding, h.state = groups(nFull), groups(nSliding), groups(s.layers)
	if per == 0 {
		h.full, h.sliding, h.state = 0, 0, 1
	}
	if unit := units.MulInt(h.page, int64(h.groupSize)); unit > 0 {
		h.blocks = int64(pool) / unit
	}
	return h
}

// seqBlocks is the number of blocks one request of n tokens takes.
func (h hybridPool) seqBlocks(n int64) int64 {
	bs := int64(max(h.blockSize, 1))
	b := units.MulInt(int64(h.full), ceilDiv(max(n, 0), bs))
	if h.sliding > 0 {
		w := min(int64(h.window)-1+int64(h.maxBatched), n)
		b += units.MulInt(int64(h.sliding), ceilDiv(max(w, 0), bs)+1)
	}
	return b + int64(h.state)
}

// seqBytes is the pool one request of n tokens takes.
func (h hybridPool) seqBytes(n int64) units.Bytes {
	return units.Bytes(units.MulInt(h.seqBlocks(n), units.MulInt(h.page, int64(h.groupSize))))
}

// tokens is vLLM's logged KV cache size in tokens: blocks per group ×
// block size (kv_cache_utils.py _report_kv_cache_config).
func (h hybridPool) tokens() int64 {
	groups := int64(max(h.full+h.sliding+h.state, 1))
	return units.MulInt(h.blocks/groups, int64(h.blockSize))
}

// formula describes the layout for the breakdown.
func (h hybridPool) formula(s stateSpec) string {
	return fmt.Sprintf("hybrid pool: pages of %d B (attention block %d tokens; state page %d B padded), %d tensors of %d pages; "+
		"groups of %d layers: %d full-attention, %d sliding, %d recurrent; a request takes one page per recurrent group",
		h.page, h.blockSize, s.page(), h.groupSize, h.blocks, h.groupSize, h.full, h.sliding, h.state)
}
