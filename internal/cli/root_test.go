package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

func testFactory() *Factory {
	return &Factory{IO: &IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, Getenv: func(string) string { return "" }}
}

// TestCommandTableNames checks that the names commandsFor matches are the
// name and aliases each command declares, so that a command line naming
// a command by any of them builds that command.
func TestCommandTableNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commands {
		cmd := c.build(testFactory(), &globalOptions{})
		want := append([]string{cmd.Name()}, cmd.Aliases...)
		if !slices.Equal(c.names, want) {
			t.Errorf("table names %q, command declares %q", c.names, want)
		}
		for _, n := range c.names {
			if seen[n] {
				t.Errorf("name %q in the table twice", n)
			}
			seen[n] = true
		}
	}
}

// TestCommandsForResolvesLikeFullTree checks that the tree Main builds
// for a command line resolves it to the same command as the whole tree.
func TestCommandsForResolvesLikeFullTree(t *testing.T) {
	for _, tc := range []struct {
		args string
		want int // subcommands built; -1 for the whole tree
	}{
		{"--version", 0},
		{"-v", 0},
		{"", -1},
		{"--help", -1},
		{"help estimate", -1},
		{"completion bash", -1},
		{"__complete estimate --mo", -1},
		{"estimat --model gpt2", -1},
		{"--version --format json", -1},
		{"estimate --model llama3-8b --seq-len 4096", 1},
		{"--format json params --model gpt2", 1},
		{"-f json params gpt2", 1},
		{"--format=json params gpt2", 1},
		{"accuracy --help", 1},
		{"validate-against", 1},
		{"serve-plan llama3.1-70b --gpu h100", 1},
		{"-- estimate", -1},
		{"--version estimate", -1}, // cobra takes "estimate" as the flag's value, and so does commandsFor
	} {
		t.Run(tc.args, func(t *testing.T) {
			args := strings.Fields(tc.args)
			cmds := commandsFor(args)
			if got := len(cmds); tc.want >= 0 && got != tc.want || tc.want < 0 && got != len(commands) {
				t.Errorf("%d commands, want %d", got, tc.want)
			}
			full, _, fullErr := NewRootCmd(testFactory()).Find(args)
			root := newRootCmd(testFactory(), cmds)
			got, _, err := root.Find(args)
			if len(cmds) == 1 && (err != nil || got != root.Commands()[0]) {
				// Main rebuilds the whole tree; it must be because the whole
				// tree does not resolve the line to that command either.
				if fullErr == nil && full.Name() == cmds[0].names[0] {
					t.Errorf("one-command tree resolves to %q (%v), whole tree to %q", got.Name(), err, full.Name())
				}
				return
			}
			if got.CommandPath() != full.CommandPath() || (err == nil) != (fullErr == nil) {
				t.Errorf("resolves to %q (error %v), whole tree to %q (error %v)", got.CommandPath(), err, full.CommandPath(), fullErr)
			}
		})
	}
}

// FuzzRootFor checks, for any command line, that the tree Main builds
// resolves it as the whole tree does: to the same command, failing or not
// alike.
func FuzzRootFor(f *testing.F) {
	for _, seed := range []string{"estimate --model gpt2", "--format json params gpt2", "-f json fit", "--version",
		"--version estimate", "help estimate", "completion bash", "-- estimate", "accuracy -v", "estimat",
		"--units=si gpus h100", "-v -h", "serve-plan --gpu h100 llama3-8b", "--seq-len 5 estimate", "- estimate", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		if len(args) > 16 {
			return
		}
		got, _, err := rootFor(testFactory(), args).Find(args)
		want, _, wantErr := NewRootCmd(testFactory()).Find(args)
		if got.CommandPath() != want.CommandPath() || (err == nil) != (wantErr == nil) {
			t.Errorf("%q resolves to %q (error %v), with the whole tree to %q (error %v)", args, got.CommandPath(), err, want.CommandPath(), wantErr)
		}
	})
}

// TestVersionBuildsNoCommand checks that --version runs without building
// any subcommand and prints what the whole tree prints.
func TestVersionBuildsNoCommand(t *testing.T) {
	if cmds := commandsFor([]string{"--version"}); len(cmds) != 0 {
		t.Fatalf("--version builds %d commands", len(cmds))
	}
	var lazy, full bytes.Buffer
	f := testFactory()
	f.IO.Out = &lazy
	if code := Main(context.Background(), []string{"--version"}, f); code != 0 {
		t.Fatalf("--version: exit code %d", code)
	}
	root := NewRootCmd(testFactory())
	root.SetOut(&full)
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if lazy.String() != full.String() || !strings.HasPrefix(lazy.String(), "gpumem ") {
		t.Errorf("--version printed %q, the whole tree %q", lazy.String(), full.String())
	}
}

// BenchmarkNewRootCmd measures building the whole command tree, what
// help and completion pay.
func BenchmarkNewRootCmd(b *testing.B) {
	f := testFactory()
	for b.Loop() {
		NewRootCmd(f)
	}
}

// BenchmarkRootForEstimate measures building the tree an estimate
// command line needs: the root and the estimate command.
func BenchmarkRootForEstimate(b *testing.B) {
	f := testFactory()
	args := []string{"estimate", "--model", "llama3-8b", "--seq-len", "4096"}
	for b.Loop() {
		newRootCmd(f, commandsFor(args))
	}
}
