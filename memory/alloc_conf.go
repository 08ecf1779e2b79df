package memory

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// AllocConf is the configuration of PyTorch's CUDA caching allocator, as
// the PYTORCH_CUDA_ALLOC_CONF environment variable (PYTORCH_ALLOC_CONF
// from torch 2.9) sets it: "expandable_segments:True,max_split_size_mb:512".
// Its zero value is the allocator's default configuration.
//
// The keys, their defaults and the checks on their values are those of
// pytorch/pytorch c10/core/AllocatorConfig.cpp and .h (ConfigTokenizer,
// AcceleratorAllocatorConfig::parseArgs) and
// c10/cuda/CUDAAllocatorConfig.cpp (parseArgs) at commit
// 0ac716637f3258efcaf7fdfb851bdd520c9c1441.
type AllocConf struct {
	// Backend is "native" (the caching allocator gpumem models) or
	// "cudaMallocAsync" (CUDA's own stream-ordered pools); "" is native.
	Backend string `json:"backend,omitempty"`
	// MaxSplitSize is max_split_size_mb in bytes: cached blocks this
	// large or larger are never split, and serve only requests of at
	// least this size. 0 means unlimited (the default).
	MaxSplitSize units.Bytes `json:"max_split_size_bytes,omitempty"`
	// MaxNonSplitRounding is max_non_split_rounding_mb in bytes: how much
	// larger than a request at least MaxSplitSize an unsplittable cached
	// block may be and still serve it. 0 means the default, 20 MiB.
	MaxNonSplitRounding units.Bytes `json:"max_non_split_rounding_bytes,omitempty"`
	// GCThreshold is garbage_collection_threshold, in (0, 1); 0 is off.
	// The allocator acts on it only when a memory fraction is set
	// (torch.cuda.set_per_process_memory_fraction).
	GCThreshold float64 `json:"garbage_collection_threshold,omitempty"`
	// RoundupDivisions is roundup_power2_divisions per power-of-two
	// interval of request sizes: entry 0 for sizes below 2 MiB, entry i
	// for [2^(20+i), 2^(21+i)) bytes, the last for 32 GiB and more. 0
	// (the default) rounds to 512 bytes only.
	RoundupDivisions [roundupIntervals]int `json:"roundup_power2_divisions,omitempty"`
	// ExpandableSegments is expandable_segments: one segment per stream
	// that grows by mapping pages, instead of one cudaMalloc per segment.
	ExpandableSegments bool `json:"expandable_segments,omitempty"`
}

// roundupIntervals is the number of power-of-two size intervals
// roundup_power2_divisions is set for: from 1 MiB to 64 GiB
// (kRoundUpPowerOfTwoIntervals in c10/core/AllocatorConfig.cpp).
const roundupIntervals = 16

// Allocator configuration defaults and limits (c10/core/AllocatorConfig.h,
// .cpp): max_split_size_mb and max_non_split_rounding_mb may not be
// below kLargeBuffer (20 MiB), which is also the rounding default.
const (
	minSplitSizeMiB         = 20
	defaultNonSplitRounding = 20 * units.MiB
)

// ParseAllocConf reads a PYTORCH_CUDA_ALLOC_CONF value. It follows
// PyTorch's tokenizer (keys, values and the characters ':', ',', '['
// and ']'; whitespace ignored) and its checks: booleans are True or
// False as PyTorch spells them, sizes are whole MiB, divisions powers of
// two. Keys that only configure pinned host memory or locking are
// accepted and change nothing on the GPU; an unknown key is an error, as
// it is for PyTorch. Errors name the key and the syntax expected.
func ParseAllocConf(s string) (AllocConf, error) {
	var c AllocConf
	toks, err := allocTokens(s)
	if err != nil {
		return c, err
	}
	seen := map[string]bool{}
	for i := 0; i < len(toks); i++ {
		key := toks[i]
		if isAllocPunct(key) {
			return c, fmt.Errorf("%q: expected a key at %q", s, key)
		}
		if seen[key] {
			return c, fmt.Errorf("%s given twice", key)
		}
		seen[key] = true
		if i+2 >= len(toks) || toks[i+1] != ":" {
			return c, fmt.Errorf("%s: want %s:value", key, key)
		}
		i += 2
		if i, err = c.set(key, toks, i); err != nil {
			return c, fmt.Errorf("%s: %w", key, err)
		}
		if i+1 < len(toks) {
			if toks[i+1] != "," {
				return c, fmt.Errorf("%s: want a comma before %q", key, toks[i+1])
			}
			i++
			if i+1 == len(toks) {
				return c, fmt.Errorf("%q ends with a comma", s)
			}
		}
	}
	return c, nil
}

