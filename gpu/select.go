package gpu

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// Filter returns the GPUs of all whose name, alias, vendor or
// architecture contains filter, compared case-insensitively; an empty
// filter keeps every GPU. The result is never nil, so it encodes as a
// JSON list.
func Filter(all []GPU, filter string) []GPU {
	filter = strings.ToLower(filter)
	out := []GPU{}
	for _, g := range all {
		hay := strings.ToLower(strings.Join(append([]string{g.Name, g.Vendor, g.Arch}, g.Aliases...), " "))
		if filter == "" || strings.Contains(hay, filter) {
			out = append(out, g)
		}
	}
	return out
}

// ErrMemoryForMany reports a memory size given with several GPU names:
// it describes one board.
var ErrMemoryForMany = errors.New("a memory size applies to one GPU")

// NameError is a name [Catalog.Select] could not look up.
type NameError struct {
	// Index is the position of the name in the list.
	Index int
	// Err is the lookup error, wrapping [ErrUnknown] or [ErrAmbiguous].
	Err error
}

// Error returns the lookup error's text.
func (e *NameError) Error() string { return e.Err.Error() }

// Unwrap returns the lookup error.
func (e *NameError) Unwrap() error { return e.Err }

// CustomName is the name [Catalog.Select] gives a board known only by
// its memory size.
const CustomName = "custom"

// Select resolves a choice of GPUs as the planning front ends take it:
// names to look up, and a memory size (0 if none) that describes a board.
// With one name, mem replaces the board's memory figures (the user
// measured their own); with none, it makes an NVIDIA board named
// [CustomName]; with several it is an error wrapping [ErrMemoryForMany].
// source says where mem came from (a flag or key) and becomes the
// board's MemorySource. With neither names nor mem, Select returns every
// GPU of the catalog. A name that does not resolve is a [*NameError].
func (c *Catalog) Select(names []string, mem units.Bytes, source string) ([]GPU, error) {
	gs := make([]GPU, 0, len(names))
	for i, n := range names {
		g, err := c.Lookup(n)
		if err != nil {
			return nil, &NameError{Index: i, Err: err}
		}
		gs = append(gs, g)
	}
	switch {
	case mem > 0 && len(gs) > 1:
		return nil, fmt.Errorf("%w; %d GPUs named", ErrMemoryForMany, len(gs))
	case mem > 0 && len(gs) == 1:
		gs[0].Memory, gs[0].CUDAMemory = mem, 0
		gs[0].MemorySource, gs[0].CUDAMemorySource = source, ""
	case mem > 0:
		gs = []GPU{{Name: CustomName, Vendor: "nvidia", Memory: mem, MemorySource: source}}
	case len(gs) == 0:
		gs = c.All()
	}
	return gs, nil
}
