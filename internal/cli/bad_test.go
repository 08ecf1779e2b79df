package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// badCase is one case of the bad-input corpus in testdata/bad (the
// format is described in testdata/bad/README.md).
type badCase struct {
	Name string
	Dir  string   // absolute path of the case directory
	Args []string // CLI arguments, {dir} replaced
	Exit int
	// Stderr are substrings the CLI's stderr must contain.
	Stderr []string
}

// badCorpus is the corpus directory, relative to this package.
const badCorpus = "../../testdata/bad"

// loadBadCases reads every case of the corpus.
func loadBadCases(t *testing.T) []badCase {
	t.Helper()
	entries, err := os.ReadDir(badCorpus)
	if err != nil {
		t.Fatalf("read the bad-input corpus: %v", err)
	}
	var cases []badCase
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir, err := filepath.Abs(filepath.Join(badCorpus, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, readBadCase(t, e.Name(), dir))
	}
	if len(cases) < 40 {
		t.Fatalf("the corpus has %d cases, want at least 40", len(cases))
	}
	return cases
}

// readBadCase reads the args and expect files of one case.
func readBadCase(t *testing.T, name, dir string) badCase {
	t.Helper()
	c := badCase{Name: name, Dir: dir, Exit: -1}
	args, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	fifo := ""
	for _, line := range strings.Split(strings.TrimRight(string(args), "\n"), "\n") {
		if strings.Contains(line, "{fifo}") && fifo == "" {
			fifo = makeFIFO(t)
		}
		line = strings.ReplaceAll(line, "{fifo}", fifo)
		c.Args = append(c.Args, strings.ReplaceAll(line, "{dir}", dir))
	}
	expect, err := os.ReadFile(filepath.Join(dir, "expect"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for i, line := range strings.Split(string(expect), "\n") {
		key, value, ok := strings.Cut(line, ": ")
		switch {
		case strings.TrimSpace(line) == "":
		case !ok:
			t.Fatalf("%s/expect line %d: want key: value, got %q", name, i+1, line)
		case key == "exit":
			if c.Exit, err = strconv.Atoi(value); err != nil {
				t.Fatalf("%s/expect line %d: exit: %v", name, i+1, err)
			}
		case key == "stderr":
			c.Stderr = append(c.Stderr, value)
		case key == "status" || key == "field" || key == "error":
			// read by the API's test
		default:
			t.Fatalf("%s/expect line %d: unknown key %q", name, i+1, key)
		}
	}
	if c.Exit != ExitError && c.Exit != ExitUsage {
		t.Fatalf("%s/expect: exit must be %d or %d, got %d", name, ExitError, ExitUsage, c.Exit)
	}
	if len(c.Stderr) == 0 {
		t.Fatalf("%s/expect: no stderr line", name)
	}
	return c
}

// makeFIFO makes a named pipe that no process writes to, for the {fifo}
// of a case: opening it for reading would wait forever. (A FIFO cannot
// be committed to the corpus as a file.)
func makeFIFO(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	return p
}

// TestBadInputCorpus runs every case of testdata/bad through the CLI: the
// exit code is the expected one, stderr names the flag, file or key with
// what was expected, and nothing looks like a crash.
func TestBadInputCorpus(t *testing.T) {
	for _, c := range loadBadCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			out, errOut, code := runCommand(t, c.Args...)
			if code != c.Exit {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, c.Exit, errOut)
			}
			for _, want := range c.Stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr does not contain %q:\n%s", want, errOut)
				}
			}
			for _, crash := range []string{"panic", "goroutine ", "runtime error", ".go:"} {
				if strings.Contains(errOut, crash) {
					t.Errorf("stderr looks like a crash (%q):\n%s", crash, errOut)
				}
			}
			if !strings.HasPrefix(errOut, "gpumem: ") {
				t.Errorf("stderr does not start with the error line:\n%s", errOut)
			}
			if out != "" {
				t.Errorf("a failed command printed a result on stdout:\n%.300s", out)
			}
		})
	}
}
