package probe

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpumem/gpumem/units"
)

func TestParseGPUs(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []GPU
		wantErr string
	}{
		{
			name: "two GPUs",
			in:   "0, GPU-aaaa, 1024, 81559\n1, GPU-bbbb, 0, 81559\n",
			want: []GPU{
				{Index: 0, UUID: "GPU-aaaa", Used: 1024 * units.MiB, Total: 81559 * units.MiB},
				{Index: 1, UUID: "GPU-bbbb", Used: 0, Total: 81559 * units.MiB},
			},
		},
		{name: "CRLF and blank lines", in: "\r\n0, GPU-a, 1, 2\r\n\r\n", want: []GPU{{Index: 0, UUID: "GPU-a", Used: units.MiB, Total: 2 * units.MiB}}},
		{name: "empty", in: "", wantErr: "no GPUs listed"},
		{name: "missing field", in: "0, GPU-a, 1\n", wantErr: `--query-gpu line 1 "0, GPU-a, 1": want 4 comma-separated fields, got 3`},
		{name: "units left in", in: "0, GPU-a, 1 MiB, 2 MiB\n", wantErr: `memory.used "1 MiB": want a whole number of MiB`},
		{name: "not supported", in: "0, GPU-a, [N/A], 2\n", wantErr: "memory.used is [N/A]"},
		{name: "negative", in: "0, GPU-a, -1, 2\n", wantErr: `memory.used "-1"`},
		{name: "bad index", in: "x, GPU-a, 1, 2\n", wantErr: `index "x"`},
		{name: "empty uuid", in: "0, , 1, 2\n", wantErr: "empty uuid"},
		{name: "overflow", in: "0, GPU-a, 99999999999999999, 2\n", wantErr: "too large"},
		{name: "error on line 2", in: "0, GPU-a, 1, 2\nNVIDIA-SMI has failed\n", wantErr: "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseGPUs([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseGPUs error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseGPUs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseComputeApps(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Process
		wantErr string
	}{
		{name: "none", in: "", want: nil},
		{name: "old driver sentence", in: "No running processes found\n", want: nil},
		{
			name: "two",
			in:   "123, 500, GPU-a\n456, 1500, GPU-b\n",
			want: []Process{{PID: 123, Used: 500 * units.MiB, GPUUUID: "GPU-a"}, {PID: 456, Used: 1500 * units.MiB, GPUUUID: "GPU-b"}},
		},
		{name: "N/A memory", in: "123, [N/A], GPU-a\n", wantErr: "used_memory is [N/A]"},
		{name: "bad pid", in: "-5, 1, GPU-a\n", wantErr: `pid "-5"`},
		{name: "too many fields", in: "1, 2, GPU-a, extra\n", wantErr: "want 3 comma-separated fields, got 4"},
		{name: "empty uuid", in: "1, 2, \n", wantErr: "empty gpu_uuid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseComputeApps([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseComputeApps error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseComputeApps (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseGPUs(f *testing.F) {
	f.Add([]byte("0, GPU-aaaa, 1024, 81559\n1, GPU-bbbb, 0, 81559\n"))
	f.Add([]byte("0, GPU-a, [N/A], 2\n"))
	f.Add([]byte("0,,,\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		gpus, err := ParseGPUs(in)
		if err != nil {
			return
		}
		for _, g := range gpus {
			if g.Used < 0 || g.Total < 0 || g.Index < 0 || g.UUID == "" {
				t.Fatalf("ParseGPUs accepted an invalid GPU %+v from %q", g, in)
			}
		}
	})
}

func FuzzParseComputeApps(f *testing.F) {
	f.Add([]byte("123, 500, GPU-a\n456, 1500, GPU-b\n"))
	f.Add([]byte("No running processes found\n"))
	f.Add([]byte("1, 99999999999999999999, x\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		procs, err := ParseComputeApps(in)
		if err != nil {
			return
		}
		for _, p := range procs {
			if p.Used < 0 || p.PID <= 0 || p.GPUUUID == "" {
				t.Fatalf("ParseComputeApps accepted an invalid process %+v from %q", p, in)
			}
		}
	})
}
