package report

import (
	"bytes"
	"testing"
)

func TestTableText(t *testing.T) {
	tb := &TableData{
		Title:   "t",
		Headers: []string{"name", "size"},
		Aligns:  []Align{Left, Right},
	}
	tb.AddRow("weights", "12.55 GiB")
	tb.AddRow("grads|x", "1 B")
	tb.AddFooter("total", "12.55 GiB")
	var b bytes.Buffer
	if err := tb.Render(&b, Table); err != nil {
		t.Fatal(err)
	}
	want := "t\n" +
		"name          size\n" +
		"------------------\n" +
		"weights  12.55 GiB\n" +
		"grads|x        1 B\n" +
		"------------------\n" +
		"total    12.55 GiB\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestTableMarkdown(t *testing.T) {
	tb := &TableData{Headers: []string{"name", "size"}, Aligns: []Align{Left, Right}}
	tb.AddRow("grads|x", "1 B")
	tb.AddFooter("total", "1 B")
	var b bytes.Buffer
	if err := tb.Render(&b, Markdown); err != nil {
		t.Fatal(err)
	}
	want := "| name | size |\n|---|---:|\n| grads\\|x | 1 B |\n| **total** | **1 B** |\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

func TestParseFormatAndUnits(t *testing.T) {
	for in, want := range map[string]Format{"": Table, "TABLE": Table, "json": JSON, "md": Markdown} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("yaml"); err == nil {
		t.Error("ParseFormat(yaml): want an error")
	}
	if _, err := ParseUnits("furlongs"); err == nil {
		t.Error("ParseUnits(furlongs): want an error")
	}
}
