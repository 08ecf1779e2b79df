package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/memory"
)

// TestVLLMVersionFlag checks that --vllm-version is --stack vllm=X: it
// sets the job's Stack["vllm"], beside other stated packages, and
// --enforce-eager sets EnforceEager.
func TestVLLMVersionFlag(t *testing.T) {
	var j memory.Job
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	addServingFlags(fs, &j)
	j.Stack = memory.Stack{"torch": "2.4.1"}
	if err := fs.Parse([]string{"--vllm-version", "0.19.0", "--enforce-eager"}); err != nil {
		t.Fatal(err)
	}
	if j.Stack["vllm"] != "0.19.0" || j.Stack["torch"] != "2.4.1" || !j.EnforceEager {
		t.Errorf("stack %v, enforce_eager %v; want vllm=0.19.0 beside torch=2.4.1 and true", j.Stack, j.EnforceEager)
	}
	// A second, different version is an error, as --stack gives.
	if err := fs.Parse([]string{"--vllm-version", "0.8.5"}); err == nil {
		t.Errorf("two vLLM versions accepted: %v", j.Stack)
	}
	for _, bad := range []string{"", "latest", "v1", "0.3.3", "0.34.0"} {
		if err := checkVLLMVersion(bad); err == nil {
			t.Errorf("--vllm-version %q accepted", bad)
		}
	}
	for _, good := range []string{"0.4.0", "0.7.3", "0.19.0", "0.33.0", "v0.21.0"} {
		if err := checkVLLMVersion(good); err != nil {
			t.Errorf("--vllm-version %q: %v", good, err)
		}
	}
}

// FuzzVLLMVersionFlag checks that --vllm-version either refuses a value
// with an error naming the accepted releases or sets a version the stack
// accepts.
func FuzzVLLMVersionFlag(f *testing.F) {
	for _, s := range []string{"0.19.0", "v1", "latest", "0.3", "0.99", "0.7.3rc1", "", "0.8.5.post1", "1e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if err := checkVLLMVersion(s); err != nil {
			if !strings.Contains(err.Error(), "want a vLLM release from") {
				t.Errorf("checkVLLMVersion(%q): %v does not name the accepted releases", s, err)
			}
			return
		}
		if _, err := memory.ResolveStack(memory.Stack{"vllm": strings.TrimSpace(s)}, nil); err != nil {
			t.Errorf("checkVLLMVersion accepted %q, the stack refuses it: %v", s, err)
		}
	})
}
