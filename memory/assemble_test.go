package memory

import (
	"math"
	"reflect"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// roundedRow is one allocated-level row rounded the plain way: each phase
// rounded up on its own, and its largest size with the first phase that
// has it.
type roundedRow struct {
	b      [numPhases]units.Bytes
	most   units.Bytes
	mostPh int
}

// roundRow rounds the unrounded bytes v of a row phase by phase.
func roundRow(v *[numPhases]float64) roundedRow {
	var r roundedRow
	for ph := range numPhases {
		r.b[ph] = units.FromFloat(v[ph])
		if r.b[ph] > r.most {
			r.most, r.mostPh = r.b[ph], ph
		}
	}
	return r
}

// checkRowTable checks a row table against the unrounded rows it was
// built with: every non-empty row rounded phase by phase, its largest
// size and phase, the live set and the totals summed with units.Add.
func checkRowTable(t *testing.T, name string, tab *rowTable, rows *[numRows]comp) {
	t.Helper()
	var totals [numPhases]units.Bytes
	for i := range rows {
		want := roundRow(&rows[i].v)
		live := tab.live&(1<<i) != 0
		if live != (want.most > 0) {
			t.Errorf("%s row %d (%s): live %v, rounded bytes %v", name, i, rowInfo[i].name, live, want.b)
			continue
		}
		for ph := range numPhases {
			totals[ph] = units.Add(totals[ph], want.b[ph])
		}
		if !live {
			continue
		}
		if tab.b[i] != want.b || tab.most[i] != want.most || int(tab.mostPh[i]) != want.mostPh {
			t.Errorf("%s row %d (%s): table %v, most %d in phase %d; want %v, most %d in phase %d", name, i, rowInfo[i].name,
				tab.b[i], tab.most[i], tab.mostPh[i], want.b, want.most, want.mostPh)
		}
	}
	if tab.totals != totals {
		t.Errorf("%s: totals %v, want the sums of the rounded rows %v", name, tab.totals, totals)
	}
	if tab.live&^(1<<numRows-1) != 0 || tab.always&^(1<<numRows-1) != 0 {
		t.Errorf("%s: bits beyond the rows: live %b, always %b", name, tab.live, tab.always)
	}
}

// TestRowTableMatchesRows checks that the row table assemble and peaksOf
// read, which rounds each row once as it is recorded and skips the empty
// ones, equals the unrounded rows (which the stream-cache estimate sums)
// rounded phase by phase, for the golden jobs on every catalog model.
func TestRowTableMatchesRows(t *testing.T) {
	checked := 0
	for _, entry := range model.Catalog() {
		m := catalogModel(t, entry.ID)
		tab := newModTab(m)
		for _, c := range goldenCases() {
			if c.job.Mode != "" && c.job.Mode != Train {
				continue
			}
			s := setup{tab: tab, buf: new(trainBuf)}
			if err := s.initJob(m, &c.job); err != nil {
				continue
			}
			for stage := range s.dist.pp {
				if s.dist.pp > 1 {
					s.setStage(stage)
				}
				var parts trainParts
				s.stageParts(&parts)
				var rows [numRows]comp
				rt := rowTable{f: &rows}
				s.buildRows(&parts, &rt)
				checkRowTable(t, entry.ID+" "+c.name, &rt, &rows)
				var plain rowTable // without the unrounded rows
				s.buildRows(&parts, &plain)
				plain.f = rt.f
				if !reflect.DeepEqual(plain, rt) {
					t.Errorf("%s %s: the table depends on whether the unrounded rows are kept", entry.ID, c.name)
				}
				checked++
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked %d stages, want at least 100", checked)
	}
}

// TestRowTableEdges checks the row table's rounding and sums on sizes at
// the edges: fractions, negative and NaN bytes (no row), +Inf and sums
// past the largest int64 (saturated, never wrapped).
func TestRowTableEdges(t *testing.T) {
	huge := math.Ldexp(1, 62) // 2⁶², so two of them overflow an int64
	nan := math.NaN()
	tests := []struct {
		name                 string
		every, lo, phases    float64 // bytes of an every row, a span row (backward..step) and a phases row
		wantTotals           [numPhases]units.Bytes
		wantLive             uint32
		wantMost, wantMostPh int // of the phases row
	}{
		{"fractions round up", 0.5, 1.25, 2.1, [numPhases]units.Bytes{1 + 2, 1 + 3, 1 + 2 + 1, 1 + 2, 1 + 2}, 1<<0 | 1<<1 | 1<<2, 3, 1},
		{"negative and NaN are empty", -3, nan, -1e-9, [numPhases]units.Bytes{}, 0, 0, 0},
		{"infinity saturates", math.Inf(1), 0, 0, [numPhases]units.Bytes{units.MaxBytes, units.MaxBytes, units.MaxBytes, units.MaxBytes, units.MaxBytes}, 1 << 0, 0, 0},
		{"sums saturate", huge, huge, huge, [numPhases]units.Bytes{1<<62 + 1<<61, units.MaxBytes, units.MaxBytes, units.MaxBytes, units.MaxBytes}, 1<<0 | 1<<1 | 1<<2, 1 << 62, 1},
		{"below the limit stays exact", huge, 0, 0, [numPhases]units.Bytes{1 << 62, 1 << 62, 1 << 62, 1 << 62, 1 << 62}, 1 << 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rows [numRows]comp
			tab := rowTable{f: &rows}
			tab.every(0, tt.every)
			tab.span(1, tt.lo, phBackward, phStep)
			// The phases row is largest in the loss phase.
			p := [numPhases]float64{tt.phases / 2, tt.phases, tt.phases / 3, 0, 0}
			tab.phases(2, &p)
			if tab.totals != tt.wantTotals || tab.live != tt.wantLive {
				t.Errorf("totals %v live %b, want %v live %b", tab.totals, tab.live, tt.wantTotals, tt.wantLive)
			}
			if tab.live&(1<<2) != 0 && (tab.most[2] != units.Bytes(tt.wantMost) || int(tab.mostPh[2]) != tt.wantMostPh) {
				t.Errorf("phases row: most %d in phase %d, want %d in phase %d", tab.most[2], tab.mostPh[2], tt.wantMost, tt.wantMostPh)
			}
			checkRowTable(t, tt.name, &tab, &rows)
		})
	}
}

// TestAddSize checks the saturating sum of sizes against units.Add.
func TestAddSize(t *testing.T) {
	for _, tt := range []struct{ a, b units.Bytes }{
		{0, 0}, {1, 2}, {units.MaxBytes, 0}, {units.MaxBytes, 1}, {units.MaxBytes - 1, 1},
		{units.MaxBytes / 2, units.MaxBytes/2 + 2}, {units.MaxBytes, units.MaxBytes}, {1 << 62, 1 << 62},
	} {
		if got, want := addSize(tt.a, tt.b), units.Add(tt.a, tt.b); got != want {
			t.Errorf("addSize(%d, %d) = %d, want %d", tt.a, tt.b, got, want)
		}
	}
}

// TestFromFloatEdges checks units.FromFloat around its limits: it rounds
// up, maps NaN, zero and negative sizes to 0 and saturates at MaxBytes.
func TestFromFloatEdges(t *testing.T) {
	below := math.Nextafter(math.Ldexp(1, 63), 0) // the largest float64 under 2⁶³
	for _, tt := range []struct {
		f    float64
		want units.Bytes
	}{
		{math.NaN(), 0}, {math.Inf(-1), 0}, {-1, 0}, {math.Copysign(0, -1), 0}, {0, 0},
		{math.SmallestNonzeroFloat64, 1}, {0.5, 1}, {1, 1}, {1.0000001, 2},
		{below, units.Bytes(1<<63 - 1024)}, {math.Ldexp(1, 63), units.MaxBytes}, {math.Inf(1), units.MaxBytes},
	} {
		if got := units.FromFloat(tt.f); got != tt.want {
			t.Errorf("FromFloat(%v) = %d, want %d", tt.f, got, tt.want)
		}
	}
}

// TestEstimatorReuseMatchesEstimate runs one Estimator over jobs whose
// results fill different parts of a Result (serving capacity, pipeline
// stages, host offload, a parallel layout, warnings, an explained
// breakdown) in an order where each leaves parts the next must clear,
// and checks each answer equals a fresh Estimate's.
func TestEstimatorReuseMatchesEstimate(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	jobs := []Job{
		{Mode: Serving, GPUMemory: 80 * units.GiB},
		{SeqLen: 4096, MicroBatch: 2, GradCheckpoint: "full", Attention: "flash"},
		{SeqLen: 4096, Engine: "megatron", NumGPUs: 16, PP: 4, TP: 2, GradAccum: 8},
		{SeqLen: 1024},
		{SeqLen: 4096, Engine: "deepspeed", ZeRO: 3, NumGPUs: 64, OffloadOptimizer: "cpu", GPUMemory: 80 * units.GiB},
		{SeqLen: 2048, Method: "lora", LoRATargets: []string{"all-linear"}, Optimizer: "paged_adamw_8bit", GPUMemory: 16 * units.GiB, Explain: true},
		{SeqLen: 4096, Engine: "fsdp", NumGPUs: 8, GPU: "H100"},
		{Mode: Inference, SeqLen: 1024},
		{SeqLen: 1024},
	}
	e := NewEstimator(m)
	for i := range jobs {
		got, err := e.Estimate(&jobs[i])
		if err != nil {
			t.Fatalf("job %d %+v: %v", i, jobs[i], err)
		}
		want, err := Estimate(m, jobs[i])
		if err != nil {
			t.Fatalf("job %d %+v: %v", i, jobs[i], err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("job %d %+v: the Estimator's result differs from Estimate's:\n%+v\n%+v", i, jobs[i], *got, want)
		}
	}
}
