package git

import (
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// testRemote is a bare repository served over smart HTTP by `git http-backend`, with a work
// clone that pushes to it directly with the git CLI.
type testRemote struct {
	t    *testing.T
	root string // GIT_PROJECT_ROOT
	bare string // root/repo.git
	work string // the pushing clone
	home string
	srv  *httptest.Server
	URL  string // srv.URL + "/repo.git"
}

// newTestRemote creates the bare repository (HEAD on main) and serves it; wrap, when not
// nil, wraps the http-backend handler (for authentication).
func newTestRemote(t *testing.T, wrap func(http.Handler) http.Handler) *testRemote {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git CLI not installed")
	}
	r := &testRemote{t: t, root: t.TempDir(), work: t.TempDir(), home: t.TempDir()}
	r.bare = filepath.Join(r.root, "repo.git")
	r.run(r.root, "init", "--bare", "--initial-branch=main", r.bare)
	r.run(r.work, "init", "--initial-branch=main", ".")
	r.run(r.work, "remote", "add", "origin", r.bare)
	var h http.Handler = &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env: append(r.env(), "GIT_PROJECT_ROOT="+r.root, "GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=test"),
	}
	if wrap != nil {
		h = wrap(h)
	}
	r.srv = httptest.NewServer(h)
	t.Cleanup(r.srv.Close)
	r.URL = r.srv.URL + "/repo.git"
	return r
}

// env isolates the git CLI from the machine's and user's configuration.
func (r *testRemote) env() []string {
	return []string{
		"HOME=" + r.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Ada Lovelace", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada Lovelace", "GIT_COMMITTER_EMAIL=ada@example.com",
		"PATH=" + os.Getenv("PATH"),
	}
}

// run runs git in dir and returns its trimmed output.
func (r *testRemote) run(dir string, args ...string) string {
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
func (r *testRemote) git(args ...string) string {
	r.t.Helper()
	return r.run(r.work, args...)
}

// commit writes files into the work clone (an empty content deletes the file), commits
// with msg and pushes to main; it returns the commit hash.
func (r *testRemote) commit(msg string, files map[string]string) string {
	r.t.Helper()
	return r.commitTo("main", msg, files)
}

// commitTo is commit pushing to branch.
func (r *testRemote) commitTo(branch, msg string, files map[string]string) string {
	r.t.Helper()
	r.write(files)
	r.git("add", "-A")
	r.git("commit", "--allow-empty", "-q", "-m", msg)
	r.git("push", "-q", "origin", "HEAD:refs/heads/"+branch)
	return r.git("rev-parse", "HEAD")
}

// write creates, edits or (for empty content) deletes files in the work clone.
func (r *testRemote) write(files map[string]string) {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.work, filepath.FromSlash(name))
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
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// readFile returns the content of dir/name.
func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeSecret writes content into a new file and returns its path.
func writeSecret(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// newSourceT creates a Source for tests (no polling unless opts says so) closed at cleanup.
func newSourceT(t *testing.T, opts Options) *Source {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// waitSignal reports whether ch receives within d (at once when d is 0).
func waitSignal(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	if d == 0 {
		return false
	}
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}
