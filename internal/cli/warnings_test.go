package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
)

// genericConfig writes the config.json of a dense decoder whose
// model_type no reader knows, which gpumem reads generically with a
// warning.
func genericConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	cfg := `{"model_type": "frobnet", "architectures": ["FrobForCausalLM"], "hidden_size": 2048, "num_hidden_layers": 8,
		"num_attention_heads": 16, "intermediate_size": 8192, "vocab_size": 32000, "max_position_embeddings": 4096}`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGenericWarningEverywhere checks that the warning of a generic
// reading reaches the top-level "warnings" of every command's JSON and
// the end of its table.
func TestGenericWarningEverywhere(t *testing.T) {
	cfg := genericConfig(t)
	for _, args := range [][]string{
		{"estimate", "--model", cfg, "--seq-len", "512"},
		{"estimate", "--model", cfg, "--mode", "inference", "--prompt-len", "512"},
		{"fit", "--model", cfg, "--gpu", "H100-SXM", "--seq-len", "512"},
		{"fit", "--model", cfg, "--gpu", "H100-SXM,L4", "--seq-len", "512"},
		{"fit", "--model", cfg, "--gpu", "L4", "--sweep", "seq-len", "--sweep-min", "512", "--sweep-max", "1024"},
		{"plan", "--model", cfg, "--gpu", "H100-SXM", "--max-gpus", "2", "--seq-len", "512"},
		{"plan", "--model", cfg, "--gpu", "H100-SXM,L4", "--max-gpus", "2", "--seq-len", "512"},
		{"serve-plan", "--model", cfg, "--gpu", "H100-SXM", "--max-gpus", "2"},
		{"params", "--model", cfg},
	} {
		name := strings.Join(args[:1], " ") + " " + strings.Join(args[3:], " ")
		t.Run(name, func(t *testing.T) {
			out, errOut, code := runCommand(t, append(args, "--format", "json")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var top struct {
				Warnings []string `json:"warnings"`
			}
			if err := json.Unmarshal([]byte(out), &top); err != nil {
				t.Fatalf("JSON output is not an object: %v\n%s", err, out)
			}
			if len(top.Warnings) == 0 || !strings.Contains(top.Warnings[0], model.GenericWarning) {
				t.Errorf("top-level warnings %q, want the generic-reading warning first", top.Warnings)
			}
			out, errOut, code = runCommand(t, args...)
			if code != 0 {
				t.Fatalf("table: exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, "warning: model_type \"frobnet\"") || !strings.Contains(out, model.GenericWarning) {
				t.Errorf("table lacks the generic-reading warning:\n%s", out)
			}
		})
	}
}

// TestRefusedArchitectureExit checks that a config with keys the generic
// reading does not understand is refused in one line with exit code 1.
func TestRefusedArchitectureExit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	cfg := `{"model_type": "frobmoe", "architectures": ["FrobMoeForCausalLM"], "hidden_size": 2048, "num_hidden_layers": 8,
		"num_attention_heads": 16, "intermediate_size": 8192, "vocab_size": 32000, "num_experts": 64, "num_experts_per_tok": 8}`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCommand(t, "estimate", "--model", path)
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, out)
	}
	for _, want := range []string{`"frobmoe"`, `"FrobMoeForCausalLM"`, "num_experts (mixture-of-experts)", "closest supported families"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q: %s", want, errOut)
		}
	}
	if n := strings.Count(strings.TrimSpace(errOut), "\n"); n != 0 {
		t.Errorf("refusal spans %d lines: %s", n+1, errOut)
	}
}
