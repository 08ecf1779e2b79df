package gpu

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// ErrUnknown reports a GPU name that is neither a catalog name nor an alias.
var ErrUnknown = errors.New("unknown GPU")

// ErrAmbiguous reports a name that matches boards with different memory
// sizes (such as "a100", 40 or 80 GB), so no single answer is safe.
var ErrAmbiguous = errors.New("ambiguous GPU name")

// GPU is one accelerator kind as a job sees it: one device of that kind.
type GPU struct {
	// Name is the canonical catalog name, e.g. "H100-SXM".
	Name string `json:"name"`
	// Vendor is "nvidia", "amd" or "intel".
	Vendor string `json:"vendor"`
	// NominalGB is the marketing capacity ("80 GB"), for display only.
	NominalGB int `json:"nominal_gb"`
	// Memory is the device memory as the driver reports its total, in bytes:
	// nvidia-smi's "Total" (MiB), rocm-smi's "VRAM Total Memory" or hl-smi's
	// memory.total. Feasibility compares device peaks against it.
	Memory units.Bytes `json:"memory_bytes"`
	// Arch is the architecture generation: volta, turing, ampere, ada,
	// hopper, blackwell, cdna2, cdna3, gaudi2, gaudi3.
	Arch string `json:"arch"`
	// ComputeCapability is the CUDA compute capability ("9.0") for NVIDIA
	// boards and the LLVM target ("gfx942") for AMD ones; empty for Gaudi.
	ComputeCapability string `json:"compute_capability,omitempty"`
	// BF16, FP8 and FP4 say whether the matrix units compute natively in
	// that format (not whether weights can be stored in it).
	BF16 bool `json:"bf16"`
	FP8  bool `json:"fp8"`
	FP4  bool `json:"fp4"`
	// FormFactor is PCIe, SXM, OAM or Superchip.
	FormFactor string `json:"form_factor,omitempty"`
	// Aliases are other names Lookup accepts.
	Aliases []string `json:"aliases,omitempty"`
	// MemorySource says where the Memory figure comes from or how it was derived.
	MemorySource string `json:"memory_source"`
	// CUDAMemory is the total CUDA reports to a process
	// (torch.cuda.mem_get_info, the "total capacity" of PyTorch's
	// out-of-memory message), where a log shows it; 0 when unknown. It is
	// a few hundred MiB below Memory on recent drivers, which keep some
	// memory for themselves. vLLM sizes its budget from it.
	CUDAMemory units.Bytes `json:"cuda_memory_bytes,omitempty"`
	// CUDAMemorySource says where CUDAMemory comes from.
	CUDAMemorySource string `json:"cuda_memory_source,omitempty"`
}

// CUDATotal returns the memory CUDA reports as the device total:
// CUDAMemory when known, else Memory.
func (g GPU) CUDATotal() units.Bytes {
	if g.CUDAMemory > 0 {
		return g.CUDAMemory
	}
	return g.Memory
}

// SM returns the CUDA compute capability as major*10+minor (90 for
// Hopper, 100 for B200), or 0 for non-NVIDIA boards. Runtime overheads
// differ from sm90 on: PyTorch sizes the cuBLAS workspace at 32 MiB
// instead of 8 MiB there (MODEL.md §10).
func (g GPU) SM() int {
	if g.Vendor != "nvidia" {
		return 0
	}
	major, minor, ok := strings.Cut(g.ComputeCapability, ".")
	if !ok {
		return 0
	}
	a, err1 := strconv.Atoi(major)
	b, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil || b > 9 {
		return 0
	}
	return a*10 + b
}

