package cli

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/accuracy"
)

var update = flag.Bool("update", false, "rewrite docs/ACCURACY.md and the README's accuracy table from the dev measurements")

// Files the accuracy report is written to, relative to this package.
const (
	accuracyDoc = "../../docs/ACCURACY.md"
	readmeFile  = "../../README.md"
)

// The README's summary table sits between these markers.
const (
	summaryStart = "<!-- accuracy summary: generated, see docs/ACCURACY.md -->\n"
	summaryEnd   = "<!-- end of accuracy summary -->\n"
)

// regenerate is the command that rewrites both files.
const regenerate = "go test ./internal/cli -run TestAccuracyDoc -update"

// TestAccuracyDoc renders the accuracy report the way
// `gpumem validate-against --format markdown` prints it and checks that
// docs/ACCURACY.md and the README's summary table are up to date, so a
// change to the memory model cannot leave stale figures behind.
func TestAccuracyDoc(t *testing.T) {
	out, errOut, code := runCommand(t, "validate-against", "--format", "markdown")
	if code != 0 {
		t.Fatalf("validate-against: exit %d: %s", code, errOut)
	}
	recs, err := accuracy.DevRecords()
	if err != nil {
		t.Fatal(err)
	}
	summary := summaryStart + "\n" + accuracy.Run(recs, accuracy.Options{}).SummaryMarkdown() + "\n" + summaryEnd
	if !strings.Contains(out, summary[len(summaryStart)+1:len(summary)-len(summaryEnd)-1]) {
		t.Fatal("the command's report does not contain the summary table the README shows")
	}
	readme, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	newReadme, err := replaceBetween(string(readme), summary)
	if err != nil {
		t.Fatalf("%s: %v", readmeFile, err)
	}
	if *update {
		if err := os.WriteFile(accuracyDoc, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(readmeFile, []byte(newReadme), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	doc, err := os.ReadFile(accuracyDoc)
	if err != nil {
		t.Fatalf("%v; run %s", err, regenerate)
	}
	if string(doc) != out {
		t.Errorf("docs/ACCURACY.md is stale (the estimates or the measurements changed); run %s\n%s", regenerate, firstDiff(string(doc), out))
	}
	if newReadme != string(readme) {
		t.Errorf("the README's accuracy table is stale; run %s", regenerate)
	}
}

// replaceBetween replaces the README's summary block (markers included)
// with block.
func replaceBetween(readme, block string) (string, error) {
	i := strings.Index(readme, summaryStart)
	j := strings.Index(readme, summaryEnd)
	if i < 0 || j < i {
		return "", errMissingMarkers
	}
	return readme[:i] + block + readme[j+len(summaryEnd):], nil
}

// errMissingMarkers says where the generated table belongs.
var errMissingMarkers = fmt.Errorf("no %q ... %q block for the accuracy table", strings.TrimSpace(summaryStart), strings.TrimSpace(summaryEnd))

// firstDiff shows the first line where two texts differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return "line " + strconv.Itoa(i+1) + ":\n  file:    " + g[i] + "\n  command: " + w[i]
		}
	}
	return "line " + strconv.Itoa(min(len(g), len(w))+1) + ": one text is longer"
}
