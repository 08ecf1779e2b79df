package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		code                int
		want                []string
	}{
		{"valid job", "ok.yaml", "model: llama3-8b\nseq_len: 4096\nmethod: lora\n", 0, []string{"valid job file", "meta-llama/Meta-Llama-3-8B"}},
		{"valid calculator", "calc.json", `{"model": {"num_parameters": "7B"}, "training": {"batch_size": 1, "dtype": "bf16"},
			"engine": {"type": "deepspeed", "zero_stage": 2}, "hardware": {"num_gpus": 8, "gpu_memory_gb": 80}}`, 0,
			[]string{"valid engine-calculator file", "model shape assumed", "mixed precision"}},
		{"every problem", "bad.json", `{"model": "lama3-8b", "seqlen": 4096, "per_device_batch": -1, "optimizer": "adamx"}`, ExitError,
			[]string{"4 problem(s)", `seqlen: unknown key (did you mean "seq_len"?)`, "per_device_batch: want a positive",
				"optimizer:", `closest: llama3-8b`}},
		{"impossible job", "tp.json", `{"model": "llama3-8b", "seq_len": 4096, "tp": 3}`, ExitError, []string{"estimators reject", "tp=3"}},
		{"no model", "nomodel.json", `{"seq_len": 4096}`, ExitError, []string{"model: missing"}},
		{"hub id offline", "hub.json", `{"model": "someone/not-cached-model"}`, ExitError, []string{"does not use the network"}},
		{"not json", "x.json", `seq_len = 5`, ExitError, []string{"not valid JSON"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeJob(t, tc.file, tc.content)
			out, errOut, code := runCommand(t, "validate", p)
			if code != tc.code {
				t.Errorf("exit %d, want %d: %s%s", code, tc.code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	p := writeJob(t, "bad.json", `{"seqlen": 1, "zero": 7}`)
	out, _, code := runCommand(t, "validate", p, "--format", "json")
	var v validation
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != ExitError || v.Valid || len(v.Problems) != 3 {
		t.Errorf("json: exit %d, %+v, %v", code, v, err)
	}
}
