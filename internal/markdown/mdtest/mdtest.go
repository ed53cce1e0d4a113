package mdtest

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
	stdhtml "html"
)

// HTML renders md as CommonMark with GitHub's tables and strikethrough; raw HTML is passed
// through, so that any element that a value smuggled in shows in the result.
func HTML(t testing.TB, md string) string {
	t.Helper()
	var out bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough),
		goldmark.WithRendererOptions(html.WithUnsafe()))
	if err := gm.Convert([]byte(md), &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// Injected lists the elements in rendered HTML that gpuctl never writes itself: headings
// other than its h3 and h4, images, links, scripts, comments, emphasis, lists. Empty when
// there are none. (Its notes are block quotes; the review comment's marker is a comment: a
// caller removes it first.)
func Injected(h string) []string {
	var out []string
	for _, tag := range []string{"<h1", "<h2", "<h5", "<h6", "<img", "<a ", "<script", "<!--", "<em", "<del", "<ol", "<ul", "<li", "<iframe", "<svg"} {
		if strings.Contains(h, tag) {
			out = append(out, tag)
		}
	}
	return out
}

var tableRe = regexp.MustCompile(`(?s)<table>.*?</table>`)

// TableRows returns the number of rows (header row included) of each table in rendered HTML.
func TableRows(h string) []int {
	var out []int
	for _, t := range tableRe.FindAllString(h, -1) {
		out = append(out, strings.Count(t, "<tr>"))
	}
	return out
}

var (
	codeRe    = regexp.MustCompile(`(?s)<code[^>]*>.*?</code>`)
	mentionRe = regexp.MustCompile(`@[A-Za-z0-9]`)
)

// Mentions reports whether rendered HTML has an @mention outside code elements, where GitHub
// and GitLab would notify the user or team.
func Mentions(h string) bool {
	return mentionRe.MatchString(stdhtml.UnescapeString(codeRe.ReplaceAllString(h, "")))
}
