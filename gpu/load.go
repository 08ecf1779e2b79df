package gpu

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gpumem/gpumem/internal/fsutil"
	"github.com/gpumem/gpumem/internal/jsonkeys"
	"github.com/gpumem/gpumem/internal/yamldoc"
	"github.com/gpumem/gpumem/units"
)

//go:embed gpus.json
var builtinJSON []byte

// MaxFileSize bounds a catalog or data-type file read by [LoadFile] and
// [LoadDataTypes], so a wrong path (a checkpoint, a log) fails fast.
const MaxFileSize = 4 << 20

// maxMemory bounds one device's memory; larger values are typos (a size
// in bytes given as MiB, say).
const maxMemory = 64 * units.TiB

var (
	builtinOnce sync.Once
	builtin     *Catalog
	builtinErr  error
)

// Default returns the built-in catalog. It panics only if the embedded
// file is broken, which the package tests rule out.
func Default() *Catalog {
	builtinOnce.Do(func() {
		gs, err := Parse(builtinJSON, "gpus.json")
		if err == nil {
			builtin, err = New(gs)
		}
		builtinErr = err
	})
	if builtinErr != nil {
		panic("gpu: built-in catalog: " + builtinErr.Error())
	}
	return builtin
}

// Lookup finds name in the built-in catalog; see [Catalog.Lookup].
func Lookup(name string) (GPU, error) { return Default().Lookup(name) }

// All lists the built-in catalog; see [Catalog.All].
func All() []GPU { return Default().All() }

