package plot

import (
	"bytes"
	"errors"
	"flag"
	"image/png"
	"strings"
	"testing"
	"unicode/utf8"

	goldenfile "github.com/gpumem/gpumem/internal/golden"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

var update = flag.Bool("update", false, "update .golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got, *update)
}

// kvResults are estimates of a 7B model whose memory grows linearly in x:
// 14 GiB of weights plus 0.5 MiB per token.
func kvResults(xs []int) []memory.Result {
	rs := make([]memory.Result, len(xs))
	for i, x := range xs {
		alloc := 14*units.GiB + units.Bytes(x)*units.MiB/2
		rs[i].PerGPU = memory.PerGPU{
			AllocatedPeakBytes: alloc,
			ReservedPeakBytes:  alloc + alloc/20,
			DevicePeakBytes:    alloc + alloc/20 + 600*units.MiB,
		}
	}
	return rs
}

var limits = []Limit{{"L4", 23034 * units.MiB}, {"A100-SXM-80GB", 81920 * units.MiB}, {"H100-SXM", 81559 * units.MiB}}

func TestMemoryVsSeqLenSVG(t *testing.T) {
	xs := []int{512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072}
	series, err := FromResults(xs, kvResults(xs))
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 3 {
		t.Fatalf("%d series, want allocated, reserved and device", len(series))
	}
	var a, b bytes.Buffer
	if err := MemoryVsSeqLen(&a, SVG, "Llama-2-7B inference, batch 1", series, limits); err != nil {
		t.Fatal(err)
	}
	if err := MemoryVsSeqLen(&b, SVG, "Llama-2-7B inference, batch 1", series, limits); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two renderings of the same chart differ")
	}
	svg := a.String()
	for _, want := range []string{"<svg", "sequence length (tokens)", "memory per GPU (GiB)", "H100-SXM (79.65 GiB)", "device peak (nvidia-smi)", ">128k<", ">1k<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	golden(t, "seqlen.svg", a.Bytes())
}

func TestMemoryVsBatchPNG(t *testing.T) {
	xs := []int{1, 2, 4, 8, 16, 32}
	series, _ := FromResults(xs, kvResults(xs))
	var buf bytes.Buffer
	if err := MemoryVsBatch(&buf, PNG, "batch sweep", series, limits[:1]); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	// 16 x 10 cm at 96 dpi.
	if b := img.Bounds(); b.Dx() != 605 || b.Dy() != 378 {
		t.Errorf("PNG is %dx%d, want 605x378", b.Dx(), b.Dy())
	}
	// The image is not blank: count distinct colours.
	colours := map[[4]uint32]bool{}
	for y := 0; y < img.Bounds().Dy(); y += 3 {
		for x := 0; x < img.Bounds().Dx(); x += 3 {
			r, g, b, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, b, a}] = true
		}
	}
	if len(colours) < 5 {
		t.Errorf("PNG has %d colours: blank?", len(colours))
	}
}

func TestChartErrors(t *testing.T) {
	tests := []struct {
		name string
		c    Chart
		f    Format
		want error
	}{
		{"no data", Chart{}, SVG, ErrNoData},
		{"mismatched", Chart{Series: []Series{{Name: "s", X: []int{1, 2}, Bytes: []units.Bytes{1}}}}, SVG, nil},
		{"zero on log", Chart{LogX: true, Series: []Series{{Name: "s", X: []int{0}, Bytes: []units.Bytes{1}}}}, SVG, nil},
		{"negative", Chart{Series: []Series{{Name: "s", X: []int{1}, Bytes: []units.Bytes{-1}}}}, SVG, nil},
		{"format", Chart{Series: []Series{{Name: "s", X: []int{1}, Bytes: []units.Bytes{1}}}}, Format("gif"), nil},
		{"bad limit", Chart{Series: []Series{{Name: "s", X: []int{1}, Bytes: []units.Bytes{1}}}, Limits: []Limit{{"L", 0}}}, SVG, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Write(&bytes.Buffer{}, tt.f, tt.c)
			if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want an error (%v)", err, tt.want)
			}
		})
	}
	if _, err := FromResults([]int{1}, nil); err == nil {
		t.Error("FromResults accepted mismatched lengths")
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"svg": SVG, " PNG": PNG} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("jpg"); err == nil {
		t.Error("jpg accepted")
	}
}

