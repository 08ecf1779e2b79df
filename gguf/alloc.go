package gguf

import (
	"sort"

	"github.com/gpumem/gpumem/units"
)

// dynAlloc replays ggml's graph allocator on one buffer: ggml_gallocr
// (ggml/src/ggml-alloc.c) places each tensor of the worst-case graph, in
// graph order, in a ggml_dyn_tallocr that takes the smallest free block
// that fits, else the free space at the end, and merges neighbouring free
// blocks on release. The buffer it reserves is the highest end offset
// ever used (max_size), which includes the holes that this placement
// leaves: llama.cpp logs it as "compute buffer size".
type dynAlloc struct {
	align int64
	free  []span // free holes below end, by offset
	end   int64  // start of the free space at the end
	max   int64  // high-water mark
}

type span struct{ off, size int64 }

// alloc places size bytes (rounded up to the alignment) and returns where.
func (a *dynAlloc) alloc(size int64) span {
	size = alignUp(min(max(size, 1), maxInt64/2), a.align)
	best := -1
	for i, h := range a.free {
		if h.size >= size && (best < 0 || h.size <= a.free[best].size) {
			best = i
		}
	}
	if best < 0 {
		s := span{a.end, size}
		a.end = int64(units.Add(units.Bytes(a.end), units.Bytes(size)))
		a.max = max(a.max, a.end)
		return s
	}
	h := &a.free[best]
	s := span{h.off, size}
	h.off += size
	h.size -= size
	if h.size == 0 {
		a.free = append(a.free[:best], a.free[best+1:]...)
	}
	return s
}

// release returns s to the free space, merging it with its neighbours.
func (a *dynAlloc) release(s span) {
	a.free = append(a.free, s)
	sort.Slice(a.free, func(i, j int) bool { return a.free[i].off < a.free[j].off })
	merged := a.free[:0]
	for _, h := range a.free {
		if n := len(merged); n > 0 && merged[n-1].off+merged[n-1].size == h.off {
			merged[n-1].size += h.size
			continue
		}
		merged = append(merged, h)
	}
	a.free = merged
	// A hole that reaches the end is the end's free space again.
	if n := len(a.free); n > 0 && a.free[n-1].off+a.free[n-1].size == a.end {
		a.end = a.free[n-1].off
		a.free = a.free[:n-1]
	}
}
