package cli

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/report"
)

// TestParamsJSONContract checks the field names later tools rely on.
func TestParamsJSONContract(t *testing.T) {
	out, errOut, code := runCommand(t, "params", "--model", "meta-llama/Llama-2-7b-hf", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Model        string `json:"model"`
		Architecture string `json:"architecture"`
		TotalParams  int64  `json:"total_params"`
		Modules      []struct {
			Name   string `json:"name"`
			Params int64  `json:"params"`
		} `json:"modules"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Model != "meta-llama/Llama-2-7b-hf" || got.Architecture != "LlamaForCausalLM" || got.TotalParams != 6738415616 {
		t.Errorf("got model %q arch %q total %d", got.Model, got.Architecture, got.TotalParams)
	}
	var sum int64
	for _, m := range got.Modules {
		if m.Name == "" {
			t.Error("module without a name")
		}
		sum += m.Params
	}
	if sum != got.TotalParams {
		t.Errorf("modules sum to %d, total_params %d", sum, got.TotalParams)
	}
}

// TestEstimateJSONContract checks the estimate JSON shape and that the CLI
// prints exactly what the library returns for the same job.
func TestEstimateJSONContract(t *testing.T) {
	for _, args := range [][]string{
		{"--seq-len", "2048", "--attn", "flash"},
		{"--mode", "inference", "--batch-size", "4", "--prompt-len", "1000", "--gen-len", "200"},
	} {
		out, errOut, code := runCommand(t, append([]string{"estimate", "--model", "llama2-7b", "--format", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var got struct {
			TotalParams     int64 `json:"total_params"`
			TrainableParams int64 `json:"trainable_params"`
			PerGPU          struct {
				Allocated  int64 `json:"allocated_peak_bytes"`
				Reserved   int64 `json:"reserved_peak_bytes"`
				Device     int64 `json:"device_peak_bytes"`
				Components []struct {
					Name  string `json:"name"`
					Bytes int64  `json:"bytes"`
				} `json:"components"`
			} `json:"per_gpu"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		p := got.PerGPU
		if got.TotalParams != 6738415616 || !(0 < p.Allocated && p.Allocated <= p.Reserved && p.Reserved <= p.Device) || len(p.Components) == 0 {
			t.Errorf("%v: implausible estimate JSON: %s", args, out)
		}

		// The same job through the library, rendered by report, must be byte-identical.
		m, err := model.Lookup("llama2-7b")
		if err != nil {
			t.Fatal(err)
		}
		job := jobFromFlags(t, args)
		res, err := memory.Estimate(m, job)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := report.WriteJSON(&want, res); err != nil {
			t.Fatal(err)
		}
		if want.String() != out {
			t.Errorf("%v: CLI JSON differs from library JSON", args)
		}
	}
}

func jobFromFlags(t *testing.T, args []string) memory.Job {
	t.Helper()
	opts := &estimateOptions{}
	fs := pflag.NewFlagSet("estimate", pflag.ContinueOnError)
	addEstimateFlags(fs, opts)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := opts.finish(fs); err != nil {
		t.Fatal(err)
	}
	return opts.Job
}
