package report

import "io"

// Warnings joins warning lists in order, dropping repeats: a command's
// top-level "warnings" is the model's warnings (a generic reading,
// defaults a sparse config left to its family) followed by those of the
// estimates it made, each once. It returns nil when there are none, so
// the JSON key is omitted.
func Warnings(lists ...[]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range lists {
		for _, w := range l {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	return out
}

// WriteWarnings writes each warning on its own line, "warning: ...", as
// the estimate and params tables end.
func WriteWarnings(w io.Writer, ws []string) error { return writeWarnings(w, ws) }
