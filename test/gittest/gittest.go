package gittest

import (
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testRemote is a bare repository served over smart HTTP by `git http-backend`, with a work
// clone that pushes to it directly with the git CLI.
// Remote is a bare repository served over HTTP, and a work clone that pushes to it.
type Remote struct {
	t    testing.TB
	Root string // GIT_PROJECT_ROOT
	Bare string // root/repo.git
	Work string // the pushing clone
	Home string
	Srv  *httptest.Server
	URL  string // srv.URL + "/repo.git"
}

// newTestRemote creates the bare repository (HEAD on main) and serves it; wrap, when not
// nil, wraps the http-backend handler (for authentication).
// New creates the repository (branch main) and serves it; wrap may add middleware (auth).
// Tests are skipped only when no git CLI is installed.
func New(t testing.TB, wrap func(http.Handler) http.Handler) *Remote {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git CLI not installed")
	}
	r := &Remote{t: t, Root: t.TempDir(), Work: t.TempDir(), Home: t.TempDir()}
	r.Bare = filepath.Join(r.Root, "repo.git")
	r.Run(r.Root, "init", "--bare", "--initial-branch=main", r.Bare)
	r.Run(r.Work, "init", "--initial-branch=main", ".")
	r.Run(r.Work, "remote", "add", "origin", r.Bare)
	var h http.Handler = &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env: append(r.env(), "GIT_PROJECT_ROOT="+r.Root, "GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=test"),
	}
	if wrap != nil {
		h = wrap(h)
	}
	r.Srv = httptest.NewServer(h)
	t.Cleanup(r.Srv.Close)
	r.URL = r.Srv.URL + "/repo.git"
	return r
}

// env isolates the git CLI from the machine's and user's configuration.
func (r *Remote) env() []string {
	return []string{
		"HOME=" + r.Home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Ada Lovelace", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada Lovelace", "GIT_COMMITTER_EMAIL=ada@example.com",
		"PATH=" + os.Getenv("PATH"),
	}
}

// run runs git in dir and returns its trimmed output.
// Run runs git in dir.
func (r *Remote) Run(dir string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = r.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// git runs git in the work clone.
// Git runs git in the work clone.
func (r *Remote) Git(args ...string) string {
	r.t.Helper()
	return r.Run(r.Work, args...)
}

// commit writes files into the work clone (an empty content deletes the file), commits
// with msg and pushes to main; it returns the commit hash.
// Commit writes files (empty content removes one), commits and pushes to main.
func (r *Remote) Commit(msg string, files map[string]string) string {
	r.t.Helper()
	return r.CommitTo("main", msg, files)
}

// commitTo is commit pushing to branch.
// CommitTo commits and pushes to branch.
func (r *Remote) CommitTo(branch, msg string, files map[string]string) string {
	r.t.Helper()
	r.Write(files)
	r.Git("add", "-A")
	r.Git("commit", "--allow-empty", "-q", "-m", msg)
	r.Git("push", "-q", "origin", "HEAD:refs/heads/"+branch)
	return r.Git("rev-parse", "HEAD")
}

// write creates, edits or (for empty content) deletes files in the work clone.
// Write writes files in the work clone (empty content removes one).
func (r *Remote) Write(files map[string]string) {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.Work, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(p); err != nil {
				r.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// listFiles returns the slash-separated paths of the regular files under dir, .git aside.

// CommitTree pushes to main a commit of the work clone's index (the tree of its last Commit)
// with files (path → content) added, parented on the work clone's HEAD, written with Git's
// plumbing (hash-object, mktree, commit-tree), which takes paths that `git add` refuses
// (teams/alice/.GIT/x.yaml); it returns the commit hash. The work clone's HEAD moves to it,
// its index and files stay: the next Commit is made from them, without the paths of files.
func (r *Remote) CommitTree(msg string, files map[string]string) string {
	r.t.Helper()
	return r.commitTree(msg, files, "100644")
}

// CommitLinks is CommitTree of symbolic links (path → target), which the plumbing takes
// whatever their target (one longer than a file system allows).
func (r *Remote) CommitLinks(msg string, links map[string]string) string {
	r.t.Helper()
	return r.commitTree(msg, links, "120000")
}

// commitTree is CommitTree of files of mode (100644 a file, 120000 a symbolic link).
func (r *Remote) commitTree(msg string, files map[string]string, mode string) string {
	r.t.Helper()
	type dir map[string]any // name → dir, or "mode type hash" of a file
	top := dir{}
	add := func(name, entry string) {
		parts := strings.Split(name, "/")
		d := top
		for _, p := range parts[:len(parts)-1] {
			sub, ok := d[p].(dir)
			if !ok {
				sub = dir{}
				d[p] = sub
			}
			d = sub
		}
		d[parts[len(parts)-1]] = entry
	}
	for _, line := range strings.Split(r.input("", "ls-tree", "-r", "-z", r.Git("write-tree")), "\x00") {
		if entry, name, ok := strings.Cut(line, "\t"); ok {
			add(name, entry)
		}
	}
	for name, content := range files {
		add(name, mode+" blob "+r.input(content, "hash-object", "-w", "--stdin"))
	}
	var write func(d dir) string
	write = func(d dir) string {
		var b strings.Builder
		for name, v := range d {
			if sub, ok := v.(dir); ok {
				fmt.Fprintf(&b, "040000 tree %s\t%s\n", write(sub), name)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", v, name)
			}
		}
		return r.input(b.String(), "mktree")
	}
	c := r.Git("commit-tree", write(top), "-p", "HEAD", "-m", msg)
	r.Git("push", "-q", "origin", c+":refs/heads/main")
	r.Git("update-ref", "HEAD", c)
	return c
}

// input runs git in the work clone with stdin and returns its trimmed output.
func (r *Remote) input(stdin string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Work
	cmd.Env = r.env()
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}
