package app

import (
	"io"
	"os"

	"golang.org/x/term"
)

// palette colours output for a terminal; its zero value prints plain text.
type palette struct{ on bool }

func newPalette(w io.Writer, mode string) palette {
	switch mode {
	case "always":
		return palette{on: true}
	case "never":
		return palette{}
	}
	f, ok := w.(*os.File)
	return palette{on: ok && term.IsTerminal(int(f.Fd())) && os.Getenv("NO_COLOR") == ""}
}

func (p palette) wrap(code, s string) string {
	if !p.on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p palette) green(s string) string  { return p.wrap("32", s) }
func (p palette) red(s string) string    { return p.wrap("31", s) }
func (p palette) yellow(s string) string { return p.wrap("33", s) }
func (p palette) cyan(s string) string   { return p.wrap("36", s) }
func (p palette) bold(s string) string   { return p.wrap("1", s) }
