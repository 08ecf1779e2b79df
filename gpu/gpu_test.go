package gpu

import (
	"errors"
	"testing"

	"github.com/gpumem/gpumem/units"
)

func TestBuiltinCatalogIsValid(t *testing.T) {
	all := All()
	if len(all) < 30 {
		t.Fatalf("built-in catalog has %d GPUs, want at least 30", len(all))
	}
	for _, g := range all {
		if g.Memory < 8*units.GiB || g.Memory > 512*units.GiB {
			t.Errorf("%s: memory %v out of the plausible range", g.Name, g.Memory)
		}
		if g.MemorySource == "" {
			t.Errorf("%s: no memory_source", g.Name)
		}
		// Driver totals sit within a few percent of the nominal size,
		// below it when nominal is decimal GB rounded up, above it when
		// the board has that many GiB.
		nominal := float64(g.NominalGB) * 1e9
		if r := float64(g.Memory) / nominal; r < 0.85 || r > 1.1 {
			t.Errorf("%s: memory %v is %.2f x the nominal %d GB", g.Name, g.Memory, r, g.NominalGB)
		}
		if g.Vendor == "nvidia" && g.SM() == 0 {
			t.Errorf("%s: no compute capability", g.Name)
		}
		if g.FP4 && !g.FP8 || g.FP8 && !g.BF16 {
			t.Errorf("%s: format support not nested (fp4 implies fp8 implies bf16)", g.Name)
		}
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name     string
		want     string
		wantMiB  int64
		wantSM   int
		wantFP8  bool
		wantBF16 bool
	}{
		{"h100", "H100-SXM", 81559, 90, true, true},
		{"H100-80GB", "H100-SXM", 81559, 90, true, true},
		{"NVIDIA H100 80GB HBM3", "H100-SXM", 81559, 90, true, true},
		{"NVIDIA H100 PCIe", "H100-PCIe", 81559, 90, true, true},
		{"h100 nvl", "H100-NVL", 95830, 90, true, true},
		{"a100-80g", "A100-SXM-80GB", 81920, 80, false, true},
		{"NVIDIA A100-SXM4-40GB", "A100-SXM-40GB", 40960, 80, false, true},
		{"4090", "RTX-4090", 24564, 89, true, true},
		{"NVIDIA GeForce RTX 3090", "RTX-3090", 24576, 86, false, true},
		{"rtx 5090", "RTX-5090", 32607, 120, true, true},
		{"Tesla T4", "T4", 15360, 75, false, false},
		{"Tesla V100-SXM2-32GB", "V100-32GB", 32768, 70, false, false},
		{"A10G", "A10G", 23028, 86, false, true},
		{"l4", "L4", 23034, 89, true, true},
		{"L40S", "L40S", 46068, 89, true, true},
		{"NVIDIA H200", "H200", 143771, 90, true, true},
		{"b200", "B200", 183359, 100, true, true},
		{"NVIDIA GB200", "GB200", 189471, 100, true, true},
		{"AMD Instinct MI300X", "MI300X", 196288, 0, true, true},
		{"mi250x", "MI250X", 65520, 0, false, true},
		{"mi325x", "MI325X", 261824, 0, true, true},
		{"HL-225", "Gaudi2", 98304, 0, true, true},
		{"gaudi3", "Gaudi3", 131072, 0, true, true},
		{"H100-96GB", "H100-96GB", 97871, 90, true, true},
		{"NVIDIA H20", "H20", 97871, 90, true, true},
		{"NVIDIA RTX A6000", "RTX-A6000", 49140, 86, false, true},
		{"NVIDIA A40", "A40", 46068, 86, false, true},
		{"NVIDIA A800-SXM4-80GB", "A800-SXM-80GB", 81920, 80, false, true},
		{"NVIDIA H800 80GB HBM3", "H800-SXM", 81559, 90, true, true},
		{"h800", "H800-SXM", 81559, 90, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Lookup(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if g.Name != tt.want {
				t.Errorf("name = %s, want %s", g.Name, tt.want)
			}
			if got := int64(g.Memory / units.MiB); got != tt.wantMiB || g.Memory%units.MiB != 0 {
				t.Errorf("memory = %d B, want %d MiB", int64(g.Memory), tt.wantMiB)
			}
			if g.SM() != tt.wantSM || g.FP8 != tt.wantFP8 || g.BF16 != tt.wantBF16 {
				t.Errorf("sm/fp8/bf16 = %d/%v/%v, want %d/%v/%v", g.SM(), g.FP8, g.BF16, tt.wantSM, tt.wantFP8, tt.wantBF16)
			}
		})
	}
}

