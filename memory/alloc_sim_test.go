package memory

import (
	"errors"
	"math"
	"slices"
)

// simAllocator replays allocations and frees through the caching
// allocator's rules (alloc.go; pytorch/pytorch
// c10/cuda/CUDACachingAllocator.cpp at 001074d2): round_size, the small
// and large pools, per-stream reuse, best fit (get_free_block, with the
// max_split_size rules), should_split, try_merge_blocks, new segments of
// get_allocation_size, expandable segments growing by pages, and, when a
// device limit is set, release_cached_blocks before giving up. It is the
// reference the closed forms of the estimator are tested against; it
// does not model CUDA graphs' private pools or events.
type simAllocator struct {
	conf  AllocConf
	limit uint64 // device memory the segments may take; 0 = unlimited
	// fraction, with conf.GCThreshold, turns on garbage collection:
	// set_per_process_memory_fraction's allowed maximum is limit.
	fraction bool

	segs   []*simSegment
	blocks map[int]*simBlock // live allocations by handle
	next   int

	allocated, reserved         uint64
	peakAllocated, peakReserved uint64
	gcCalls                     [2]int64 // get_free_block calls per pool (small, large)
}

type simSegment struct {
	stream     int
	small      bool
	expandable bool
	mapped     uint64 // bytes backed by memory (the segment's size unless expandable)
	blocks     []*simBlock
}

type simBlock struct {
	seg       *simSegment
	off, size uint64
	allocated bool
	gcBase    int64
}

var errSimOOM = errors.New("out of memory")

func newSim(conf AllocConf, limit uint64) *simAllocator {
	return &simAllocator{conf: conf, limit: limit, blocks: map[int]*simBlock{}}
}

func poolIndex(small bool) int {
	if small {
		return 0
	}
	return 1
}

// malloc allocates size bytes on stream and returns a handle.
func (a *simAllocator) malloc(size uint64, stream int) (int, error) {
	rs := a.conf.roundSize(size)
	small := smallPool(rs)
	b := a.freeBlock(rs, stream, small)
	if b == nil {
		if a.fraction && a.conf.GCThreshold > 0 {
			a.garbageCollect()
		}
		var err error
		if b, err = a.newBlock(rs, stream, small); err != nil {
			a.releaseCached()
			if b, err = a.newBlock(rs, stream, small); err != nil {
				return 0, err
			}
		}
	}
	if a.conf.shouldSplit(b.size, rs, small) {
		rest := &simBlock{seg: b.seg, off: b.off + rs, size: b.size - rs}
		rest.gcBase = a.gcCalls[poolIndex(small)]
		i := slices.Index(b.seg.blocks, b)
		b.seg.blocks = slices.Insert(b.seg.blocks, i+1, rest)
		b.size = rs
	}
	b.allocated = true
	a.allocated += b.size
	a.peakAllocated = max(a.peakAllocated, a.allocated)
	a.next++
	a.blocks[a.next] = b
	return a.next, nil
}

// freeBlock is get_free_block: the smallest free block of the pool and
// stream that fits, subject to max_split_size.
func (a *simAllocator) freeBlock(rs uint64, stream int, small bool) *simBlock {
	if a.fraction && a.conf.GCThreshold > 0 {
		a.gcCalls[poolIndex(small)]++
	}
	var best *simBlock
	bestSize := uint64(math.MaxUint64)
	for _, s := range a.segs {
		if s.stream != stream || s.small != small {
			continue
		}
		for _, b := range s.blocks {
			if b.allocated || b.size < rs || b.off >= s.mapped {
				continue
			}
			size := b.size
			if s.expandable {
				size = b.size + (s.unmappedAfter(b)) // expandable size (get_free_block)
			}
			if size < bestSize {
				best, bestSize = b, size
			}
		}
	}
	if best == nil {
		return nil
	}
	ms := a.conf.maxSplit()
	if rs < ms && best.size >= ms {
		return nil // no oversized block for a smaller request
	}
	if rs >= ms && best.size >= rs+a.conf.nonSplitRounding() {
		return nil // an oversized block only within the rounding limit
	}
	return best
}

// unmappedAfter is the unmapped address space after b when b is the
// segment's last mapped block (it can grow into it); 0 otherwise.
func (s *simSegment) unmappedAfter(b *simBlock) uint64 {
	if b.off+b.size == s.mapped {
		return math.MaxUint32 // far more than any test maps
	}
	return 0
}

// newBlock is alloc_block: a new segment, or for expandable segments more
// pages mapped at the end of the stream's segment.
func (a *simAllocator) newBlock(rs uint64, stream int, small bool) (*simBlock, error) {
	if a.conf.ExpandableSegments {
		return a.expand(rs, stream, small)
	}
	size := allocationSize(rs)
	if a.limit > 0 && a.reserved+size > a.limit {
		return nil, errSimOOM
	}
	s := &simSegment{stream: stream, small: small, mapped: size}
	b := &simBlock{seg: s, size: size}
	s.blocks = []*simBlock{b}
	a.segs = append(a.segs, s)
	a.grow(size)
	return b, nil
}

