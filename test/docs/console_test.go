package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	gpuctlapp "github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// How a console block runs (its info string after "console").
const (
	modeOffline = ""
	modeCluster = "cluster"
	modeNoRun   = "no-run"
)

// command is a "$ " line of a console block and the output that follows it.
type command struct {
	Line int
	Args []string
	Want []string
}

// consoleBlock is a ```console block: its mode and commands.
type consoleBlock struct {
	Line     int
	Mode     string
	Commands []command
}

// consoleBlocks returns the console blocks of a text, and a problem for each that cannot be
// run as marked: an unknown mode, a command that is not gpuctl's, or shell syntax.
func consoleBlocks(d doc) ([]consoleBlock, []problem) {
	var out []consoleBlock
	var ps []problem
	bs, _ := blocks(d.Text)
	for _, b := range bs {
		f := strings.Fields(b.Info)
		if len(f) == 0 || f[0] != "console" {
			continue
		}
		cb := consoleBlock{Line: b.Line, Mode: strings.Join(f[1:], " ")}
		switch cb.Mode {
		case modeOffline, modeCluster, modeNoRun:
		default:
			ps = append(ps, problem{d.Name, b.Line, fmt.Sprintf("```console %s: want ```console, ```console %s or ```console %s", cb.Mode, modeCluster, modeNoRun)})
			continue
		}
		for i, l := range b.Lines {
			line := b.Line + 1 + i
			if !strings.HasPrefix(l, "$ ") {
				if len(cb.Commands) > 0 {
					c := &cb.Commands[len(cb.Commands)-1]
					c.Want = append(c.Want, l)
				} else if cb.Mode != modeNoRun && strings.TrimSpace(l) != "" {
					ps = append(ps, problem{d.Name, line, "output before the first command ($ ...)"})
				}
				continue
			}
			if cb.Mode == modeNoRun {
				cb.Commands = append(cb.Commands, command{Line: line})
				continue
			}
			args, err := shellWords(dropComment(strings.TrimPrefix(l, "$ ")))
			switch {
			case err != nil:
				ps = append(ps, problem{d.Name, line, err.Error() + ": mark the block ```console no-run"})
			case len(args) == 0 || args[0] != progGpuctl:
				ps = append(ps, problem{d.Name, line, "not a gpuctl command: mark the block ```console no-run"})
			default:
				cb.Commands = append(cb.Commands, command{Line: line, Args: args[1:]})
			}
		}
		out = append(out, cb)
	}
	return out, ps
}

// shellWords splits a command line as a shell would, with quotes and backslashes; pipes,
// redirections, substitutions and several commands are refused.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("an unterminated quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, errors.New("an unterminated quote")
			}
			q := s[i+1 : i+1+j]
			if strings.ContainsAny(q, "$`\\") {
				return nil, errors.New("a substitution or escape in double quotes")
			}
			cur.WriteString(q)
			i += j + 1
			inWord = true
		case c == '\\' && i+1 < len(s):
			cur.WriteByte(s[i+1])
			i++
			inWord = true
		case strings.IndexByte("|&;<>()$`*?", c) >= 0:
			return nil, fmt.Errorf("shell syntax %q", c)
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// ellipsis stands for any lines (a line of its own) or any text (within a line).
const ellipsis = "..."

// matchOutput reports whether got matches the lines of want, where a line "..." matches any
// number of lines and "..." within a line any text. Trailing blank lines are not compared.
func matchOutput(want, got []string) bool {
	want, got = trimBlank(want), trimBlank(got)
	// memo[i][j]: want[i:] against got[j:] is known not to match.
	failed := map[[2]int]bool{}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if failed[[2]int{i, j}] {
			return false
		}
		ok := false
		switch {
		case i == len(want):
			ok = j == len(got)
		case strings.TrimSpace(want[i]) == ellipsis:
			for k := j; k <= len(got) && !ok; k++ {
				ok = match(i+1, k)
			}
		default:
			ok = j < len(got) && lineMatches(want[i], got[j]) && match(i+1, j+1)
		}
		if !ok {
			failed[[2]int{i, j}] = true
		}
		return ok
	}
	return match(0, 0)
}

// lineMatches matches a line, "..." in want standing for any text; trailing spaces do not count.
func lineMatches(want, got string) bool {
	want, got = strings.TrimRight(want, " \t"), strings.TrimRight(got, " \t")
	if !strings.Contains(want, ellipsis) {
		return want == got
	}
	parts := strings.Split(want, ellipsis)
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got)
}

func trimBlank(ls []string) []string {
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// runMu serializes the commands: they run in the test process, whose working directory and
// environment they share.
var runMu sync.Mutex

// run runs gpuctl with args in the repository's root and returns what it printed.
func run(t *testing.T, args []string) []string {
	t.Helper()
	runMu.Lock()
	defer runMu.Unlock()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(abs); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Chdir(wd) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	gpuctlapp.Run(ctx, gpuctlapp.Streams{Out: &out, Err: &out}, args)
	return strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
}

// isolate gives the commands an environment of their own: no kubeconfig, daemon, token or keys
// of the user who runs the tests.
func isolate(t *testing.T, kubeconfig string) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("KUBECONFIG", kubeconfig)
	for _, k := range []string{"GPUCTL_SERVER", "GPUCTL_TOKEN", "GPUCTL_AGE_KEYS", "GPUCTL_PROMETHEUS_URL", "NO_COLOR"} {
		t.Setenv(k, "")
		_ = os.Unsetenv(k)
	}
}

