package memory

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/units"
)

const miB uint64 = 1 << 20

func TestRoundSize(t *testing.T) {
	var def AllocConf
	four := AllocConf{}
	for i := range four.RoundupDivisions {
		four.RoundupDivisions[i] = 4
	}
	tests := []struct {
		conf *AllocConf
		size uint64
		want uint64
	}{
		{&def, 1, 512},
		{&def, 512, 512},
		{&def, 513, 1024},
		{&def, 6*miB + 1, 6*miB + 512},
		// roundup_power2_divisions:4 applies above 512 × 4 bytes.
		{&four, 2048, 2048},
		{&four, 2049, 2560},
		{&four, 5*miB + 1, 6 * miB},
		{&four, 8 * miB, 8 * miB}, // a power of two stays
		{&four, 9 * miB, 10 * miB},
	}
	for _, tt := range tests {
		if got := tt.conf.roundSize(tt.size); got != tt.want {
			t.Errorf("roundSize(%d) with %s = %d, want %d", tt.size, tt.conf, got, tt.want)
		}
	}
	// The source's own example: 1200 with 4 divisions is 1280.
	if got := roundupPower2NextDivision(1200, 4); got != 1280 {
		t.Errorf("roundupPower2NextDivision(1200, 4) = %d, want 1280", got)
	}
}

func TestAllocationSize(t *testing.T) {
	for _, tt := range []struct{ size, want uint64 }{
		{512, 2 * miB}, {miB, 2 * miB}, {miB + 512, 20 * miB}, {10*miB - 512, 20 * miB},
		{10 * miB, 10 * miB}, {10*miB + 512, 12 * miB}, {11 * miB, 12 * miB}, {100 * miB, 100 * miB},
	} {
		if got := allocationSize(tt.size); got != tt.want {
			t.Errorf("allocationSize(%d) = %d, want %d", tt.size, got, tt.want)
		}
	}
}

// simStep is one step of an allocation sequence: allocate size bytes on
// stream (size > 0), or free the allocation made at step free-1.
type simStep struct {
	size   uint64
	stream int
	free   int
}

func TestCachingAllocatorSequences(t *testing.T) {
	var def AllocConf
	split64 := AllocConf{MaxSplitSize: 64 * units.MiB}
	exp := AllocConf{ExpandableSegments: true}
	tests := []struct {
		name     string
		conf     AllocConf
		steps    []simStep
		segments []uint64 // segment sizes at the end, in MiB
		alloc    uint64   // allocated bytes at the end
		peakRes  uint64   // peak reserved
	}{
		{"a small request rounds to 512 B in a 2 MiB segment", def,
			[]simStep{{size: 100}}, []uint64{2}, 512, 2 * miB},
		{"four 600 KiB requests: three per 2 MiB segment", def,
			[]simStep{{size: 600 << 10}, {size: 600 << 10}, {size: 600 << 10}, {size: 600 << 10}}, []uint64{2, 2}, 4 * 600 << 10, 4 * miB},
		{"5 MiB requests split one 20 MiB segment four ways", def,
			[]simStep{{size: 5 * miB}, {size: 5 * miB}, {size: 5 * miB}, {size: 5 * miB}}, []uint64{20}, 20 * miB, 20 * miB},
		{"6 MiB requests: three per segment, 2 MiB left over", def,
			[]simStep{{size: 6 * miB}, {size: 6 * miB}, {size: 6 * miB}, {size: 6 * miB}}, []uint64{20, 20}, 24 * miB, 40 * miB},
		{"9.5 MiB: the second block keeps the last 1 MiB", def,
			[]simStep{{size: 9*miB + miB/2}, {size: 9*miB + miB/2}}, []uint64{20}, 20 * miB, 20 * miB},
		{"11 MiB takes a whole 12 MiB segment (1 MiB is not split off)", def,
			[]simStep{{size: 11 * miB}}, []uint64{12}, 12 * miB, 12 * miB},
		{"10.5 MiB splits 1.5 MiB off, which serves a 1.2 MiB request whole", def,
			[]simStep{{size: 10*miB + miB/2}, {size: miB + miB/5}}, []uint64{12}, 12 * miB, 12 * miB},
		{"a freed block is split for a smaller request; a larger one needs a new segment", def,
			[]simStep{{size: 100 * miB}, {free: 1}, {size: 60 * miB}, {size: 50 * miB}}, []uint64{100, 50}, 110 * miB, 150 * miB},
		{"freed neighbours merge back into one block", def,
			[]simStep{{size: 100 * miB}, {free: 1}, {size: 60 * miB}, {size: 40 * miB}, {free: 3}, {free: 4}, {size: 100 * miB}}, []uint64{100}, 100 * miB, 100 * miB},
		{"blocks are reused on their own stream only", def,
			[]simStep{{size: 100 * miB, stream: 1}, {free: 1}, {size: 60 * miB}}, []uint64{100, 60}, 60 * miB, 160 * miB},
		{"max_split_size: an oversize block does not serve a smaller request", split64,
			[]simStep{{size: 100 * miB}, {free: 1}, {size: 60 * miB}}, []uint64{100, 60}, 60 * miB, 160 * miB},
		{"max_split_size: an oversize block serves a request within 20 MiB, unsplit", split64,
			[]simStep{{size: 100 * miB}, {free: 1}, {size: 90 * miB}}, []uint64{100}, 100 * miB, 100 * miB},
		{"expandable segments: the free tail grows by 20 MiB pages", exp,
			[]simStep{{size: 100 * miB}, {free: 1}, {size: 60 * miB}, {size: 50 * miB}}, []uint64{120}, 110 * miB, 120 * miB},
		{"expandable segments: one segment per stream", exp,
			[]simStep{{size: 30 * miB}, {size: 30 * miB, stream: 1}}, []uint64{40, 40}, 60 * miB, 80 * miB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newSim(tt.conf, 0)
			handles := make([]int, len(tt.steps))
			for i, st := range tt.steps {
				if st.free > 0 {
					a.free(handles[st.free-1])
					continue
				}
				h, err := a.malloc(st.size, st.stream)
				if err != nil {
					t.Fatalf("step %d: %v", i+1, err)
				}
				handles[i] = h
			}
			var segs []uint64
			for _, s := range a.segments() {
				segs = append(segs, s/miB)
			}
			if !slices.Equal(segs, tt.segments) || a.allocated != tt.alloc || a.peakReserved != tt.peakRes {
				t.Errorf("segments %v MiB, allocated %d, peak reserved %d; want %v MiB, %d, %d",
					segs, a.allocated, a.peakReserved, tt.segments, tt.alloc, tt.peakRes)
			}
		})
	}
}

// TestCachingAllocatorRelease checks that a cudaMalloc over the device
// limit first returns the cached whole segments (release_cached_blocks)
// and that an allocation that still does not fit fails.
func TestCachingAllocatorRelease(t *testing.T) {
	a := newSim(AllocConf{}, 100*miB)
	h, _ := a.malloc(60*miB, 0)
	a.free(h)
	if _, err := a.malloc(70*miB, 0); err != nil {
		t.Fatalf("70 MiB after freeing 60 MiB under a 100 MiB limit: %v", err)
	}
	if got := a.segments(); !slices.Equal(got, []uint64{70 * miB}) {
		t.Errorf("segments %v, want the cached 60 MiB released and one of 70 MiB", got)
	}
	if _, err := a.malloc(40*miB, 0); err == nil {
		t.Error("40 MiB more under the limit: no error")
	}
}

// TestCachingAllocatorGC checks garbage_collection_threshold: with a
// memory fraction set (400 MiB allowed), cached whole segments are freed
// once reserved memory passes threshold × the allowed memory (100 MiB),
// before a new segment is made; without a fraction it does nothing.
func TestCachingAllocatorGC(t *testing.T) {
	conf := AllocConf{GCThreshold: 0.25}
	for _, fraction := range []bool{false, true} {
		a := newSim(conf, 400*miB)
		a.fraction = fraction
		h, _ := a.malloc(80*miB, 0)
		g, _ := a.malloc(40*miB, 0)
		a.free(h)
		a.free(g)
		if _, err := a.malloc(90*miB, 0); err != nil {
			t.Fatal(err)
		}
		want := []uint64{80 * miB, 40 * miB, 90 * miB}
		if fraction {
			want = []uint64{90 * miB} // 120 MiB reserved > 100 MiB: both cached segments, as old, go
		}
		if got := a.segments(); !slices.Equal(got, want) {
			t.Errorf("fraction %v: segments %v, want %v", fraction, got, want)
		}
	}
}

// TestFreshFootprint checks the closed form of freshFootprint against the
// allocator replayed tensor by tensor.
func TestFreshFootprint(t *testing.T) {
	confs := map[string]AllocConf{"default": {}, "max_split_size_mb:20": {MaxSplitSize: 20 * units.MiB}}
	div := AllocConf{}
	for i := range div.RoundupDivisions {
		div.RoundupDivisions[i] = 8
	}
	confs["roundup_power2_divisions:8"] = div
	sizes := []uint64{100, 600 << 10, miB, miB + 1, 5 * miB, 6 * miB, 9*miB + miB/2, 10 * miB, 10*miB + miB/2,
		11 * miB, 18 * miB, 32 * miB, 3072 * 1024 * 2, 4096 * 14336 * 2, 128256*3072*2 + 1000}
	for name, conf := range confs {
		for _, size := range sizes {
			for _, n := range []int{1, 2, 3, 7, 28} {
				a := newSim(conf, 0)
				for range n {
					if _, err := a.malloc(size, 0); err != nil {
						t.Fatal(err)
					}
				}
				alloc, res := conf.freshFootprint(size, float64(n))
				if uint64(alloc) != a.allocated || uint64(res) != a.reserved {
					t.Errorf("%s: %d × %d B: closed form allocated %.0f, reserved %.0f; replayed %d, %d",
						name, n, size, alloc, res, a.allocated, a.reserved)
				}
			}
		}
	}
}

