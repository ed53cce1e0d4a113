package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// parserWords are the words of the string literals of the format's parser (package render,
// without its tests): a field's name that it reads is one of them.
func parserWords(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(root, "render", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]bool{}
	split := regexp.MustCompile(`[^A-Za-z0-9_-]+`)
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		src, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, n, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					for _, w := range split.Split(s, -1) {
						words[w] = true
					}
				}
			}
			return true
		})
	}
	if !words["gpu-share"] || !words["node_count"] {
		t.Fatalf("the parser's words lack gpu-share or node_count: %d words", len(words))
	}
	return words
}

// fieldRow is a row of a table whose first column is a field: | `resources.gpu` |.
var fieldRow = regexp.MustCompile("^\\| `([a-zA-Z][A-Za-z0-9_.<>\\[\\]-]*)` \\|")

// checkFields returns a problem for each field of d's tables of fields (their first column
// "field") whose name (its last part, e.g. gpu-share of resources.gpu-share) the parser never
// spells; and how many fields it checked.
func checkFields(d doc, words map[string]bool) ([]problem, int) {
	var ps []problem
	n, inFields := 0, false
	for i, l := range strings.Split(d.Text, "\n") {
		if !strings.HasPrefix(l, "|") {
			inFields = false
			continue
		}
		if cells := strings.Split(l, "|"); len(cells) > 2 && !inFields && strings.TrimSpace(cells[1]) == "field" {
			inFields = true
			continue
		}
		m := fieldRow.FindStringSubmatch(l)
		if !inFields || m == nil {
			continue
		}
		n++
		parts := strings.Split(m[1], ".")
		leaf := strings.NewReplacer("[]", "", "<", "", ">", "").Replace(parts[len(parts)-1])
		if !words[leaf] {
			ps = append(ps, problem{d.Name, i + 1, fmt.Sprintf("field %s: the parser (render/) never reads a field %q", m[1], leaf)})
		}
	}
	return ps, n
}

// Every field in format.md's tables is one that the parser reads.
func TestFormatFieldsAreParsed(t *testing.T) {
	words := parserWords(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "format.md"))
	if err != nil {
		t.Fatal(err)
	}
	ps, n := checkFields(doc{Name: "docs/format.md", Text: string(b)}, words)
	if n < 100 {
		t.Errorf("only %d fields in format.md's tables: the scan misses them", n)
	}
	report(t, ps)
}

// The check finds a field that the parser does not read, in a table of fields only.
func TestFieldCheckFindsAnUnknownField(t *testing.T) {
	broken := doc{Name: "broken.md", Text: "| field | type |\n| --- | --- |\n| `resources.gpu-share` | quantity |\n| `resources.gpuShares` | quantity |\n\n" +
		"| key | on |\n| --- | --- |\n| `no-such-label` | Pods |\n"}
	ps, n := checkFields(broken, parserWords(t))
	if n != 2 || len(ps) != 1 || ps[0].String() != `broken.md:4: field resources.gpuShares: the parser (render/) never reads a field "gpuShares"` {
		t.Errorf("%d rows, problems %v", n, ps)
	}
}
