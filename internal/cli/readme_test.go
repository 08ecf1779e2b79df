package cli

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// readmeSkip lists README commands that cannot run inside a unit test, with
// the reason; every other "gpumem ..." line of a sh block must succeed.
var readmeSkip = map[string]string{
	"serve":     "starts a long-running server (tested in internal/web)",
	"probe":     "needs a GPU and nvidia-smi (tested with fakes in internal/cli/probe_test.go)",
	"calibrate": "needs a runs file written by probe (tested in internal/cli/calibrate_test.go)",
}

// readmeCommands returns the gpumem command lines of the README's sh code
// blocks, joined across backslash continuations and without comments.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []string
	inSh, cont := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			inSh = true
			continue
		case strings.HasPrefix(line, "```"):
			inSh = false
			continue
		}
		if !inSh {
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if strings.HasSuffix(line, `\`) {
			cont += strings.TrimSuffix(line, `\`) + " "
			continue
		}
		line, cont = cont+line, ""
		line = strings.TrimPrefix(line, "go run ./cmd/")
		if strings.HasPrefix(line, "gpumem ") {
			cmds = append(cmds, strings.TrimPrefix(line, "gpumem "))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds
}

// TestReadmeCommands runs the README's examples so the documentation
// cannot drift from the CLI.
func TestReadmeCommands(t *testing.T) {
	cmds := readmeCommands(t)
	if len(cmds) < 15 {
		t.Fatalf("found only %d gpumem commands in the README's sh blocks", len(cmds))
	}
	ran := 0
	for _, c := range cmds {
		args := strings.Fields(c)
		if _, skip := readmeSkip[args[0]]; skip {
			continue
		}
		if strings.Contains(c, "./") || strings.Contains(c, "--plot-out") || strings.Contains(c, "--calibration") || strings.Contains(c, ".json") || strings.Contains(c, ".yaml") || strings.Contains(c, ">") {
			continue // reads or writes files of the reader's own
		}
		ran++
		t.Run(c, func(t *testing.T) {
			out, errOut, code := runCommand(t, args...)
			if code != 0 {
				t.Errorf("exit %d\nstderr: %s", code, errOut)
			}
			if strings.TrimSpace(out) == "" {
				t.Error("printed nothing")
			}
		})
	}
	if ran < 12 {
		t.Errorf("ran only %d README commands", ran)
	}
}

// TestReadmeFamilyTable checks that the README's table of supported
// families is what `gpumem models --families --format markdown` prints,
// so a family added to model/families.go appears in both.
func TestReadmeFamilyTable(t *testing.T) {
	out, stderr, code := runCommand(t, "models", "--families", "--format", "markdown")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), strings.TrimSpace(out)) {
		t.Errorf("README.md's family table differs from `gpumem models --families --format markdown`; replace it with:\n%s", out)
	}
}
