package calibrate

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
)

func TestDefaultProfile(t *testing.T) {
	p := Default()
	if p.Schema != ProfileSchema || p.Name != "default" || p.GPU != "" {
		t.Errorf("default profile header %+v", p)
	}
	if len(p.Constants) != 0 {
		t.Errorf("default profile overrides %v; it must be the identity (no real runs were made)", p.Constants)
	}
	if !strings.Contains(strings.Join(p.Notes, " "), "no run on real GPU hardware") {
		t.Errorf("default profile notes do not say why it is the identity: %q", p.Notes)
	}
	// Applying it leaves a job unchanged.
	job := memory.Job{GPU: "A100-80GB", Constants: map[string]float64{"fragmentation": 0.1}}
	want := job
	if err := p.Apply(&job); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, job); diff != "" {
		t.Errorf("default profile changed the job (-want +got):\n%s", diff)
	}
}

func TestProfileSaveLoad(t *testing.T) {
	runs := syntheticRuns(t, 5, memory.Train, truth{scale: 1.2, frag: 0.08, overhead: 700, noise: 0.01}, 9)
	p, err := Fit(runs, FitOptions{Name: "lab H100"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := LoadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("round trip (-saved +loaded):\n%s", diff)
	}
	if _, err := LoadProfile(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "calibration profile") {
		t.Errorf("missing file: error = %v", err)
	}
}

func TestParseProfileErrors(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"schema", `{"schema":"other","name":"x","constants":{}}`, `schema "other": want "gpumem-calibration/1"`},
		{"unknown constant", `{"schema":"gpumem-calibration/1","constants":{"fudge":2}}`, "constants.fudge: unknown constant"},
		{"out of range", `{"schema":"gpumem-calibration/1","constants":{"fragmentation":-0.5}}`, "constants.fragmentation = -0.5: want a value in [0, 2] fraction"},
		{"unknown gpu", `{"schema":"gpumem-calibration/1","gpu":"Voodoo5","constants":{}}`, `gpu "Voodoo5"`},
		{"loose gpu spelling", `{"schema":"gpumem-calibration/1","gpu":"h100","constants":{}}`, `gpu "h100"`},
		{"unknown key", `{"schema":"gpumem-calibration/1","constants":{},"fudge":1}`, `unknown field "fudge"`},
		{"string value", `{"schema":"gpumem-calibration/1","constants":{"fragmentation":"0.1"}}`, "constants"},
		{"two values", `{"schema":"gpumem-calibration/1","constants":{}} {}`, "more than one JSON value"},
		{"not JSON", `schema: 1`, "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseProfile([]byte(tt.json), "lab.json")
			if err == nil || !strings.HasPrefix(err.Error(), "lab.json: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to name lab.json and contain %q", err, tt.want)
			}
		})
	}
}

func TestProfileApply(t *testing.T) {
	h100, err := gpu.Lookup("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	p := Profile{Schema: ProfileSchema, Name: "lab", GPU: "H100-SXM",
		Constants: map[string]float64{"fragmentation": 0.1, "misc_overhead_mib": 256, "activation_scale": 1.2}}
	tests := []struct {
		name    string
		job     memory.Job
		want    memory.Job
		wantErr error
	}{
		{
			name: "fills GPU and constants",
			job:  memory.Job{},
			want: memory.Job{GPU: "H100-SXM", GPUMemory: h100.CUDATotal(), GPUComputeCapability: 90, GPUFormFactor: h100.FormFactor,
				Constants: map[string]float64{"fragmentation": 0.1, "misc_overhead_mib": 256, "activation_scale": 1.2}},
		},
		{
			name: "explicit --set wins",
			job:  memory.Job{GPU: "NVIDIA H100 80GB HBM3", Constants: map[string]float64{"fragmentation": 0.02}},
			want: memory.Job{GPU: "NVIDIA H100 80GB HBM3", Constants: map[string]float64{"fragmentation": 0.02, "misc_overhead_mib": 256, "activation_scale": 1.2}},
		},
		{name: "other GPU", job: memory.Job{GPU: "A100-80GB"}, wantErr: ErrGPUMismatch},
		{name: "same memory, other board", job: memory.Job{GPU: "H100-PCIe"}, wantErr: ErrGPUMismatch},
		{name: "not a catalog board", job: memory.Job{GPU: "Voodoo5"}, wantErr: ErrGPUMismatch},
		{name: "job constant out of range", job: memory.Job{Constants: map[string]float64{"activation_scale": 99}}, wantErr: errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := tt.job
			err := p.Apply(&job)
			if tt.wantErr != nil {
				if err == nil || (tt.wantErr != errAny && !errors.Is(err, tt.wantErr)) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, job); diff != "" {
				t.Errorf("job (-want +got):\n%s", diff)
			}
		})
	}
	// The estimator sees the profile: overheads follow its constants.
	job := memory.Job{}
	if err := p.Apply(&job); err != nil {
		t.Fatal(err)
	}
	ov, err := memory.RuntimeOverheads(job)
	if err != nil {
		t.Fatal(err)
	}
	if ov.Fragmentation != 0.1 || ov.Misc != 256<<20 || ov.GPU.Name != "H100-SXM" || ov.Workspace != 32<<20 || ov.Warning != "" {
		t.Errorf("overheads after Apply: %+v", ov)
	}
	if job.Constants["activation_scale"] != 1.2 || p.Constants["fragmentation"] != 0.1 {
		t.Error("Apply must copy, not alias, the profile's map")
	}
	job.Constants["fragmentation"] = 0.5
	if p.Constants["fragmentation"] != 0.1 {
		t.Error("changing the job's constants changed the profile")
	}
	if math.IsNaN(ov.Fragmentation) {
		t.Error("NaN fragmentation")
	}
}

