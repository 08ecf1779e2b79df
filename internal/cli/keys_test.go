package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/memory"
)

// TestKeyFlags checks the key → flag table against the estimate command:
// every memory.Job key names a flag the command has, except the keys
// listed as flagless, which have none.
func TestKeyFlags(t *testing.T) {
	est, _, err := NewRootCmd(testFactory()).Find([]string{"estimate"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range memory.JobKeys() {
		f := flagOfKey(k.Name)
		switch {
		case f == "" && est.Flags().Lookup(strings.ReplaceAll(k.Name, "_", "-")) != nil:
			t.Errorf("%s is listed as flagless, but estimate has --%s", k.Name, strings.ReplaceAll(k.Name, "_", "-"))
		case f != "" && est.Flags().Lookup(f) == nil:
			t.Errorf("%s: estimate has no --%s", k.Name, f)
		}
	}
	for key := range keyFlags {
		if _, ok := memory.LookupJobKey(key); !ok {
			t.Errorf("keyFlags: %q is not a memory.Job key", key)
		}
	}
	for key := range flagless {
		if _, ok := memory.LookupJobKey(key); !ok {
			t.Errorf("flagless: %q is not a memory.Job key", key)
		}
	}
}

func TestFlagName(t *testing.T) {
	for _, tc := range []struct{ key, value, want string }{
		{"seq_len", "", "--seq-len"},
		{"tp", "3", "--tp 3"},
		{"batch", "8", "--batch-size 8"},
		{"virtual_pipeline_stages", "", "--virtual-stages"},
		{"constants", "", "--set"},
		{"allow_long", "true", "--allow-long"},
		{"packed", "false", "--packed=false"},
		{"double_quant", "true", "--double-quant"},
		{"task_head", "", "task_head"},
		{"gpu_compute_capability", "900", "gpu_compute_capability=900"},
	} {
		if got := flagName(tc.key, tc.value); got != tc.want {
			t.Errorf("flagName(%q, %q) = %q, want %q", tc.key, tc.value, got, tc.want)
		}
	}
}

// TestRenderErrorWrapped checks that an estimator error keeps the CLI's
// flag names through the wrappers a command adds.
func TestRenderErrorWrapped(t *testing.T) {
	fe := memory.FieldErrorf("zero", "{zero=%d} with {pp=%d}: stages 0 and 1 only", 2, 4)
	err := &UsageError{Err: fmt.Errorf("estimate llama: %w", fe)}
	want := "estimate llama: --zero 2 with --pp 4: stages 0 and 1 only"
	if got := renderError(err); got != want {
		t.Errorf("renderError = %q, want %q", got, want)
	}
	if got := renderError(errors.New("plain")); got != "plain" {
		t.Errorf("renderError(plain) = %q", got)
	}
}
