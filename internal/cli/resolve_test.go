package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStandInNoteInEveryOutput checks that a model path that does not
// exist here, as training configs name them, is read by its last
// component, and that the note saying so reaches the output of every
// command: the JSON and table of estimate, params, fit, plan and
// serve-plan, each of which has a warnings array.
func TestStandInNoteInEveryOutput(t *testing.T) {
	const (
		ref  = "/mnt/models/Meta-Llama-3-8B-Instruct"
		note = ref + " does not exist here; its last component Meta-Llama-3-8B-Instruct is not in the built-in catalog"
		as   = "read as the catalog's meta-llama/Meta-Llama-3-8B"
	)
	env := map[string]string{"HF_HOME": t.TempDir(), "HF_HUB_OFFLINE": "1"}
	for _, args := range [][]string{
		{"estimate", ref, "--format", "json"},
		{"estimate", ref},
		{"params", ref, "--format", "json"},
		{"fit", ref, "--gpu", "h100", "--format", "json"},
		{"fit", ref, "--gpu", "h100"},
		{"fit", ref, "--gpu", "h100,a100-80g"},
		{"fit", ref, "--gpu", "h100,a100-80g", "--format", "json"},
		{"plan", ref, "--gpu", "h100", "--max-gpus", "2"},
		{"plan", ref, "--gpu", "h100", "--max-gpus", "2", "--format", "json"},
		{"serve-plan", ref, "--gpu", "h100", "--max-gpus", "2"},
		{"serve-plan", ref, "--gpu", "h100", "--max-gpus", "2", "--format", "json"},
	} {
		out, errOut, code := runWithEnv(t, env, args...)
		if code != 0 || !strings.Contains(out, note) || !strings.Contains(out, as) {
			t.Errorf("gpumem %s: exit %d, stdout %.300q, stderr %q; want the note in stdout", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// TestFromConfigModelPathElsewhere checks the case training configs
// bring: model_name_or_path names a folder on the machine the config was
// written on. The estimate reads the model by its last component and
// says so in its warnings.
func TestFromConfigModelPathElsewhere(t *testing.T) {
	dir := writeFiles(t, map[string]string{"sft.yaml": `model_name_or_path: /mnt/models/Qwen2.5-7B-Instruct
stage: sft
finetuning_type: lora
lora_target: all
cutoff_len: 1024
per_device_train_batch_size: 1
bf16: true
`})
	env := map[string]string{"HF_HOME": t.TempDir(), "HF_HUB_OFFLINE": "1"}
	out, errOut, code := runWithEnv(t, env, "estimate", "--from", filepath.Join(dir, "sft.yaml"), "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Model    string   `json:"model"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "/mnt/models/Qwen2.5-7B-Instruct does not exist here") ||
		!strings.Contains(res.Warnings[0], "read as the catalog's Qwen/Qwen2.5-7B, assuming") {
		t.Errorf("model %q, warnings %q", res.Model, res.Warnings)
	}
}

// TestValidateStandInNote checks that validate reads a job file's model
// as estimate does, offline, and lists the stand-in's note.
func TestValidateStandInNote(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.json")
	if err := os.WriteFile(job, []byte(`{"model": "meta-llama/Llama-3.1-8B-Instruct", "seq_len": 2048}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runWithEnv(t, map[string]string{"HF_HOME": t.TempDir()}, "validate", job)
	if code != 0 || !strings.Contains(out, "note: meta-llama/Llama-3.1-8B-Instruct is not in the built-in catalog and the Hub was not asked (offline mode); read as the catalog's meta-llama/Llama-3.1-8B") ||
		!strings.Contains(out, "valid") {
		t.Errorf("exit %d, stdout %s, stderr %s", code, out, errOut)
	}
}

// TestUnknownNameHints checks the hints for a bare name the catalog
// lacks: the closest catalog names, and the Hub id it may mean.
func TestUnknownNameHints(t *testing.T) {
	env := map[string]string{"HF_HOME": t.TempDir(), "HF_HUB_OFFLINE": "1"}
	for ref, want := range map[string]string{
		"lama3-8b":          "closest: llama3-8b",
		"Qwen2-7B-Instruct": "a Hub id names its organisation: Qwen/Qwen2-7B-Instruct?",
	} {
		_, errOut, code := runWithEnv(t, env, "params", ref)
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", ref, code, errOut, want)
		}
	}
}

// TestInspectCatalogName checks that inspect reads a catalog name's
// checkpoint from the Hub under its id, with no stand-in.
func TestInspectCatalogName(t *testing.T) {
	_, errOut, code := runWithEnv(t, map[string]string{"HF_HOME": t.TempDir(), "HF_HUB_OFFLINE": "1"}, "inspect", "llama3-8b")
	if code != 1 || !strings.Contains(errOut, "meta-llama/Meta-Llama-3-8B") || !strings.Contains(errOut, "offline") {
		t.Errorf("exit %d, stderr %q; want the Hub id, offline", code, errOut)
	}
}

// TestParamsCheckpoint checks that params --checkpoint warns with both
// figures when the safetensors headers store more than config.json
// counts, and reads nothing without the flag.
func TestParamsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(tinyConfig), 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), tinyCheckpoint(t, stTensor{"model.layers.2.eh_proj.weight", []int64{64, 128}}), 0o644)
	out, errOut, code := runWithEnv(t, nil, "params", dir, "--checkpoint")
	want := fmt.Sprintf("warning: config.json counts %d parameters, the checkpoint's safetensors headers %d", tinyParams, tinyParams+64*128)
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d, stdout %s, stderr %s; want %q", code, out, errOut, want)
	}
	if out, _, code := runWithEnv(t, nil, "params", dir); code != 0 || strings.Contains(out, "warning") {
		t.Errorf("without --checkpoint: exit %d, %s", code, out)
	}
}
