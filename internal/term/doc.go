// Package term is how gpuctl writes to a terminal: whether a stream is one, and the one colour
// palette of its text output (the CLI's plan, sync and status, and review's text report).
// Colours are named by what they mean (added, changed, removed, error, warning, info, ok), so
// every command paints the same thing the same way.
//
//	p := term.NewPalette(os.Stdout, "auto") // colours only on a terminal without NO_COLOR
//	fmt.Println(p.Added("+ Job alice/train"), p.Error("failed"))
package term
