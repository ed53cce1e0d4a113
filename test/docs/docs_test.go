package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// root is the repository's root, relative to this package's directory (go test's working
// directory).
const root = "../.."

// doc is a Markdown file of the repository.
type doc struct {
	// Name is the path from the repository's root, e.g. docs/cli.md.
	Name string
	Text string
}

// docs reads README.md and docs/*.md.
func docs(t *testing.T) []doc {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	names = append([]string{filepath.Join(root, "README.md")}, names...)
	var ds []doc
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, n)
		ds = append(ds, doc{Name: filepath.ToSlash(rel), Text: string(b)})
	}
	if len(ds) < 5 {
		t.Fatalf("found %d documents in %s: the glob is wrong", len(ds), root)
	}
	return ds
}

// block is a fenced code block of a document.
type block struct {
	// Info is the fence's info string, e.g. "console no-run"; Line the line of the fence (1-based).
	Info  string
	Line  int
	Lines []string
}

// blocks returns the fenced code blocks (``` or ~~~) of a Markdown text, and the text outside
// them with each block's lines blanked (so that line numbers still count).
func blocks(text string) ([]block, string) {
	var bs []block
	lines := strings.Split(text, "\n")
	outside := make([]string, len(lines))
	var cur *block
	fence := ""
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		if cur == nil {
			if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
				fence = trimmed[:3]
				cur = &block{Info: strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])), Line: i + 1}
				continue
			}
			outside[i] = l
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])) == "" {
			bs = append(bs, *cur)
			cur = nil
			continue
		}
		cur.Lines = append(cur.Lines, l)
	}
	return bs, strings.Join(outside, "\n")
}

// problem is what a check found, at a document's line.
type problem struct {
	Doc  string
	Line int
	Msg  string
}

func (p problem) String() string { return fmt.Sprintf("%s:%d: %s", p.Doc, p.Line, p.Msg) }

// lineOf is the 1-based line of the byte offset off in text.
func lineOf(text string, off int) int { return strings.Count(text[:off], "\n") + 1 }

// The programs whose flags the docs are checked against, and the ways a command line names them.
const (
	progGpuctl     = "gpuctl"
	progReconciler = "gpuctl-reconciler"
)

var (
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	flagName = regexp.MustCompile(`(?:^|[\s\[(|])--([a-z0-9][a-z0-9-]*)`)
	loneFlag = regexp.MustCompile(`^--([a-z0-9][a-z0-9-]*)(?:[= \[].*)?$`)
	// commandSep splits a shell line into its commands.
	commandSep = regexp.MustCompile(`&&|\|\||[|;]`)
)

// program is the program a command starts with (gpuctl, gpuctl-reconciler, as a path or a
// kubectl plugin), or "".
func program(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) > 1 && f[0] == "kubectl" && f[1] == progGpuctl {
		return progGpuctl
	}
	if len(f) == 0 {
		return ""
	}
	switch filepath.Base(f[0]) {
	case progGpuctl:
		return progGpuctl
	case progReconciler:
		return progReconciler
	}
	return ""
}

// dropComment removes a shell comment (" # ...") from a command line.
func dropComment(l string) string {
	if i := strings.Index(l, " #"); i >= 0 {
		return l[:i]
	}
	if strings.HasPrefix(strings.TrimSpace(l), "#") {
		return ""
	}
	return l
}

// namedFlag is a flag that a document gives a program.
type namedFlag struct {
	Prog, Name string
	Line       int
}

