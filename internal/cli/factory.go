package cli

import (
	"io"
	"net/http"
	"os"
	"time"

	"golang.org/x/term"
)

// IOStreams are the standard streams a command reads and writes. Tests
// replace them with buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// OutTTY reports whether Out is a terminal (tables may use width and colour).
	OutTTY bool
	// ErrTTY reports whether ErrOut is a terminal (progress bars are drawn only then).
	ErrTTY bool
	// Width is the terminal width in columns, 0 when unknown or not a terminal.
	Width int
}

// Factory carries what commands need from the outside world: streams,
// environment and an HTTP client. Commands read these only through the
// factory, so tests inject fakes.
type Factory struct {
	IO         *IOStreams
	Getenv     func(string) string
	HTTPClient *http.Client
	// Now returns the current time (injected for tests).
	Now func() time.Time
}

// SystemFactory returns a factory bound to the process's real streams and environment.
func SystemFactory() *Factory {
	ios := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if fd := int(os.Stdout.Fd()); term.IsTerminal(fd) {
		ios.OutTTY = true
		if w, _, err := term.GetSize(fd); err == nil {
			ios.Width = w
		}
	}
	ios.ErrTTY = term.IsTerminal(int(os.Stderr.Fd()))
	return &Factory{
		IO:         ios,
		Getenv:     os.Getenv,
		HTTPClient: &http.Client{Timeout: 60 * time.Second},
		Now:        time.Now,
	}
}
