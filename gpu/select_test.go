package gpu

import (
	"errors"
	"testing"

	"github.com/gpumem/gpumem/units"
)

func TestFilter(t *testing.T) {
	all := Default().All()
	tests := []struct {
		filter string
		want   []string // names that must be kept
		not    []string // names that must be dropped
	}{
		{"", []string{"H100-SXM", "MI300X", "Gaudi3"}, nil},
		{"H100", []string{"H100-SXM", "H100-PCIe", "H100-NVL"}, []string{"A100-SXM-80GB", "MI300X"}},
		{"amd", []string{"MI250X", "MI300X", "MI325X"}, []string{"H100-SXM"}},
		{"HOPPER", []string{"H100-SXM", "H200", "H20"}, []string{"B200"}},
		{"sxm4", []string{"A100-SXM-40GB", "A100-SXM-80GB"}, []string{"A100-PCIe-80GB"}}, // an alias
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			got := map[string]bool{}
			for _, g := range Filter(all, tt.filter) {
				got[g.Name] = true
			}
			for _, n := range tt.want {
				if !got[n] {
					t.Errorf("Filter(%q) dropped %s", tt.filter, n)
				}
			}
			for _, n := range tt.not {
				if got[n] {
					t.Errorf("Filter(%q) kept %s", tt.filter, n)
				}
			}
		})
	}
	if got := Filter(all, "no-such-board"); got == nil || len(got) != 0 {
		t.Errorf("no match: %v, want an empty non-nil list", got)
	}
	if got := Filter(all, ""); len(got) != len(all) {
		t.Errorf("empty filter kept %d of %d", len(got), len(all))
	}
}

func TestSelect(t *testing.T) {
	c := Default()
	h100, _ := c.Lookup("H100-SXM")
	tests := []struct {
		name    string
		names   []string
		mem     units.Bytes
		want    []string
		wantMem units.Bytes // of the first GPU, when set
		err     error
	}{
		{"all", nil, 0, nil, 0, nil},
		{"named", []string{"h100", "mi300x"}, 0, []string{"H100-SXM", "MI300X"}, h100.Memory, nil},
		{"memory of one board", []string{"h100"}, 70 * units.GiB, []string{"H100-SXM"}, 70 * units.GiB, nil},
		{"custom board", nil, 20 * units.GiB, []string{CustomName}, 20 * units.GiB, nil},
		{"memory with two boards", []string{"h100", "l4"}, 20 * units.GiB, nil, 0, ErrMemoryForMany},
		{"unknown", []string{"h100", "voodoo5"}, 0, nil, 0, ErrUnknown},
		{"ambiguous", []string{"a100"}, 0, nil, 0, ErrAmbiguous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gs, err := c.Select(tt.names, tt.mem, "--gpu-memory")
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				var ne *NameError
				if errors.As(err, &ne) && ne.Index != 1 && tt.name == "unknown" {
					t.Errorf("NameError index %d, want 1", ne.Index)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if len(gs) != len(c.All()) {
					t.Errorf("%d GPUs, want the whole catalog", len(gs))
				}
				return
			}
			if len(gs) != len(tt.want) {
				t.Fatalf("got %v, want %v", gs, tt.want)
			}
			for i, n := range tt.want {
				if gs[i].Name != n {
					t.Errorf("gs[%d] = %s, want %s", i, gs[i].Name, n)
				}
			}
			if gs[0].Memory != tt.wantMem || (tt.mem > 0 && (gs[0].CUDATotal() != tt.mem || gs[0].MemorySource != "--gpu-memory")) {
				t.Errorf("memory %d (CUDA %d, source %q), want %d", gs[0].Memory, gs[0].CUDATotal(), gs[0].MemorySource, tt.wantMem)
			}
		})
	}
	// Select must not change the catalog through the returned boards.
	if g, _ := c.Lookup("H100-SXM"); g.Memory != h100.Memory || g.CUDAMemory != h100.CUDAMemory {
		t.Errorf("catalog changed: %+v", g)
	}
}