// Supports reports whether the board computes natively in dtype (fp32,
// tf32, fp16, bf16, fp8, fp4/nvfp4/mxfp4). Weight-only formats (int8,
// int4, nf4) are dequantized to fp16/bf16 before each matmul, so they are
// supported wherever fp16 is. Unknown dtypes report false.
func (g GPU) Supports(dtype string) bool {
	switch strings.ToLower(strings.TrimSpace(dtype)) {
	case "fp32", "float32", "fp16", "float16", "half", "int8", "int4", "nf4":
		return true
	case "tf32":
		return g.Vendor != "nvidia" || g.SM() >= 80
	case "bf16", "bfloat16":
		return g.BF16
	case "fp8", "float8", "e4m3", "e5m2":
		return g.FP8
	case "fp4", "nvfp4", "mxfp4", "float4":
		return g.FP4
	}
	return false
}

// clone returns g with its own copy of the aliases, so callers cannot
// change a catalog through a returned value.
func (g GPU) clone() GPU {
	g.Aliases = slices.Clone(g.Aliases)
	return g
}

// String returns the name and usable memory, e.g. "H100-SXM (79.65 GiB)".
func (g GPU) String() string { return fmt.Sprintf("%s (%s)", g.Name, g.Memory) }

// Catalog is a set of GPUs indexed by name and alias. The zero value is
// empty; [Default] returns the built-in catalog.
type Catalog struct {
	gpus  []GPU
	index map[string]int // normalized name or alias -> position in gpus
}

// All returns the catalog's GPUs ordered by memory, then name.
func (c *Catalog) All() []GPU {
	out := make([]GPU, len(c.gpus))
	for i, g := range c.gpus {
		out[i] = g.clone()
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Memory != out[j].Memory {
			return out[i].Memory < out[j].Memory
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Lookup returns the GPU named name: a catalog name or alias, compared
// case-insensitively and ignoring punctuation and a vendor prefix, so
// "NVIDIA H100 80GB HBM3" (nvidia-smi's name) and "h100-80gb" both work.
func (c *Catalog) Lookup(name string) (GPU, error) {
	key := normalize(name)
	if key == "" {
		return GPU{}, fmt.Errorf("gpu %q: %w (empty name)", name, ErrUnknown)
	}
	if i, ok := c.index[key]; ok {
		return c.gpus[i].clone(), nil
	}
	if cands := c.prefixMatches(key); len(cands) > 0 {
		return c.resolvePrefix(name, cands)
	}
	return GPU{}, fmt.Errorf("gpu %q: %w (run 'gpumem gpus' for the list)", name, ErrUnknown)
}

// prefixMatches returns the GPUs whose normalized name starts with key, so
// that "a100" finds every A100 board.
func (c *Catalog) prefixMatches(key string) []int {
	seen := map[int]bool{}
	var out []int
	for k, i := range c.index {
		if strings.HasPrefix(k, key) && !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	sort.Ints(out)
	return out
}

// resolvePrefix accepts a partial name when every match has the same
// memory (the answer does not depend on which board was meant).
func (c *Catalog) resolvePrefix(name string, cands []int) (GPU, error) {
	first := c.gpus[cands[0]]
	names := make([]string, len(cands))
	same := true
	for n, i := range cands {
		names[n] = c.gpus[i].Name
		if c.gpus[i].Memory != first.Memory {
			same = false
		}
	}
	if same {
		return first.clone(), nil
	}
	return GPU{}, fmt.Errorf("gpu %q: %w: matches %s with different memory sizes", name, ErrAmbiguous, strings.Join(names, ", "))
}

// vendorPrefixes are brand words nvidia-smi, rocm-smi and users put in
// front of a model name; Lookup ignores them.
var vendorPrefixes = []string{"nvidia", "geforce", "tesla", "amd", "instinct", "intel", "habana"}

// normalize lower-cases s, drops everything but letters and digits, and
// strips leading vendor words.
func normalize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	k := b.String()
	for changed := true; changed; {
		changed = false
		for _, p := range vendorPrefixes {
			if strings.HasPrefix(k, p) && len(k) > len(p) {
				k = k[len(p):]
				changed = true
			}
		}
	}
	return k
}
