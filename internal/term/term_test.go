package term

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestPalette(t *testing.T) {
	on := Palette{On: true}
	for name, tc := range map[string]struct{ got, want string }{
		"added":   {on.Added("x"), "\x1b[32mx\x1b[0m"},
		"changed": {on.Changed("x"), "\x1b[33mx\x1b[0m"},
		"removed": {on.Removed("x"), "\x1b[31mx\x1b[0m"},
		"error":   {on.Error("x"), "\x1b[31mx\x1b[0m"},
		"warning": {on.Warning("x"), "\x1b[33mx\x1b[0m"},
		"info":    {on.Info("x"), "\x1b[36mx\x1b[0m"},
		"ok":      {on.OK("x"), "\x1b[32mx\x1b[0m"},
		"bold":    {on.Bold("x"), "\x1b[1mx\x1b[0m"},
		"off":     {Palette{}.Error("x"), "x"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", name, tc.got, tc.want)
		}
	}
}

// TestNewPalette: always and never decide; auto colours a terminal only, and never with
// NO_COLOR set.
func TestNewPalette(t *testing.T) {
	var buf bytes.Buffer
	if !NewPalette(&buf, "always").On || NewPalette(&buf, "never").On || NewPalette(&buf, "auto").On {
		t.Error("always colours, never and auto on a buffer do not")
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	if IsTerminal(devNull) || NewPalette(devNull, "auto").On {
		t.Errorf("%s is not a terminal", os.DevNull)
	}
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no terminal to test auto on:", err)
	}
	defer tty.Close()
	t.Setenv("NO_COLOR", "")
	if !NewPalette(tty, "auto").On {
		t.Error("auto does not colour a terminal")
	}
	t.Setenv("NO_COLOR", "1")
	if NewPalette(tty, "auto").On {
		t.Error("auto colours a terminal with NO_COLOR set")
	}
}

// TestSourceKeepsOneColourPerName: a log source is painted the same way every time, two
// sources get different colours here, and without colour the name is left as it is.
func TestSourceKeepsOneColourPerName(t *testing.T) {
	p := Palette{On: true}
	a, b := p.Source("rank-0"), p.Source("rank-1")
	if a != p.Source("rank-0") || !strings.Contains(a, "rank-0") || !strings.HasPrefix(a, "\x1b[") {
		t.Errorf("Source(rank-0) = %q, not stable or not coloured", a)
	}
	if a[:5] == b[:5] {
		t.Errorf("rank-0 and rank-1 share a colour: %q %q", a, b)
	}
	if got := (Palette{}).Source("rank-0"); got != "rank-0" {
		t.Errorf("without colour: %q", got)
	}
}

// TestPrintable: control characters that an object's author put in a text (ESC sequences that
// recolour or clear the screen, CR that overwrites the line, tabs and newlines that break a
// table) come out as visible escapes; other text, non-ASCII included, is unchanged.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode 日本": "plain text, ünïcode 日本",
		"\x1b[2J\x1b[31mowned":   `\x1b[2J\x1b[31mowned`,
		"ok\rFAILED":             `ok\x0dFAILED`,
		"a\tb\nc\x07\x7f\u009b":  `a\x09b\x0ac\x07\x7f\x9b`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
