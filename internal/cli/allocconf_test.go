package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/memory"
)

// TestAllocConfSources checks where the allocator configuration comes
// from: --alloc-conf, else a job file's alloc_conf, else the environment
// (PYTORCH_ALLOC_CONF before PYTORCH_CUDA_ALLOC_CONF, as PyTorch reads
// them), with a note naming the variable.
func TestAllocConfSources(t *testing.T) {
	dir := t.TempDir()
	jobFile := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(jobFile, []byte("model: llama3-8b\nseq_len: 512\nalloc_conf: max_split_size_mb:256\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	both := map[string]string{"PYTORCH_ALLOC_CONF": "expandable_segments:True", "PYTORCH_CUDA_ALLOC_CONF": "roundup_power2_divisions:4"}
	cuda := map[string]string{"PYTORCH_CUDA_ALLOC_CONF": "roundup_power2_divisions:4"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string // the job's alloc_conf
		note string // in stderr, "" for none
	}{
		{"flag", both, []string{"--alloc-conf", "garbage_collection_threshold:0.5"}, "garbage_collection_threshold:0.5", ""},
		{"job file", both, []string{"--config", jobFile}, "max_split_size_mb:256", ""},
		{"PYTORCH_ALLOC_CONF first", both, nil, "expandable_segments:True", "from PYTORCH_ALLOC_CONF"},
		{"PYTORCH_CUDA_ALLOC_CONF", cuda, nil, "roundup_power2_divisions:4", "from PYTORCH_CUDA_ALLOC_CONF"},
		{"none", nil, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"estimate", "--format", "json"}, tc.args...)
			if !strings.Contains(strings.Join(tc.args, " "), "--config") {
				args = append(args, "--model", "llama3-8b", "--seq-len", "512")
			}
			out, errOut, code := runWithEnv(t, tc.env, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var r memory.Result
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if r.Job.AllocConf != tc.want {
				t.Errorf("alloc_conf %q, want %q", r.Job.AllocConf, tc.want)
			}
			if tc.note == "" && strings.Contains(errOut, "in the environment") || tc.note != "" && !strings.Contains(errOut, tc.note) {
				t.Errorf("stderr %q, want a note %q", errOut, tc.note)
			}
		})
	}
	// A bad value names the flag, whichever way it came.
	_, errOut, code := runWithEnv(t, map[string]string{"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:yes"}, "estimate", "--model", "llama3-8b", "--seq-len", "512")
	if code == 0 || !strings.Contains(errOut, `--alloc-conf: expandable_segments: "yes": want True or False`) {
		t.Errorf("bad environment value: exit %d, stderr %q", code, errOut)
	}
}
