package markdown_test

import (
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/markdown"
	"github.com/gpuctl/gpuctl/internal/markdown/mdtest"
)

// hostile are values that try to leave their place in a Markdown document.
var hostile = []string{
	"\n## Approved\n| x |",
	"<img src=x>",
	"name\r\n\r\n</details>\n\n# Approved",
	"`code` and ``more``",
	"`",
	" spaced ",
	"[click](http://evil.example/) ![i](http://evil.example/i.png)",
	"@alice, @org/team and ada@example.com",
	"**bold** _it_ ~~gone~~ $x^2$",
	`a\|b | c`,
	"1. item",
	"- item",
	"+ item",
	"> quote",
	"=== ",
	"&lt;img src=x&gt; &amp;",
	"<!-- hidden --> <script>alert(1)</script>",
	"tab\there\x00nul\u2028sep",
	"",
}

var (
	cells   = regexp.MustCompile(`(?s)<td>(.*?)</td>`)
	tags    = regexp.MustCompile(`<[^>]*>`)
	mention = regexp.MustCompile(`@[A-Za-z0-9]`)
)

// visible is the text that HTML shows, without the zero-width spaces that break mentions.
func visible(h string) string {
	return strings.ReplaceAll(html.UnescapeString(tags.ReplaceAllString(h, "")), "\u200b", "")
}

// Each value in a table row stays in its cell, as the same text, with no element of its own.
func TestEscapedValuesStayInTheirCell(t *testing.T) {
	for _, v := range hostile {
		t.Run(v, func(t *testing.T) {
			md := "| code | text |\n|---|---|\n| " + markdown.CodeCell(v) + " | " + markdown.Text(v) + " |\n"
			out := mdtest.HTML(t, md)
			if n := mdtest.TableRows(out); len(n) != 1 || n[0] != 2 {
				t.Fatalf("%v table rows, want the header and one:\n%s\n%s", n, md, out)
			}
			got := cells.FindAllStringSubmatch(out, -1)
			if len(got) != 2 {
				t.Fatalf("%d cells, want 2:\n%s\n%s", len(got), md, out)
			}
			code, text := got[0][1], got[1][1]
			if !strings.HasPrefix(code, "<code>") || strings.Count(code, "<") != 2 {
				t.Errorf("the code cell holds more than one code element: %s\n%s", code, md)
			}
			if strings.Contains(text, "<") {
				t.Errorf("the text cell holds an element: %s\n%s", text, md)
			}
			want := markdown.OneLine(v)
			if v != "" && visible(code) != want {
				t.Errorf("code cell shows %q, want %q\n%s", visible(code), want, md)
			}
			if visible(text) != strings.TrimSpace(want) { // a cell's text is trimmed
				t.Errorf("text cell shows %q, want %q\n%s", visible(text), want, md)
			}
			if mention.MatchString(html.UnescapeString(text)) {
				t.Errorf("text cell holds a mention: %s", text)
			}
		})
	}
}

// Outside a table: a value in code, in text and in raw HTML starts no block and no element.
func TestEscapedValuesInLinesAndHTML(t *testing.T) {
	for _, v := range hostile {
		t.Run(v, func(t *testing.T) {
			md := markdown.Text(v) + "\n" + markdown.Text(v) + " in " + markdown.Code(v) + "\n\n" +
				"<details><summary>" + markdown.HTML(v) + "</summary>\n\n" +
				markdown.Fence(v) + "\n" + v + "\n" + markdown.Fence(v) + "\n\n</details>\n"
			out := mdtest.HTML(t, md)
			if bad := mdtest.Injected(out); len(bad) > 0 || strings.Contains(out, "<strong") || strings.Contains(out, "<table") || strings.Contains(out, "<blockquote") {
				t.Errorf("%v in the HTML:\n%s\n%s", bad, md, out)
			}
			if n := strings.Count(out, "<details>"); n != 1 || strings.Count(out, "</details>") != 1 || strings.Count(out, "<pre>") != 1 {
				t.Errorf("the details block or the code block was broken:\n%s\n%s", md, out)
			}
			summary := regexp.MustCompile(`(?s)<summary>(.*?)</summary>`).FindStringSubmatch(out)
			if summary == nil || visible(summary[1]) != markdown.OneLine(v) || mention.MatchString(html.UnescapeString(summary[1])) {
				t.Errorf("summary %q, want the text %q", summary, markdown.OneLine(v))
			}
		})
	}
}

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{"plain": "plain", "a\nb": `a\nb`, "a\r\nb\tc": `a\r\nb\tc`,
		"nul\x00": `nul\x00`, "sep\u2028": `sep\u2028`, "ünï": "ünï"} {
		if got := markdown.OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLongestBacktickRun(t *testing.T) {
	for s, want := range map[string]int{"": 0, "plain": 0, "a`b": 1, "``x`": 2, "x```y``": 3} {
		if got := markdown.LongestBacktickRun(s); got != want {
			t.Errorf("%q: %d, want %d", s, got, want)
		}
	}
}
