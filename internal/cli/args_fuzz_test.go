package cli

import (
	"os"
	"strings"
	"testing"
)

// fuzzFlags are the estimate flags whose values the fuzzer varies; the
// value parsers behind them (integers, sizes, fractions, enums, lists,
// name=value pairs) are the CLI's own.
var fuzzFlags = []string{
	"--seq-len", "--per-device-batch", "--batch-size", "--grad-accum", "--dtype", "--optimizer", "--attn",
	"--grad-checkpoint", "--method", "--lora-rank", "--lora-target-modules", "--lora-dropout", "--zero", "--engine",
	"--num-gpus", "--tp", "--pp", "--cp", "--gpu", "--gpu-memory", "--gpu-memory-utilization", "--set",
	"--fused-loss", "--kv-cache-dtype", "--max-model-len", "--fragmentation-gib", "--misc-overhead-gib",
	"--precision", "--trainable", "--trainable-params", "--software", "--reduce-bucket-size", "--mode",
}

// FuzzEstimateFlag runs gpumem estimate with one fuzzed flag value (and a
// fuzzed mode): the command answers 0, 1 or 2, never panics, prints a
// result only on success and an error line naming something otherwise.
func FuzzEstimateFlag(f *testing.F) {
	for i, seed := range []string{"4096", "-1", "0", "bf16", "adamx", "80G", "1.5", "fragmentation=0.1", "a=b=c", "9e18", "NaN", "", "all-linear", "q_proj k_proj"} {
		f.Add(uint8(i), seed, uint8(i%3))
	}
	modes := []string{"train", "inference", "serving"}
	f.Fuzz(func(t *testing.T, which uint8, value string, mode uint8) {
		flag := fuzzFlags[int(which)%len(fuzzFlags)]
		args := []string{"estimate", "--model", "gpt2", "--mode", modes[int(mode)%len(modes)], flag, value}
		out, errOut, code := runCommand(t, args...)
		switch code {
		case 0:
			if out == "" {
				t.Fatalf("%q: success with nothing on stdout", args)
			}
		case ExitError, ExitUsage:
			if !strings.HasPrefix(errOut, "gpumem: ") || len(errOut) < len("gpumem: x") {
				t.Fatalf("%q: exit %d with stderr %q", args, code, errOut)
			}
		default:
			t.Fatalf("%q: exit code %d", args, code)
		}
		if strings.Contains(errOut, "goroutine ") || strings.Contains(errOut, "panic") {
			t.Fatalf("%q: stderr looks like a crash: %s", args, errOut)
		}
	})
}

// FuzzInspectGGUFFlag runs gpumem inspect on a GGUF file with one fuzzed
// llama.cpp flag, short forms included: 0, 1 or 2, never a crash.
func FuzzInspectGGUFFlag(f *testing.F) {
	flags := []string{"-c", "-ctk", "-ctv", "-ngl", "-np", "-fa", "-ub", "-b", "-kvu", "-nkvo", "--gpu-layers", "--swa-full"}
	for i, seed := range []string{"4096", "q8_0", "f16", "all", "4", "off", "256", "0", "-1", "true", "99", "9e18", ""} {
		f.Add(uint8(i), seed)
	}
	path := f.TempDir() + "/m.gguf"
	if err := os.WriteFile(path, ggufBytes(0), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		args := []string{"inspect", path, flags[int(which)%len(flags)], value}
		out, errOut, code := runCommand(t, args...)
		switch code {
		case 0:
			if !strings.Contains(out, "KV cache") {
				t.Fatalf("%q: success without the estimate: %s", args, out)
			}
		case ExitError, ExitUsage:
			if !strings.HasPrefix(errOut, "gpumem: ") {
				t.Fatalf("%q: exit %d with stderr %q", args, code, errOut)
			}
		default:
			t.Fatalf("%q: exit code %d", args, code)
		}
		if strings.Contains(errOut, "goroutine ") || strings.Contains(errOut, "panic") {
			t.Fatalf("%q: stderr looks like a crash: %s", args, errOut)
		}
	})
}