// New builds a catalog from gpus. A name or alias used by two different
// GPUs is an error.
func New(gpus []GPU) (*Catalog, error) {
	c := &Catalog{index: map[string]int{}}
	for _, g := range gpus {
		if err := c.add(g, false); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// add inserts g. With replace, an entry of the same name is overwritten
// and aliases that pointed elsewhere move to g (a user file overrides the
// built-ins); without it, any clash is an error.
func (c *Catalog) add(g GPU, replace bool) error {
	pos := len(c.gpus)
	for i := range c.gpus {
		if normalize(c.gpus[i].Name) == normalize(g.Name) {
			if !replace {
				return fmt.Errorf("gpu %q: duplicate name", g.Name)
			}
			pos = i
		}
	}
	keys := append([]string{g.Name}, g.Aliases...)
	for _, k := range keys {
		if i, ok := c.index[normalize(k)]; ok && i != pos && !replace {
			return fmt.Errorf("gpu %q: name or alias %q is already used by %q", g.Name, k, c.gpus[i].Name)
		}
	}
	if pos == len(c.gpus) {
		c.gpus = append(c.gpus, g)
	} else {
		c.gpus[pos] = g
	}
	for _, k := range keys {
		c.index[normalize(k)] = pos
	}
	return nil
}

// Merge returns a copy of c with gpus added; an entry whose name matches
// an existing GPU replaces it, and its aliases take precedence.
func (c *Catalog) Merge(gpus []GPU) (*Catalog, error) {
	out := &Catalog{gpus: append([]GPU(nil), c.gpus...), index: make(map[string]int, len(c.index))}
	for k, v := range c.index {
		out.index[k] = v
	}
	seen := map[string]string{}
	for _, g := range gpus {
		for _, k := range append([]string{g.Name}, g.Aliases...) {
			if prev, ok := seen[normalize(k)]; ok && prev != g.Name {
				return nil, fmt.Errorf("gpu %q: name or alias %q is already used by %q in the same file", g.Name, k, prev)
			}
			seen[normalize(k)] = g.Name
		}
		if err := out.add(g, true); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LoadFile reads a JSON or YAML file of GPU entries (a list, or an object
// with a "gpus" list) in the format of the built-in gpus.json and returns
// the built-in catalog merged with it: an entry named like a built-in GPU
// replaces it, other entries are added.
func LoadFile(path string) (*Catalog, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	gs, err := Parse(data, filepath.Base(path))
	if err != nil {
		return nil, err
	}
	c, err := Default().Merge(gs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return c, nil
}

// readBounded reads at most MaxFileSize bytes of path.
func readBounded(path string) ([]byte, error) {
	data, err := fsutil.ReadFile(path, MaxFileSize)
	if _, ok := errors.AsType[*fsutil.TooLargeError](err); ok {
		return nil, fmt.Errorf("read %s: larger than %d bytes", path, MaxFileSize)
	}
	return data, err
}

// entry is one GPU as written in a catalog file. Memory is given exactly
// once: memory_mib (what nvidia-smi prints), memory_bytes, or memory (a
// size with a unit, "80GiB").
type entry struct {
	Name              string   `json:"name"`
	Vendor            string   `json:"vendor"`
	NominalGB         int      `json:"nominal_gb"`
	MemoryMiB         int64    `json:"memory_mib"`
	MemoryBytes       int64    `json:"memory_bytes"`
	Memory            string   `json:"memory"`
	Arch              string   `json:"arch"`
	ComputeCapability string   `json:"compute_capability"`
	BF16              bool     `json:"bf16"`
	FP8               bool     `json:"fp8"`
	FP4               bool     `json:"fp4"`
	FormFactor        string   `json:"form_factor"`
	Aliases           []string `json:"aliases"`
	MemorySource      string   `json:"memory_source"`
	CUDAMemoryBytes   int64    `json:"cuda_memory_bytes"`
	CUDAMemory        string   `json:"cuda_memory"`
	CUDAMemorySource  string   `json:"cuda_memory_source"`
}

// Parse decodes catalog entries from data, JSON or YAML (YAML is tried
// when data does not start like JSON). file names the input in errors.
func Parse(data []byte, file string) ([]GPU, error) {
	js, err := toJSON(data, file)
	if err != nil {
		return nil, err
	}
	var es []entry
	if t := bytes.TrimSpace(js); len(t) > 0 && t[0] == '{' {
		var wrap struct {
			GPUs []entry `json:"gpus"`
		}
		if err := strictUnmarshal(js, &wrap); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		es = wrap.GPUs
	} else if err := strictUnmarshal(js, &es); err != nil {
		return nil, fmt.Errorf("%s: %w (want a list of GPU entries or {\"gpus\": [...]})", file, err)
	}
	out := make([]GPU, 0, len(es))
	for i, e := range es {
		g, err := e.gpu()
		if err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", file, i, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// toJSON converts YAML input to JSON so one strict decoder validates both.
func toJSON(data []byte, file string) ([]byte, error) {
	t := bytes.TrimSpace(data)
	if len(t) == 0 {
		return nil, fmt.Errorf("%s: empty file", file)
	}
	if t[0] == '[' || t[0] == '{' {
		if err := jsonkeys.Check(t); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return t, nil
	}
	v, err := yamldoc.Decode(t)
	if yamldoc.IsDuplicate(err) {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: not JSON or YAML: %w", file, err)
	}
	js, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return js, nil
}

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the first JSON value")
	}
	return nil
}

var vendors = map[string]bool{"nvidia": true, "amd": true, "intel": true}

// gpu validates e and converts it.
func (e entry) gpu() (GPU, error) {
	name := strings.TrimSpace(e.Name)
	if name == "" || normalize(name) == "" {
		return GPU{}, errors.New(`"name": want a non-empty name with letters or digits`)
	}
	mem, err := e.memory()
	if err != nil {
		return GPU{}, fmt.Errorf("gpu %q: %w", name, err)
	}
	vendor := strings.ToLower(strings.TrimSpace(e.Vendor))
	if !vendors[vendor] {
		return GPU{}, fmt.Errorf("gpu %q: \"vendor\": %q, want nvidia, amd or intel", name, e.Vendor)
	}
	if e.NominalGB < 0 {
		return GPU{}, fmt.Errorf("gpu %q: \"nominal_gb\": must not be negative", name)
	}
	g := GPU{
		Name: name, Vendor: vendor, NominalGB: e.NominalGB, Memory: mem,
		Arch: strings.ToLower(strings.TrimSpace(e.Arch)), ComputeCapability: strings.TrimSpace(e.ComputeCapability),
		BF16: e.BF16, FP8: e.FP8, FP4: e.FP4, FormFactor: e.FormFactor,
		Aliases: e.Aliases, MemorySource: e.MemorySource,
	}
	if g.CUDAMemory, err = e.cudaMemory(mem); err != nil {
		return GPU{}, fmt.Errorf("gpu %q: %w", name, err)
	}
	g.CUDAMemorySource = e.CUDAMemorySource
	if vendor == "nvidia" && g.ComputeCapability != "" && g.SM() == 0 {
		return GPU{}, fmt.Errorf("gpu %q: \"compute_capability\": %q, want major.minor such as 9.0", name, e.ComputeCapability)
	}
	for _, a := range g.Aliases {
		if normalize(a) == "" {
			return GPU{}, fmt.Errorf("gpu %q: \"aliases\": %q has no letters or digits", name, a)
		}
	}
	return g, nil
}

// cudaMemory resolves the optional CUDA total, which cannot exceed the
// driver's total.
func (e entry) cudaMemory(total units.Bytes) (units.Bytes, error) {
	var b units.Bytes
	switch {
	case e.CUDAMemoryBytes != 0 && e.CUDAMemory != "":
		return 0, errors.New("set only one of \"cuda_memory_bytes\" and \"cuda_memory\"")
	case e.CUDAMemoryBytes != 0:
		b = units.Bytes(e.CUDAMemoryBytes)
	case e.CUDAMemory != "":
		v, err := units.ParseBytes(e.CUDAMemory)
		if err != nil {
			return 0, fmt.Errorf("\"cuda_memory\": %w", err)
		}
		b = v
	default:
		return 0, nil
	}
	if b <= 0 || b > total {
		return 0, fmt.Errorf("\"cuda_memory\": %d bytes, want a positive size at most the memory total %d", int64(b), int64(total))
	}
	return b, nil
}

// memory resolves the one memory field that is set.
func (e entry) memory() (units.Bytes, error) {
	set := 0
	var b units.Bytes
	if e.MemoryMiB != 0 {
		set++
		if e.MemoryMiB < 0 || e.MemoryMiB > int64(maxMemory/units.MiB) {
			return 0, fmt.Errorf("\"memory_mib\": %d out of range (1..%d)", e.MemoryMiB, maxMemory/units.MiB)
		}
		b = units.Bytes(e.MemoryMiB) * units.MiB
	}
	if e.MemoryBytes != 0 {
		set++
		if e.MemoryBytes < 0 || units.Bytes(e.MemoryBytes) > maxMemory {
			return 0, fmt.Errorf("\"memory_bytes\": %d out of range (1..%d)", e.MemoryBytes, int64(maxMemory))
		}
		b = units.Bytes(e.MemoryBytes)
	}
	if e.Memory != "" {
		set++
		v, err := units.ParseBytes(e.Memory)
		if err != nil {
			return 0, fmt.Errorf("\"memory\": %w", err)
		}
		if v <= 0 || v > maxMemory {
			return 0, fmt.Errorf("\"memory\": %q out of range", e.Memory)
		}
		b = v
	}
	switch set {
	case 0:
		return 0, errors.New("no memory: set one of \"memory_mib\" (as nvidia-smi prints), \"memory_bytes\" or \"memory\" (\"80GiB\")")
	case 1:
		return b, nil
	}
	return 0, errors.New("set only one of \"memory_mib\", \"memory_bytes\" and \"memory\"")
}
