package memory

import (
	"math"
	"math/bits"
)

// The arithmetic of PyTorch's CUDA caching allocator (MODEL.md §10), from
// pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp at commit
// 001074d25084fdb87a799823e395a50f5ec044d3:
//
//   - every request is rounded up to 512 bytes (kMinBlockSize), or with
//     roundup_power2_divisions to the next division of its power-of-two
//     interval (round_size, roundup_power2_next_division);
//   - requests of at most 1 MiB (kSmallSize) come from the small pool,
//     whose segments are 2 MiB (kSmallBuffer); larger ones from the large
//     pool, whose new segments are 20 MiB (kLargeBuffer) for requests
//     under 10 MiB (kMinLargeAlloc) and the request rounded up to 2 MiB
//     (kRoundLarge) otherwise (get_allocation_size);
//   - a request takes the smallest cached free block of its pool and
//     stream that fits (get_free_block, best fit), and splits it when the
//     remainder is at least 512 bytes (small pool, or expandable segments)
//     or more than 1 MiB and the request is below max_split_size
//     (should_split); an unsplit block keeps its whole size, which the
//     allocator counts as allocated (alloc_found_block adds block->size
//     to allocated_bytes);
//   - blocks are reused only on the stream they were allocated on, freed
//     blocks merge with free neighbours of the same segment
//     (try_merge_blocks), and a segment is returned to CUDA only when
//     cudaMalloc fails (release_cached_blocks) or on empty_cache.
const (
	kMinBlockSize  = 512
	kSmallSize     = 1 << 20
	kSmallBuffer   = 2 << 20
	kMinLargeAlloc = 10 << 20
	kRoundLarge    = 2 << 20
	kLargeBuffer   = 20 << 20
)

// roundSize is the size the allocator serves a request of size bytes
// with (round_size).
func (c *AllocConf) roundSize(size uint64) uint64 {
	if size < kMinBlockSize {
		return kMinBlockSize
	}
	if d := uint64(c.divisionsFor(size)); d > 1 && size > kMinBlockSize*d {
		return roundupPower2NextDivision(size, d)
	}
	return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize)
}

// roundupPower2NextDivision rounds size up to the next of divisions equal
// steps between the powers of two around it: 1200 with 4 divisions lies
// between 1024 and 2048, whose steps are 1024, 1280, 1536 and 1792, so
// it becomes 1280 (roundup_power2_next_division).
func roundupPower2NextDivision(size, divisions uint64) uint64 {
	if size&(size-1) == 0 {
		return size
	}
	floor := uint64(1) << (bits.Len64(size) - 1)
	step := floor >> (bits.Len64(divisions) - 1)
	if step == 0 {
		return floor << 1
	}
	if down := size &^ (step - 1); down != size {
		return down + step
	}
	return size
}

// allocationSize is the size of the segment cudaMalloc is asked for when
// no cached block serves a request of size (already rounded) bytes
// (get_allocation_size).
func allocationSize(size uint64) uint64 {
	switch {
	case size <= kSmallSize:
		return kSmallBuffer
	case size < kMinLargeAlloc:
		return kLargeBuffer
	}
	return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge)
}

// smallPool reports whether a request of size (rounded) bytes is served
// from the small pool (get_pool).
func smallPool(size uint64) bool { return size <= kSmallSize }

// shouldSplit reports whether a block of block bytes serving a request of
// size bytes is split, leaving the remainder cached (should_split).
func (c *AllocConf) shouldSplit(block, size uint64, small bool) bool {
	rem := block - size
	if small || c.ExpandableSegments {
		return rem >= kMinBlockSize
	}
	return size < c.maxSplit() && rem > kSmallSize
}

// expandablePage is the granularity an expandable segment of a pool
// grows by: 2 MiB pages for the small pool, 20 MiB for the large one
// (Note [Expandable Segments]; find_expandable_block's segment_size).
func expandablePage(small bool) uint64 {
	if small {
		return kSmallBuffer
	}
	return kLargeBuffer
}

// freshFootprint is what the allocator holds for n tensors of size bytes
// each, allocated one after another with nothing cached to reuse, as a
// model's weights are when it is loaded: the bytes it counts as
// allocated (each block's size) and the bytes it reserves (the
// segments'). The same-size requests tile segments alike, so one
// segment's arithmetic gives the rest:
//
//   - small pool: blocks of the rounded size packed into 2 MiB segments
//     (a remainder of 512 bytes or more is split off and stays free);
//   - large pool, below 10 MiB: 20 MiB segments cut into blocks while the
//     remainder is more than 1 MiB; the last block keeps a remainder of
//     1 MiB or less, a larger one too small for the next request stays
//     free;
//   - large pool, 10 MiB and more: one segment per tensor, rounded up to
//     2 MiB, whose remainder is split off if more than 1 MiB (and the
//     request below max_split_size) or else kept in the block;
//   - expandable segments: one segment per pool and stream that grows by
//     whole pages and is cut into blocks of the rounded size.
//
// Expandable pools are summed by the caller (expandableFootprint), since
// all sizes share one segment; here they return the rounded bytes alone.
func (c *AllocConf) freshFootprint(size uint64, n float64) (allocated, reserved float64) {
	if n <= 0 || size == 0 {
		return 0, 0
	}
	rs := c.roundSize(size)
	small := smallPool(rs)
	if c.ExpandableSegments {
		return n * float64(rs), n * float64(rs)
	}
	seg := allocationSize(rs)
	if small || rs < kMinLargeAlloc {
		// Several blocks per segment: place them while they fit.
		per, rem, absorbed := 0.0, seg, 0.0
		for rem >= rs {
			per++
			rem -= rs
			if !c.shouldSplit(rem+rs, rs, small) {
				// The block takes what is left of the segment.
				absorbed, rem = float64(rem), 0
				break
			}
		}
		allocated = n*float64(rs) + math.Floor(n/per)*absorbed
		reserved = math.Ceil(n/per) * float64(seg)
		return allocated, reserved
	}
	if c.shouldSplit(seg, rs, false) {
		return n * float64(rs), n * float64(seg)
	}
	return n * float64(seg), n * float64(seg)
}
