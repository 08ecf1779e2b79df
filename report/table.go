package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Align is a column's alignment.
type Align int

// Column alignments.
const (
	Left Align = iota
	Right
)

// TableData is a titled grid of cells rendered as an aligned text table or
// a Markdown table.
type TableData struct {
	Title   string
	Headers []string
	Aligns  []Align // per column; missing entries are Left
	Rows    [][]string
	// Footer rows are separated from the body by a rule (totals).
	Footer [][]string
}

// AddRow appends a row.
func (t *TableData) AddRow(cells ...string) { t.Rows = append(t.Rows, cells) }

// AddFooter appends a footer row.
func (t *TableData) AddFooter(cells ...string) { t.Footer = append(t.Footer, cells) }

func (t *TableData) align(i int) Align {
	if i < len(t.Aligns) {
		return t.Aligns[i]
	}
	return Left
}

// Render writes the table in the given format (Table or Markdown).
func (t *TableData) Render(w io.Writer, f Format) error {
	if f == Markdown {
		return t.renderMarkdown(w)
	}
	return t.renderText(w)
}

func (t *TableData) widths() []int {
	ws := make([]int, len(t.Headers))
	all := append(append([][]string{t.Headers}, t.Rows...), t.Footer...)
	for _, r := range all {
		for i, c := range r {
			if i >= len(ws) {
				ws = append(ws, 0)
			}
			if n := utf8.RuneCountInString(c); n > ws[i] {
				ws[i] = n
			}
		}
	}
	return ws
}

func (t *TableData) renderText(w io.Writer) error {
	ws := t.widths()
	var b bytes.Buffer
	if t.Title != "" {
		b.WriteString(t.Title + "\n")
	}
	line := func(r []string) {
		start := b.Len()
		for i := range ws {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			pad := strings.Repeat(" ", ws[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if t.align(i) == Right {
				b.WriteString(pad + c)
			} else if i == len(ws)-1 {
				b.WriteString(c)
			} else {
				b.WriteString(c + pad)
			}
		}
		// No trailing blanks when the last cells are empty.
		row := bytes.TrimRight(b.Bytes()[start:], " ")
		b.Truncate(start + len(row))
		b.WriteByte('\n')
	}
	rule := func() {
		total := 0
		for i, n := range ws {
			total += n
			if i > 0 {
				total += 2
			}
		}
		b.WriteString(strings.Repeat("-", total) + "\n")
	}
	line(t.Headers)
	rule()
	for _, r := range t.Rows {
		line(r)
	}
	if len(t.Footer) > 0 {
		rule()
		for _, r := range t.Footer {
			line(r)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func (t *TableData) renderMarkdown(w io.Writer) error {
	var b strings.Builder
	if t.Title != "" {
		fmt.Fprintf(&b, "**%s**\n\n", escapeMD(t.Title))
	}
	row := func(r []string) {
		b.WriteString("|")
		for i := range t.Headers {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			b.WriteString(" " + escapeMD(c) + " |")
		}
		b.WriteString("\n")
	}
	row(t.Headers)
	b.WriteString("|")
	for i := range t.Headers {
		if t.align(i) == Right {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		row(r)
	}
	for _, r := range t.Footer {
		bold := make([]string, len(r))
		for i, c := range r {
			if c != "" {
				bold[i] = "**" + c + "**"
			}
		}
		row(bold)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func escapeMD(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
