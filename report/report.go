// Package report renders gpumem results as terminal tables, Markdown and
// JSON. The memory and model packages compute numbers; this package only
// presents them, so the CLI and the HTTP API print the same JSON.
package report

import (
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// Format is an output format.
type Format string

// Output formats.
const (
	Table    Format = "table"
	JSON     Format = "json"
	Markdown Format = "markdown"
)

// ParseFormat validates a --format value.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "", "table", "text":
		return Table, nil
	case "json":
		return JSON, nil
	case "markdown", "md":
		return Markdown, nil
	}
	return "", fmt.Errorf("unknown format %q (want table, json or markdown)", s)
}

// Units selects how byte sizes are written in tables.
type Units string

// Unit systems.
const (
	IEC Units = "iec" // GiB, MiB: what nvidia-smi and CUDA errors use
	SI  Units = "si"  // GB, MB
)

// ParseUnits validates a --units value.
func ParseUnits(s string) (Units, error) {
	switch strings.ToLower(s) {
	case "", "iec", "gib":
		return IEC, nil
	case "si", "gb":
		return SI, nil
	}
	return "", fmt.Errorf("unknown units %q (want iec or si)", s)
}

// Options control rendering.
type Options struct {
	Format Format
	Units  Units
	// Width is the terminal width in columns (0: unknown; tables are not truncated).
	Width int
	// TTY is true when writing to a terminal.
	TTY bool
	// Explain adds the formula and source of each component.
	Explain bool
}

// Bytes formats b in the chosen unit system.
func (o Options) Bytes(b units.Bytes) string {
	if o.Units == SI {
		return units.FormatSI(b)
	}
	return units.FormatIEC(b)
}