func TestCUDATotal(t *testing.T) {
	tests := []struct {
		gpu  string
		want units.Bytes
	}{
		{"h100", units.FromFloat(79.19 * float64(units.GiB))},
		{"a100-80g", units.FromFloat(79.15 * float64(units.GiB))},
		{"l4", 23034 * units.MiB}, // unknown: the driver total
	}
	for _, tt := range tests {
		g, _ := Lookup(tt.gpu)
		if got := g.CUDATotal(); got != tt.want {
			t.Errorf("%s: CUDA total %d, want %d", tt.gpu, got, tt.want)
		}
		if g.CUDATotal() > g.Memory {
			t.Errorf("%s: CUDA total above the driver total", tt.gpu)
		}
		if g.CUDAMemory > 0 && g.CUDAMemorySource == "" {
			t.Errorf("%s: CUDA total without a source", tt.gpu)
		}
	}
}

func TestLookupErrors(t *testing.T) {
	tests := []struct {
		name string
		want error
	}{
		{"a100", ErrAmbiguous},
		{"v100", ErrAmbiguous},
		{"rtx", ErrAmbiguous},
		{"", ErrUnknown},
		{"---", ErrUnknown},
		{"tpu-v5e", ErrUnknown},
		{"h1000", ErrUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Lookup(tt.name)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Lookup(%q) error = %v, want %v", tt.name, err, tt.want)
			}
		})
	}
}

func TestPrefixWithOneMemorySize(t *testing.T) {
	// "h100-pc" is a prefix of H100-PCIe's name and alias only.
	g, err := Lookup("h100-pc")
	if err != nil || g.Name != "H100-PCIe" {
		t.Fatalf("Lookup(h100-pc) = %v, %v", g.Name, err)
	}
}

func TestSupports(t *testing.T) {
	tests := []struct {
		gpu, dtype string
		want       bool
	}{
		{"v100-32gb", "bf16", false},
		{"v100-32gb", "fp16", true},
		{"v100-32gb", "tf32", false},
		{"t4", "nf4", true},
		{"a100-80g", "bf16", true},
		{"a100-80g", "tf32", true},
		{"a100-80g", "fp8", false},
		{"h100", "fp8", true},
		{"h100", "fp4", false},
		{"b200", "nvfp4", true},
		{"mi300x", "fp8", true},
		{"h100", "fp3", false},
	}
	for _, tt := range tests {
		g, err := Lookup(tt.gpu)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Supports(tt.dtype); got != tt.want {
			t.Errorf("%s.Supports(%s) = %v, want %v", tt.gpu, tt.dtype, got, tt.want)
		}
	}
}

func TestAllSortedByMemory(t *testing.T) {
	all := All()
	for i := 1; i < len(all); i++ {
		if all[i].Memory < all[i-1].Memory {
			t.Fatalf("All() not sorted: %s before %s", all[i-1].Name, all[i].Name)
		}
	}
	all[0].Name = "changed"
	if All()[0].Name == "changed" {
		t.Fatal("All() returned the catalog's own slice")
	}
	h, _ := Lookup("h100")
	h.Aliases[0] = "changed"
	if again, _ := Lookup("h100"); again.Aliases[0] == "changed" {
		t.Fatal("Lookup shares the catalog's alias slice")
	}
}