func TestPow2Ticks(t *testing.T) {
	ts := pow2Ticks(512, 131072)
	var labels []string
	for _, tk := range ts {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "512 1k 2k 4k 8k 16k 32k 64k 128k" {
		t.Errorf("labels %q", got)
	}
	if n := len(pow2Ticks(1, 1<<30)); n != 31 {
		t.Errorf("%d ticks for 1..2^30, want 31", n)
	}
}

func breakdownResult() memory.Result {
	return memory.Result{PerGPU: memory.PerGPU{Components: []memory.Component{
		{Name: "weights", Bytes: 13 * units.GiB},
		{Name: "gradients", Bytes: 13 * units.GiB},
		{Name: "optimizer_states", Bytes: 26 * units.GiB},
		{Name: "activations", Bytes: 9 * units.GiB},
		{Name: "loss", Bytes: 0},
		{Name: "fragmentation", Bytes: 3 * units.GiB},
		{Name: "cuda_context", Bytes: 600 * units.MiB},
	}}}
}

func TestBreakdownGolden(t *testing.T) {
	tests := []struct {
		name string
		o    BarOptions
	}{
		{"bar-unicode-80", BarOptions{Width: 80, Capacity: 81559 * units.MiB, CapacityName: "H100-SXM"}},
		{"bar-ascii-60", BarOptions{Width: 60, ASCII: true, Capacity: 81559 * units.MiB, CapacityName: "H100-SXM"}},
		{"bar-overflow-40", BarOptions{Width: 40, Capacity: 46068 * units.MiB, CapacityName: "L40S"}},
		{"bar-nocap-ascii", BarOptions{Width: 50, ASCII: true, Bytes: units.FormatSI}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Breakdown(&buf, breakdownResult(), tt.o); err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
				if n := utf8.RuneCountInString(line); n > max(tt.o.Width, minBarWidth) && !strings.Contains(line, " of ") {
					t.Errorf("line of %d columns > width %d: %q", n, tt.o.Width, line)
				}
				if tt.o.ASCII {
					for _, r := range line {
						if r > 127 {
							t.Fatalf("non-ASCII %q in ASCII mode", r)
						}
					}
				}
			}
			golden(t, tt.name, buf.Bytes())
		})
	}
}

func TestApportion(t *testing.T) {
	tests := []struct {
		sizes []units.Bytes
		scale units.Bytes
		cells int
		want  []int
	}{
		{[]units.Bytes{1, 1, 1}, 3, 10, []int{4, 3, 3}},
		{[]units.Bytes{50, 25, 25}, 200, 8, []int{2, 1, 1}},
		{[]units.Bytes{1, 1000}, 1001, 10, []int{0, 10}},
		{[]units.Bytes{units.MaxBytes / 2, units.MaxBytes / 2}, units.MaxBytes, 7, []int{4, 3}},
		{nil, 0, 10, []int{}},
	}
	for _, tt := range tests {
		got := apportion(tt.sizes, tt.scale, tt.cells)
		if len(got) != len(tt.want) {
			t.Fatalf("apportion(%v) = %v, want %v", tt.sizes, got, tt.want)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("apportion(%v, %d, %d) = %v, want %v", tt.sizes, tt.scale, tt.cells, got, tt.want)
				break
			}
		}
	}
}

func TestBreakdownEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := Breakdown(&buf, memory.Result{}, BarOptions{}); err != nil || !strings.Contains(buf.String(), "no memory components") {
		t.Errorf("empty result: %q, %v", buf.String(), err)
	}
}