// errAny accepts any error.
var errAny = errors.New("any error")

func TestReadRuns(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "runs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := ReadRuns(strings.NewReader(string(good)), "runs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].ID != "smol-lora" || runs[2].Measured.DevicePeakBytes == 0 {
		t.Fatalf("read %d runs: %+v", len(runs), runs)
	}
	tests := []struct {
		name, line, want string
	}{
		{"not JSON", `{"id": `, "runs.jsonl line 2: unexpected EOF"},
		{"unknown key", `{"id":"x","fudge":1}`, `runs.jsonl line 2: json: unknown field "fudge"`},
		{"no measurement", `{"id":"x","estimate":{"allocated_peak_bytes":1,"reserved_peak_bytes":1,"device_peak_bytes":1}}`, "line 2: measured: no peak"},
		{"negative", `{"measured":{"device_peak_bytes":-1},"estimate":{"allocated_peak_bytes":1,"reserved_peak_bytes":1,"device_peak_bytes":1}}`, "line 2: measured: peaks must not be negative"},
		{"reserved below allocated", `{"measured":{"allocated_peak_bytes":5,"reserved_peak_bytes":4},"estimate":{"allocated_peak_bytes":1,"reserved_peak_bytes":1,"device_peak_bytes":1}}`, "line 2: measured: reserved_peak_bytes 4 is below allocated_peak_bytes 5"},
		{"no estimate", `{"measured":{"device_peak_bytes":5}}`, "line 2: estimate: want 0 < allocated_peak_bytes"},
		{"bad constant", `{"job":{"constants":{"fudge":1}},"measured":{"device_peak_bytes":5},"estimate":{"allocated_peak_bytes":1,"reserved_peak_bytes":1,"device_peak_bytes":1}}`, `line 2: job: constants: unknown constant "fudge"`},
	}
	first := strings.SplitN(string(good), "\n", 2)[0]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadRuns(strings.NewReader(first+"\n"+tt.line+"\n"), "runs.jsonl")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := ReadRuns(strings.NewReader("# nothing\n\n"), "empty.jsonl"); err == nil || !strings.Contains(err.Error(), "empty.jsonl: no runs") {
		t.Errorf("empty file: error = %v", err)
	}
}

func FuzzReadRuns(f *testing.F) {
	good, err := os.ReadFile(filepath.Join("testdata", "runs.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(good))
	f.Add(`{"measured":{"device_peak_bytes":5},"estimate":{"allocated_peak_bytes":1,"reserved_peak_bytes":1,"device_peak_bytes":1}}`)
	f.Fuzz(func(t *testing.T, in string) {
		runs, err := ReadRuns(strings.NewReader(in), "fuzz.jsonl")
		if err != nil {
			return
		}
		// Whatever is accepted can be fitted without panicking or NaN.
		p, err := Fit(runs, FitOptions{MinRuns: 1})
		if err != nil {
			return
		}
		for name, v := range p.Constants {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s = %v", name, v)
			}
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("fitted profile invalid: %v", err)
		}
	})
}

func FuzzParseProfile(f *testing.F) {
	f.Add(defaultProfile)
	f.Add([]byte(`{"schema":"gpumem-calibration/1","name":"x","gpu":"H100-SXM","constants":{"fragmentation":0.1,"misc_overhead_mib":300}}`))
	f.Add([]byte(`{"schema":"gpumem-calibration/1","constants":{"activation_scale":1e309}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile(data, "fuzz.json")
		if err != nil {
			return
		}
		// An accepted profile applies cleanly to an empty job and the
		// estimator accepts the result.
		job := memory.Job{}
		if err := p.Apply(&job); err != nil {
			t.Fatalf("accepted profile does not apply: %v", err)
		}
		if _, err := memory.RuntimeOverheads(job); err != nil {
			t.Fatalf("applied profile rejected by the estimator: %v", err)
		}
	})
}