// runBlock runs the commands of a console block in order and reports each whose output differs.
func runBlock(t *testing.T, d doc, b consoleBlock) []problem {
	var ps []problem
	if b.Mode == modeNoRun {
		return nil
	}
	for _, c := range b.Commands {
		got := run(t, c.Args)
		if !matchOutput(c.Want, got) {
			ps = append(ps, problem{d.Name, c.Line, fmt.Sprintf("gpuctl %s printed:\n%s\nthe document shows:\n%s",
				strings.Join(c.Args, " "), strings.Join(shorten(got), "\n"), strings.Join(trimBlank(c.Want), "\n"))})
		}
	}
	return ps
}

// shorten keeps the head and tail of a long output (a diff's summary is its last line).
func shorten(ls []string) []string {
	const head, tail = 10, 30
	if len(ls) <= head+tail+1 {
		return ls
	}
	out := append([]string{}, ls[:head]...)
	out = append(out, fmt.Sprintf("[… %d lines …]", len(ls)-head-tail))
	return append(out, ls[len(ls)-tail:]...)
}

// The console blocks of README.md and docs/*.md print what they show: offline ones in an
// environment with no cluster, cluster ones each against a fresh local cluster.
func TestConsoleBlocks(t *testing.T) {
	ran, skipped := 0, 0
	for _, d := range docs(t) {
		bs, ps := consoleBlocks(d)
		report(t, ps)
		for _, b := range bs {
			if b.Mode == modeNoRun {
				skipped++
				continue
			}
			t.Run(fmt.Sprintf("%s:%d", d.Name, b.Line), func(t *testing.T) {
				kubeconfig := filepath.Join(t.TempDir(), "no-kubeconfig")
				if b.Mode == modeCluster {
					c := startCluster(t)
					kubeconfig = c.Kubeconfig
				}
				isolate(t, kubeconfig)
				report(t, runBlock(t, d, b))
			})
			ran++
		}
	}
	t.Logf("%d console blocks run, %d marked no-run", ran, skipped)
}

// startCluster starts a fresh local cluster with the demo's nodes for a test.
func startCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := testcluster.Start(ctx, testcluster.Options{})
	if err != nil {
		t.Fatalf("local cluster: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c
}

// The runner finds a block whose output differs, a command that is not gpuctl's in a block
// that runs, and an unknown mode; "..." stands for lines and for text within a line.
func TestConsoleRunnerFindsDrift(t *testing.T) {
	isolate(t, filepath.Join(t.TempDir(), "no-kubeconfig"))
	broken := doc{Name: "broken.md", Text: strings.Join([]string{
		"```console", // 1
		"$ gpuctl validate examples/training/ds-config.yaml   # a comment", // 2
		"valid: 9 files, 1 document, 1 object rendered, ...",               // 3
		"```",                                   // 4
		"```console",                            // 5
		"$ kubectl get pods",                    // 6
		"```",                                   // 7
		"```console no-run",                     // 8
		"$ kubectl get pods",                    // 9
		"```",                                   // 10
		"```console sometimes",                  // 11
		"```",                                   // 12
		"```console",                            // 13
		"$ gpuctl validate examples/ | tail -1", // 14
		"```",                                   // 15
	}, "\n")}
	bs, ps := consoleBlocks(broken)
	for _, b := range bs {
		ps = append(ps, runBlock(t, broken, b)...)
	}
	sortProblems(ps)
	var got []string
	for _, p := range ps {
		got = append(got, strings.SplitN(p.String(), "\n", 2)[0])
	}
	want := []string{
		"broken.md:2: gpuctl validate examples/training/ds-config.yaml printed:",
		"broken.md:6: not a gpuctl command: mark the block ```console no-run",
		"broken.md:11: ```console sometimes: want ```console, ```console cluster or ```console no-run",
		"broken.md:14: shell syntax '|': mark the block ```console no-run",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	fixed := strings.Replace(broken.Text, "valid: 9 files", "valid: 1 file", 1)
	bs, _ = consoleBlocks(doc{Name: "fixed.md", Text: fixed})
	if ps := runBlock(t, doc{Name: "fixed.md"}, bs[0]); len(ps) != 0 {
		t.Errorf("the block with the right output: %v", ps)
	}
}

// "..." matches any lines on a line of its own and any text within a line; the rest exactly.
func TestMatchOutput(t *testing.T) {
	tests := map[string]struct {
		want, got string
		ok        bool
	}{
		"equal":                      {"a\nb", "a\nb", true},
		"a line differs":             {"a\nb", "a\nc", false},
		"a line missing":             {"a\nb", "a", false},
		"a line more":                {"a", "a\nb", false},
		"ellipsis: no line":          {"a\n...\nb", "a\nb", true},
		"ellipsis: lines":            {"a\n...\nb", "a\nx\ny\nb", true},
		"ellipsis: not the end":      {"a\n...\nb", "a\nx\nc", false},
		"ellipsis in a line":         {"sync: 3 created in ...", "sync: 3 created in 207ms", true},
		"ellipsis in a line, wrong":  {"sync: 3 created in ...", "sync: 4 created in 207ms", false},
		"regexp characters are text": {"a.b (c)", "axb (c)", false},
		"trailing blanks":            {"a\n\n", "a  \n", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := matchOutput(strings.Split(tc.want, "\n"), strings.Split(tc.got, "\n")); got != tc.ok {
				t.Errorf("matchOutput(%q, %q) = %v, want %v", tc.want, tc.got, got, tc.ok)
			}
		})
	}
}
