package term

import (
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strings"

	xterm "golang.org/x/term"
)

// IsTerminal reports whether w is a terminal (a file on a TTY).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && xterm.IsTerminal(int(f.Fd()))
}

// Palette colours text with ANSI escape codes; its zero value writes plain text.
type Palette struct {
	// On colours the text; false leaves it as it is.
	On bool
}

// NewPalette returns the palette for output to w under a --color mode: "always" colours,
// "never" does not, and anything else ("auto") colours when w is a terminal and the NO_COLOR
// environment variable is unset or empty.
func NewPalette(w io.Writer, mode string) Palette {
	switch mode {
	case "always":
		return Palette{On: true}
	case "never":
		return Palette{}
	}
	return Palette{On: IsTerminal(w) && os.Getenv("NO_COLOR") == ""}
}

// The ANSI select-graphic-rendition codes of the palette.
const (
	bold   = "1"
	red    = "31"
	green  = "32"
	yellow = "33"
	cyan   = "36"
)

func (p Palette) paint(code, s string) string {
	if !p.On {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// Added paints what a change adds or creates (green).
func (p Palette) Added(s string) string { return p.paint(green, s) }

// Changed paints what a change updates in place (yellow).
func (p Palette) Changed(s string) string { return p.paint(yellow, s) }

// Removed paints what a change removes or prunes (red).
func (p Palette) Removed(s string) string { return p.paint(red, s) }

// Error paints an error, a failure or a refusal (red).
func (p Palette) Error(s string) string { return p.paint(red, s) }

// Warning paints a warning (yellow).
func (p Palette) Warning(s string) string { return p.paint(yellow, s) }

// Info paints a note and a diff's hunk header (cyan).
func (p Palette) Info(s string) string { return p.paint(cyan, s) }

// OK paints a success (green).
func (p Palette) OK(s string) string { return p.paint(green, s) }

// Bold paints a heading or a summary.
func (p Palette) Bold(s string) string { return p.paint(bold, s) }

// sourceColours are the colours of Source, one per log source.
var sourceColours = []string{"36", "32", "33", "35", "34", "96", "92", "93", "95", "94"}

// Source paints the name of a log source (a pod, a rank) in a colour of its own, chosen by a
// hash of the name, so that the lines of one pod keep one colour, as stern prints them.
func (p Palette) Source(s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return p.paint(sourceColours[h.Sum32()%uint32(len(sourceColours))], s)
}

// Printable returns s with its control characters (C0 such as ESC, CR, BEL and tab; DEL; C1)
// written as \xNN escapes, so that text an object's author chose — a reason, an event message,
// a drift detail — cannot move the cursor, recolour or overwrite what a terminal shows, nor
// break a table's columns. Other text is returned as it is.
func Printable(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			fmt.Fprintf(&b, `\x%02x`, r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }
