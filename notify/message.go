package notify

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Bounds of a message's text.
const (
	maxDetails    = 10  // detail lines of a message
	maxLineLength = 300 // characters of a detail line
	maxHeadline   = 500 // characters of the headline
)

// message is what a provider posts: an Event, its text and what was dropped before it.
type message struct {
	Event
	// Delivery identifies this message; a retry posts it again with the same one.
	Delivery string
	// Dropped counts the alerts of the provider dropped since the previous message sent, by
	// why: the rate limit, a full queue.
	DroppedRate, DroppedQueue int
}

// Headline is the message's first line: "[cluster] SEVERITY Reason team: message", without
// the cluster when it has no name and without the team for an Event of the whole cluster.
func (m message) Headline() string {
	var b strings.Builder
	if m.Cluster != "" {
		fmt.Fprintf(&b, "[%s] ", m.Cluster)
	}
	b.WriteString(strings.ToUpper(string(m.Severity)) + " " + string(m.Reason))
	if m.Namespace != "" {
		b.WriteString(" " + m.Namespace)
	}
	b.WriteString(": " + oneLine(m.Message))
	return clip(b.String(), maxHeadline)
}

// Lines are the details under the headline: the object, the revision, the Event's details
// (at most maxDetails lines of maxLineLength characters, then how many more) and the note of
// what was dropped.
func (m message) Lines() []string {
	var lines []string
	if m.Object != "" {
		lines = append(lines, clip("object: "+oneLine(m.Object), maxLineLength))
	}
	if m.Revision != "" {
		lines = append(lines, clip("revision: "+oneLine(m.Revision), maxLineLength))
	}
	for i, d := range m.Details {
		if i == maxDetails {
			lines = append(lines, fmt.Sprintf("… and %d more", len(m.Details)-maxDetails))
			break
		}
		lines = append(lines, clip(oneLine(d), maxLineLength))
	}
	return append(lines, m.Notes()...)
}

// Notes say how many alerts were dropped before this one, and why.
func (m message) Notes() []string {
	var notes []string
	for _, d := range []struct {
		n   int
		why string
	}{{m.DroppedRate, "rate limit"}, {m.DroppedQueue, "queue full"}} {
		switch {
		case d.n == 1:
			notes = append(notes, "(1 more alert was dropped: "+d.why+")")
		case d.n > 1:
			notes = append(notes, fmt.Sprintf("(%d more alerts were dropped: %s)", d.n, d.why))
		}
	}
	return notes
}

// oneLine is s with its line breaks and tabs as spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s)
}

// clip is s cut to n characters, the last one an ellipsis when cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// encoder makes the body and the headers of a provider's request for a message.
type encoder interface {
	encode(m message) (body []byte, header http.Header, err error)
}
