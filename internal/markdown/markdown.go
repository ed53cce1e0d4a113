package markdown

import (
	"fmt"
	"html"
	"strings"
)

// MaxChars bounds every Markdown document gpuctl writes (a review comment, a drift report),
// below GitHub's limit of 65,536 characters for a comment or issue body (GitLab's is larger).
// Each writer leaves out what does not fit and counts it in a note.
const MaxChars = 65000

// Words is s with its runs of white space (line breaks included) as one space, and what
// control characters remain escaped as OneLine does: a message written by someone else (an
// event's, a condition's) as one row of a table or a terminal.
func Words(s string) string { return OneLine(strings.Join(strings.Fields(s), " ")) }

// OneLine keeps s on one line: line breaks and tabs are written as \n, \r and \t, other
// control characters (and the Unicode line and paragraph separators) as \xNN or \uNNNN.
func OneLine(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var sb strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r < 0x100 && isControl(r):
			fmt.Fprintf(&sb, `\x%02x`, r)
		case isControl(r):
			fmt.Fprintf(&sb, `\u%04x`, r)
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029'
}

// zeroWidthSpace goes between an @ and what follows, so that GitHub and GitLab do not read
// a mention (@user, @org/team) in text; it is invisible where the text is shown.
const zeroWidthSpace = "&#8203;"

// textEscaper backslash-escapes the ASCII punctuation that starts inline Markdown anywhere in
// a line (emphasis, code, links and images, autolinks and HTML, entities, math,
// strikethrough) or ends a table cell, and breaks mentions. With [ and ] escaped, ( and !
// start nothing.
var textEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "#", `\#`, "|", `\|`,
	"~", `\~`, "<", `\<`, ">", `\>`, "&", `\&`, "$", `\$`, "@", "@"+zeroWidthSpace,
)

// Text escapes s as plain text anywhere in a Markdown line, a table cell included: on one
// line, every character that Markdown or HTML would read escaped, mentions broken. A bare
// URL may still be linked by GitHub: its text is the address it links to.
func Text(s string) string {
	s = textEscaper.Replace(OneLine(s))
	// At the start of a line, "-", "+", "1." and "1)" start a list and "=" may underline a
	// heading.
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	switch {
	case strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") || strings.HasPrefix(s, "="):
		s = `\` + s
	case digits > 0 && digits < len(s) && (s[digits] == '.' || s[digits] == ')'):
		s = s[:digits] + `\` + s[digits:]
	}
	return s
}

// Code formats s as an inline code span on one line, outside a table (see CodeCell): the
// span is delimited by a run of backticks longer than any inside s. Inside code, Markdown,
// HTML and mentions are not read.
func Code(s string) string {
	s = OneLine(s)
	if s == "" {
		return "` `"
	}
	fence := strings.Repeat("`", LongestBacktickRun(s)+1)
	// A space on each side keeps a backtick at an end from joining the fence; CommonMark
	// strips one space from each side when both are there, so those get one more.
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || (strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ")) {
		s = " " + s + " "
	}
	return fence + s + fence
}

// CodeCell is Code for a table cell: pipes are escaped too, which GitHub Flavored Markdown
// reads as cell boundaries even inside code spans.
func CodeCell(s string) string {
	return strings.ReplaceAll(Code(s), "|", `\|`)
}

// HTML escapes s as text inside raw HTML (a <summary> or a <code> element): on one line, so
// that it cannot end the HTML block, with &, <, >, quotes escaped and mentions broken.
func HTML(s string) string {
	return strings.ReplaceAll(html.EscapeString(OneLine(s)), "@", "@"+zeroWidthSpace)
}

// Fence returns the backtick fence of a fenced code block that holds body: longer than any
// run of backticks in body (at least three), so that no line of body can close it.
func Fence(body string) string {
	return strings.Repeat("`", max(3, LongestBacktickRun(body)+1))
}

// LongestBacktickRun is the length of the longest run of backticks in s: a code span or fence
// around s needs one more.
func LongestBacktickRun(s string) int {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