// expand maps whole pages at the end of the stream's expandable segment
// of the pool until its free tail holds rs bytes.
func (a *simAllocator) expand(rs uint64, stream int, small bool) (*simBlock, error) {
	var s *simSegment
	for _, t := range a.segs {
		if t.expandable && t.stream == stream && t.small == small {
			s = t
		}
	}
	if s == nil {
		s = &simSegment{stream: stream, small: small, expandable: true}
		a.segs = append(a.segs, s)
	}
	var tail *simBlock
	if n := len(s.blocks); n > 0 && !s.blocks[n-1].allocated {
		tail = s.blocks[n-1]
	}
	have := uint64(0)
	if tail != nil {
		have = tail.size
	}
	page := expandablePage(small)
	add := (rs - have + page - 1) / page * page
	if a.limit > 0 && a.reserved+add > a.limit {
		return nil, errSimOOM
	}
	if tail == nil {
		tail = &simBlock{seg: s, off: s.mapped}
		s.blocks = append(s.blocks, tail)
	}
	tail.size += add
	s.mapped += add
	a.grow(add)
	return tail, nil
}

func (a *simAllocator) grow(n uint64) {
	a.reserved += n
	a.peakReserved = max(a.peakReserved, a.reserved)
}

// free releases a handle's block into its stream's pool, merging it with
// free neighbours of its segment.
func (a *simAllocator) free(h int) {
	b := a.blocks[h]
	delete(a.blocks, h)
	b.allocated = false
	a.allocated -= b.size
	b.gcBase = a.gcCalls[poolIndex(b.seg.small)]
	s := b.seg
	i := slices.Index(s.blocks, b)
	if i+1 < len(s.blocks) && !s.blocks[i+1].allocated {
		b.size += s.blocks[i+1].size
		s.blocks = slices.Delete(s.blocks, i+1, i+2)
	}
	if i > 0 && !s.blocks[i-1].allocated {
		p := s.blocks[i-1]
		p.size += b.size
		s.blocks = slices.Delete(s.blocks, i, i+1)
	}
}

// releaseCached is release_cached_blocks: every segment that is one free
// block goes back to CUDA; expandable segments unmap their free tail.
func (a *simAllocator) releaseCached() {
	kept := a.segs[:0]
	for _, s := range a.segs {
		switch {
		case s.expandable:
			if n := len(s.blocks); n > 0 && !s.blocks[n-1].allocated {
				t := s.blocks[n-1]
				a.reserved -= t.size
				s.mapped -= t.size
				s.blocks = s.blocks[:n-1]
			}
			kept = append(kept, s)
		case len(s.blocks) == 1 && !s.blocks[0].allocated:
			a.reserved -= s.mapped
		default:
			kept = append(kept, s)
		}
	}
	a.segs = kept
}

// garbageCollect is garbage_collect_cached_blocks: above threshold ×
// allowed memory, free unsplit cached large segments at least as old (in
// get_free_block calls since they were freed) as the average.
func (a *simAllocator) garbageCollect() {
	threshold := uint64(a.conf.GCThreshold * float64(a.limit))
	if a.reserved <= threshold {
		return
	}
	target := a.reserved - threshold
	var whole []*simSegment
	for _, s := range a.segs {
		if !s.small && !s.expandable && len(s.blocks) == 1 && !s.blocks[0].allocated {
			whole = append(whole, s)
		}
	}
	age := func(s *simSegment) int64 { return a.gcCalls[1] - s.blocks[0].gcBase }
	var total int64
	for _, s := range whole {
		total += age(s)
	}
	reclaimed := uint64(0)
	for reclaimed < target && len(whole) > 0 {
		avg := float64(total) / float64(len(whole))
		freed := false
		left := whole[:0]
		for _, s := range whole {
			if float64(age(s)) >= avg {
				reclaimed += s.mapped
				total -= age(s)
				a.dropSegment(s)
				freed = true
				continue
			}
			left = append(left, s)
		}
		whole = left
		if !freed {
			break
		}
	}
}

func (a *simAllocator) dropSegment(s *simSegment) {
	a.reserved -= s.mapped
	a.segs = slices.DeleteFunc(a.segs, func(t *simSegment) bool { return t == s })
}

// segments lists each segment's size, in the order they were made.
func (a *simAllocator) segments() []uint64 {
	out := make([]uint64, len(a.segs))
	for i, s := range a.segs {
		out[i] = s.mapped
	}
	return out
}