// flagsIn returns the flags that a document names: in code spans and code-block lines that
// run gpuctl or gpuctl-reconciler, and, where lone is set, in code spans that are a flag alone
// (Prog "": any of the two programs).
func flagsIn(text string, lone bool) []namedFlag {
	var out []namedFlag
	fromCommand := func(cmd string, line int) {
		for _, part := range commandSep.Split(cmd, -1) {
			part = strings.TrimSpace(part)
			prog := program(part)
			if prog == "" {
				continue
			}
			for _, m := range flagName.FindAllStringSubmatch(part, -1) {
				out = append(out, namedFlag{Prog: prog, Name: m[1], Line: line})
			}
		}
	}
	bs, outside := blocks(text)
	for _, m := range codeSpan.FindAllStringSubmatchIndex(outside, -1) {
		span := strings.TrimSpace(outside[m[2]:m[3]])
		line := lineOf(outside, m[0])
		if lm := loneFlag.FindStringSubmatch(span); lone && lm != nil {
			out = append(out, namedFlag{Name: lm[1], Line: line})
			continue
		}
		fromCommand(strings.TrimPrefix(span, "$ "), line)
	}
	for _, b := range bs {
		joined, start := "", 0
		for i, l := range b.Lines {
			if joined == "" {
				start = b.Line + 1 + i
			}
			l = dropComment(strings.TrimPrefix(strings.TrimSpace(l), "$ "))
			if strings.HasSuffix(l, "\\") {
				joined += strings.TrimSuffix(l, "\\") + " "
				continue
			}
			fromCommand(joined+l, start)
			joined = ""
		}
	}
	return out
}

var routeRef = regexp.MustCompile(`\b(GET|POST|PUT|PATCH|DELETE) (/[A-Za-z0-9_.{}/$-]*)`)

// namedRoute is a route of the daemon that a document names.
type namedRoute struct {
	Method, Path string
	Line         int
}

// routesIn returns the routes of gpuctl-reconciler's API that a text names ("GET
// /api/v1/jobs/{jobId}"), without their query; Kubernetes' own API paths and a prefix
// ("GET /api/v1/...") are left out.
func routesIn(text string) []namedRoute {
	var out []namedRoute
	for _, m := range routeRef.FindAllStringSubmatchIndex(text, -1) {
		method, path := text[m[2]:m[3]], strings.TrimRight(text[m[4]:m[5]], ".")
		if !strings.HasPrefix(path, "/api/v1/") || strings.HasPrefix(path, "/api/v1/namespaces") || strings.HasSuffix(path, "/") {
			continue
		}
		out = append(out, namedRoute{Method: method, Path: path, Line: lineOf(text, m[0])})
	}
	return out
}

// pathParam matches a path parameter, whose name docs may spell their own way.
var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// routeKey is a route with its parameters unnamed: "GET /api/v1/jobs/{}".
func routeKey(method, path string) string {
	return strings.ToUpper(method) + " " + pathParam.ReplaceAllString(path, "{}")
}

// checkFlags returns a problem for each flag of flags that its program lacks. known maps a
// program to its flags; Prog "" is checked against every program's.
func checkFlags(d doc, flags []namedFlag, known map[string]map[string]bool) []problem {
	var ps []problem
	for _, f := range flags {
		ok := false
		for prog, set := range known {
			if (f.Prog == "" || f.Prog == prog) && set[f.Name] {
				ok = true
			}
		}
		if !ok {
			who := f.Prog
			if who == "" {
				who = progGpuctl + " or " + progReconciler
			}
			ps = append(ps, problem{d.Name, f.Line, fmt.Sprintf("--%s is not a flag of any command of %s", f.Name, who)})
		}
	}
	return ps
}

// checkRoutes returns a problem for each route of d that table (routeKey → true) lacks.
func checkRoutes(d doc, table map[string]bool) []problem {
	var ps []problem
	for _, r := range routesIn(d.Text) {
		if !table[routeKey(r.Method, r.Path)] {
			ps = append(ps, problem{d.Name, r.Line, fmt.Sprintf("%s %s is not a route of gpuctl-reconciler's API (its OpenAPI document)", r.Method, r.Path)})
		}
	}
	return ps
}

// sortProblems sorts problems by document and line.
func sortProblems(ps []problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Doc != ps[j].Doc {
			return ps[i].Doc < ps[j].Doc
		}
		return ps[i].Line < ps[j].Line
	})
}

// report fails t with every problem, by document and line.
func report(t *testing.T, ps []problem) {
	t.Helper()
	sortProblems(ps)
	for _, p := range ps {
		t.Error(p)
	}
}
