package app

import (
	"io"

	"github.com/gpuctl/gpuctl/internal/term"
)

// palette colours the CLI's output: term's palette, plus the colour of each engine action
// (action, in printplan.go). Its zero value prints plain text.
type palette struct{ term.Palette }

// newPalette returns the palette for w under the --color mode (see term.NewPalette).
func newPalette(w io.Writer, mode string) palette { return palette{term.NewPalette(w, mode)} }