// maxAllocConfLen bounds the configuration string: PyTorch's longest
// sensible setting is a few hundred characters.
const maxAllocConfLen = 4096

// allocTokens splits s as ConfigTokenizer does.
func allocTokens(s string) ([]string, error) {
	if len(s) > maxAllocConfLen {
		return nil, fmt.Errorf("%d characters, more than the %d accepted", len(s), maxAllocConfLen)
	}
	var toks []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			toks = append(toks, b.String())
			b.Reset()
		}
	}
	for _, r := range s {
		switch {
		case r == ',' || r == ':' || r == '[' || r == ']':
			flush()
			toks = append(toks, string(r))
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f':
		default:
			b.WriteRune(r)
		}
	}
	flush()
	return toks, nil
}

// isAllocPunct reports whether a token is one of the tokenizer's
// separators.
func isAllocPunct(t string) bool { return t == ":" || t == "," || t == "[" || t == "]" }

// set applies key's value, which starts at toks[i], and returns the
// index of the value's last token.
func (c *AllocConf) set(key string, toks []string, i int) (int, error) {
	v := toks[i]
	switch key {
	case "backend":
		if v != "native" && v != "cudaMallocAsync" {
			return i, fmt.Errorf("unknown backend %q (want native or cudaMallocAsync)", v)
		}
		c.Backend = v
		if v == "native" {
			c.Backend = "" // the zero value
		}
	case "max_split_size_mb":
		n, err := allocMiB(v, minSplitSizeMiB)
		c.MaxSplitSize = n
		return i, err
	case "max_non_split_rounding_mb":
		n, err := allocMiB(v, minSplitSizeMiB)
		c.MaxNonSplitRounding = n
		return i, err
	case "garbage_collection_threshold":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f < 1) {
			return i, fmt.Errorf("%q: want a fraction between 0 and 1, exclusive", v)
		}
		c.GCThreshold = f
	case "roundup_power2_divisions":
		return c.setDivisions(toks, i)
	case "expandable_segments":
		b, err := allocBool(v)
		c.ExpandableSegments = b
		return i, err
	case "release_lock_on_cudamalloc", "release_lock_on_hipmalloc", "pinned_use_cuda_host_register",
		"pinned_use_hip_host_register", "pinned_use_background_threads", "graph_capture_record_stream_reuse":
		// Locking and pinned host memory: nothing on the GPU changes.
		_, err := allocBool(v)
		return i, err
	case "pinned_num_register_threads", "pinned_reserve_segment_size_mb":
		n, err := strconv.ParseUint(v, 10, 63)
		if err != nil || n == 0 {
			return i, fmt.Errorf("%q: want a positive whole number", v)
		}
	default:
		return i, fmt.Errorf("unknown key (want expandable_segments, max_split_size_mb, max_non_split_rounding_mb, " +
			"garbage_collection_threshold, roundup_power2_divisions, backend, or a pinned_* or release_lock_* key)")
	}
	if isAllocPunct(v) {
		return i, fmt.Errorf("missing value")
	}
	return i, nil
}

// allocBool reads a boolean as PyTorch's ConfigTokenizer::toBool does:
// True or False, nothing else.
func allocBool(v string) (bool, error) {
	switch v {
	case "True":
		return true, nil
	case "False":
		return false, nil
	}
	return false, fmt.Errorf("%q: want True or False (PyTorch accepts no other spelling)", v)
}

// allocMiB reads a size in whole MiB of at least least MiB, capped as
// PyTorch caps it (at the largest size_t divided by 1 MiB; here at the
// largest units.Bytes).
func allocMiB(v string, least uint64) (units.Bytes, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want a whole number of MiB", v)
	}
	if n < least {
		return 0, fmt.Errorf("%d MiB: want at least %d (the allocator's 20 MiB large buffer)", n, least)
	}
	if n > uint64(units.MaxBytes/units.MiB) {
		return units.MaxBytes, nil
	}
	return units.Bytes(n) * units.MiB, nil
}