func TestParseAllocConf(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"expandable_segments:True", "expandable_segments:True"},
		{" expandable_segments : False ", ""},
		{"max_split_size_mb:512,garbage_collection_threshold:0.6", "max_split_size_mb:512,garbage_collection_threshold:0.6"},
		{"roundup_power2_divisions:16", "roundup_power2_divisions:16"},
		{"roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", "roundup_power2_divisions:[1:1,2:1,4:1,8:1,16:1,32:1,64:1,128:1,256:1,512:2,1024:4,2048:8,4096:8,8192:8,16384:8,32768:8]"},
		{"backend:native,release_lock_on_cudamalloc:True,pinned_use_cuda_host_register:True,pinned_num_register_threads:8", ""},
		{"backend:cudaMallocAsync", "backend:cudaMallocAsync"},
		{"max_non_split_rounding_mb:64", "max_non_split_rounding_mb:64"},
	}
	for _, tt := range tests {
		c, err := ParseAllocConf(tt.in)
		if err != nil {
			t.Errorf("ParseAllocConf(%q): %v", tt.in, err)
			continue
		}
		if got := c.String(); got != tt.want {
			t.Errorf("ParseAllocConf(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
		back, err := ParseAllocConf(c.String())
		if err != nil || back != c {
			t.Errorf("%q does not read back: %+v, %v", c.String(), back, err)
		}
	}
	c, _ := ParseAllocConf("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]")
	for _, tt := range []struct {
		size uint64
		want int
	}{{100, 1}, {300 * miB, 1}, {600 * miB, 2}, {1500 * miB, 4}, {3000 * miB, 8}, {1 << 40, 8}} {
		if got := c.divisionsFor(tt.size); got != tt.want {
			t.Errorf("divisions for %d B = %d, want %d", tt.size, got, tt.want)
		}
	}
}

func TestParseAllocConfErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"expandable_segments:true", `"true": want True or False`},
		{"expandable_segments", "want expandable_segments:value"},
		{"max_split_size_mb:10", "10 MiB: want at least 20"},
		{"max_split_size_mb:big", `"big": want a whole number of MiB`},
		{"garbage_collection_threshold:1.5", "want a fraction between 0 and 1"},
		{"roundup_power2_divisions:3", `divisions "3": want a power of two`},
		{"roundup_power2_divisions:[256:1,512", "want [boundary:divisions"},
		{"roundup_power2_divisions:[100:2]", `boundary "100": want a power of two`},
		{"roundup_power2_divisions:[256:2", "closing ]"},
		{"backend:cuda", `unknown backend "cuda"`},
		{"expandable_segment:True", "expandable_segment: unknown key"},
		{"expandable_segments:True,expandable_segments:False", "given twice"},
		{"expandable_segments:True max_split_size_mb:64", `"Truemax_split_size_mb": want True or False`}, // spaces are dropped, as PyTorch drops them
		{"expandable_segments:True,", "ends with a comma"},
		{",expandable_segments:True", "expected a key"},
	}
	for _, tt := range tests {
		_, err := ParseAllocConf(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseAllocConf(%q) = %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
}

// FuzzParseAllocConf checks that any configuration string parses or
// fails cleanly, and that what parses reads back from its String form.
func FuzzParseAllocConf(f *testing.F) {
	for _, s := range []string{"", "expandable_segments:True", "max_split_size_mb:128,garbage_collection_threshold:0.8",
		"roundup_power2_divisions:[64:8,256:4,1024:4,>:1]", "backend:cudaMallocAsync", "roundup_power2_divisions:4",
		"pinned_reserve_segment_size_mb:16,expandable_segments:False", "[::,]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseAllocConf(s)
		if err != nil {
			return
		}
		back, err := ParseAllocConf(c.String())
		if err != nil {
			t.Fatalf("%q parsed, but its form %q does not: %v", s, c.String(), err)
		}
		if back != c {
			t.Fatalf("%q: %+v reads back as %+v", s, c, back)
		}
		if c.MaxSplitSize < 0 || c.MaxNonSplitRounding < 0 || c.GCThreshold < 0 || c.GCThreshold >= 1 {
			t.Fatalf("%q: out-of-range settings %+v", s, c)
		}
	})
}