// setDivisions reads roundup_power2_divisions: one power of two for
// every size, or a list "[256:1,512:2,1024:4,>:8]" of interval
// boundaries in MiB (powers of two) with their divisions (powers of two,
// or 0 to round to 512 bytes only), ">" setting every interval after the
// last boundary. The first boundary's value also holds for every
// interval below it (parseRoundUpPower2Divisions).
func (c *AllocConf) setDivisions(toks []string, i int) (int, error) {
	if toks[i] != "[" {
		n, err := allocDivisions(toks[i], false)
		if err != nil {
			return i, err
		}
		for j := range c.RoundupDivisions {
			c.RoundupDivisions[j] = n
		}
		return i, nil
	}
	first, last := true, 0
	for i++; i < len(toks) && toks[i] != "]"; i++ {
		bound := toks[i]
		if i+2 >= len(toks) || toks[i+1] != ":" {
			return i, fmt.Errorf("want [boundary:divisions,...,>:divisions], such as [256:1,512:2,>:4]")
		}
		n, err := allocDivisions(toks[i+2], true)
		if err != nil {
			return i, err
		}
		i += 2
		if bound == ">" {
			for j := last + 1; j < roundupIntervals; j++ {
				c.RoundupDivisions[j] = n
			}
		} else {
			b, err := strconv.ParseUint(bound, 10, 64)
			if err != nil || b == 0 || b&(b-1) != 0 {
				return i, fmt.Errorf("boundary %q: want a power of two (MiB)", bound)
			}
			idx := min(bits.Len64(b)-1, roundupIntervals-1)
			if first {
				for j := 0; j < idx; j++ {
					c.RoundupDivisions[j] = n
				}
				first = false
			}
			c.RoundupDivisions[idx], last = n, idx
		}
		if i+1 < len(toks) && toks[i+1] == "," {
			i++
		}
	}
	if i >= len(toks) {
		return i, fmt.Errorf("want a closing ] after the list")
	}
	return i, nil
}

// allocDivisions reads a number of divisions: a power of two (2 or more
// rounds; 1 does nothing), or 0 inside a list.
func allocDivisions(v string, zero bool) (int, error) {
	n, err := strconv.ParseUint(v, 10, 31)
	if err != nil || (n == 0 && !zero) || (n != 0 && n&(n-1) != 0) {
		return 0, fmt.Errorf("divisions %q: want a power of two", v)
	}
	return int(n), nil
}

// divisionsFor is roundup_power2_divisions(size): the divisions of the
// power-of-two interval size falls in (AcceleratorAllocatorConfig::
// roundup_power2_divisions: intervals start at 1 MiB, sizes below 2 MiB
// use the first).
func (c *AllocConf) divisionsFor(size uint64) int {
	log := bits.Len64(size) - 1
	idx := 0
	if log > 20 {
		idx = log - 20
	}
	return c.RoundupDivisions[min(idx, roundupIntervals-1)]
}

// nonSplitRounding is max_non_split_rounding_mb in bytes, its default
// when unset.
func (c *AllocConf) nonSplitRounding() uint64 {
	if c.MaxNonSplitRounding > 0 {
		return uint64(c.MaxNonSplitRounding)
	}
	return uint64(defaultNonSplitRounding)
}

// maxSplit is max_split_size_mb in bytes, the largest size when unset.
func (c *AllocConf) maxSplit() uint64 {
	if c.MaxSplitSize > 0 {
		return uint64(c.MaxSplitSize)
	}
	return math.MaxUint64
}

// String writes the configuration back as PYTORCH_CUDA_ALLOC_CONF takes
// it, the settings that differ from the defaults only ("" for the
// default configuration).
func (c AllocConf) String() string {
	var parts []string
	if c.Backend != "" && c.Backend != "native" {
		parts = append(parts, "backend:"+c.Backend)
	}
	if c.ExpandableSegments {
		parts = append(parts, "expandable_segments:True")
	}
	if c.MaxSplitSize > 0 {
		parts = append(parts, "max_split_size_mb:"+strconv.FormatInt(int64(c.MaxSplitSize/units.MiB), 10))
	}
	if c.MaxNonSplitRounding > 0 {
		parts = append(parts, "max_non_split_rounding_mb:"+strconv.FormatInt(int64(c.MaxNonSplitRounding/units.MiB), 10))
	}
	if c.GCThreshold > 0 {
		parts = append(parts, "garbage_collection_threshold:"+strconv.FormatFloat(c.GCThreshold, 'g', -1, 64))
	}
	if d := c.divisionsString(); d != "" {
		parts = append(parts, "roundup_power2_divisions:"+d)
	}
	return strings.Join(parts, ",")
}

// divisionsString writes RoundupDivisions as a list, or as one number
// when every interval has the same divisions ("" when none rounds).
func (c *AllocConf) divisionsString() string {
	d := c.RoundupDivisions
	same := true
	for _, n := range d {
		same = same && n == d[0]
	}
	switch {
	case same && d[0] == 0:
		return ""
	case same:
		return strconv.Itoa(d[0])
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, n := range d {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(1<<i) + ":" + strconv.Itoa(n))
	}
	b.WriteByte(']')
	return b.String()
}
