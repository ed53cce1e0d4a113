package git

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpuctl/gpuctl/sources"
	"github.com/gpuctl/gpuctl/test/gittest"
)

var ada = sources.CommitOptions{Author: sources.Signature{Name: "alice", Email: "alice@gpuctl"},
	Committer: sources.Signature{Name: "gpuctl-reconciler", Email: "gpuctl-reconciler@gpuctl"}}

// edits returns an EditFunc that returns files (nil content: delete) under the message, and
// counts its calls; it checks that the tree it is given holds want.
func edits(t *testing.T, calls *atomic.Int64, want string, files map[string]string) sources.EditFunc {
	return func(fsys filesys.FileSystem, dir string) (*sources.Edit, error) {
		calls.Add(1)
		if want != "" && !fsys.Exists(filepath.Join(dir, want)) {
			t.Errorf("the tree lacks %s", want)
		}
		e := &sources.Edit{Message: "gpuctl: test edit\n"}
		for p, c := range files {
			e.Files = append(e.Files, sources.FileChange{Path: p, Data: []byte(c), Delete: c == ""})
		}
		return e, nil
	}
}

// TestCommitPushes: an edit over the tree of Path is committed on top of the remote's branch
// (nested directories made, a file changed, one removed, the others kept byte for byte) and
// pushed; the working directory stays at the fetched revision until the next Fetch brings
// the commit.
func TestCommitPushes(t *testing.T) {
	r := newTestRemote(t, nil)
	r.Commit("base", map[string]string{"deploy/a.yaml": "a: 1\n", "deploy/old.yaml": "o: 1\n", "deploy/x/keep.yaml": "k\n", "README.md": "r\n"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main", Path: "deploy"})
	ctx := context.Background()
	rev, err := s.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	done, err := s.Commit(ctx, ada, edits(t, &calls, "x/keep.yaml", map[string]string{
		"a.yaml": "a: 2\n", "old.yaml": "", "teams/alice/new.yaml": "n: 1\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || done.Attempts != 1 || done.Branch != "main" || done.PullRequest != "" {
		t.Fatalf("committed %+v after %d edits", done, calls.Load())
	}
	slices.Sort(done.Files)
	if want := []string{"deploy/a.yaml", "deploy/old.yaml", "deploy/teams/alice/new.yaml"}; !slices.Equal(done.Files, want) {
		t.Errorf("files %v, want %v", done.Files, want)
	}
	if head := r.Run(r.Bare, "rev-parse", "main"); head != done.Commit {
		t.Fatalf("remote main %s, want %s", head, done.Commit)
	}
	if got := r.Run(r.Bare, "log", "-1", "--format=%an <%ae>|%cn|%s", "main"); got != "alice <alice@gpuctl>|gpuctl-reconciler|gpuctl: test edit" {
		t.Errorf("commit: %s", got)
	}
	if got := r.Run(r.Bare, "ls-tree", "-r", "--name-only", "main"); got != "README.md\ndeploy/a.yaml\ndeploy/teams/alice/new.yaml\ndeploy/x/keep.yaml" {
		t.Errorf("tree:\n%s", got)
	}
	r.Run(r.Bare, "fsck", "--strict") // the objects are well formed
	if readFile(t, rev.Dir, "a.yaml") != "a: 1\n" {
		t.Error("Commit changed the working directory")
	}
	next, err := s.Fetch(ctx)
	if err != nil || next.ID != done.Commit || readFile(t, next.Dir, "teams/alice/new.yaml") != "n: 1\n" {
		t.Fatalf("fetch after the commit: %+v, %v", next, err)
	}
}

// TestCommitRetriesWhenTheBranchMoved: someone pushes between the fetch and the push; the push
// is refused by the remote (its ref is no longer the one the edit was made on), and the edit
// is made again on the new commit, which both then hold.
func TestCommitRetriesWhenTheBranchMoved(t *testing.T) {
	var r *gittest.Remote
	var raced atomic.Bool
	r = newTestRemote(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if strings.HasSuffix(req.URL.Path, "/git-receive-pack") && raced.CompareAndSwap(false, true) {
				r.Commit("someone else", map[string]string{"other.yaml": "o: 1\n"})
			}
			h.ServeHTTP(w, req)
		})
	})
	first := r.Commit("base", map[string]string{"a.yaml": "a: 1\n"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	var calls atomic.Int64
	done, err := s.Commit(context.Background(), ada, edits(t, &calls, "a.yaml", map[string]string{"b.yaml": "b: 1\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 || done.Attempts != 2 {
		t.Fatalf("%d edits, %d attempts; want 2", calls.Load(), done.Attempts)
	}
	log := r.Run(r.Bare, "log", "--format=%s", "main")
	if log != "gpuctl: test edit\nsomeone else\nbase" {
		t.Fatalf("remote log:\n%s", log)
	}
	if parent := r.Run(r.Bare, "rev-parse", "main~2"); parent != first {
		t.Errorf("history rewritten: main~2 %s, want %s", parent, first)
	}
}

// TestCommitRefused: a remote that refuses the push (a pre-receive hook) is a *PushError
// after one attempt; the remote and the clone's working directory are as they were.
func TestCommitRefused(t *testing.T) {
	r := newTestRemote(t, nil)
	head := r.Commit("base", map[string]string{"a.yaml": "a: 1\n"})
	hook := filepath.Join(r.Bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'protected branch' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := newSourceT(t, Options{URL: r.URL, Ref: "main", Dir: dir})
	rev, err := s.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	_, err = s.Commit(context.Background(), ada, edits(t, &calls, "", map[string]string{"a.yaml": "a: 2\n"}))
	var pe *sources.PushError
	if !errors.As(err, &pe) || calls.Load() != 1 {
		t.Fatalf("got %v after %d edits; want a PushError after 1", err, calls.Load())
	}
	if !strings.Contains(err.Error(), r.URL) {
		t.Errorf("error does not name the remote: %v", err)
	}
	if got := r.Run(r.Bare, "rev-parse", "main"); got != head {
		t.Errorf("remote moved to %s", got)
	}
	if files := listFiles(t, rev.Dir); r.Run(dir, "rev-parse", "HEAD") != head || !slices.Equal(files, []string{"a.yaml"}) || readFile(t, rev.Dir, "a.yaml") != "a: 1\n" {
		t.Errorf("clone not as it was at %s: files %v", head, files)
	}
}

// TestCommitToNewBranch: with a branch, the commit goes there (main stays); a branch that
// exists is refused.
func TestCommitToNewBranch(t *testing.T) {
	r := newTestRemote(t, nil)
	head := r.Commit("base", map[string]string{"a.yaml": "a: 1\n"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	opts := ada
	opts.Branch = "gpuctl/create-sft"
	var calls atomic.Int64
	done, err := s.Commit(context.Background(), opts, edits(t, &calls, "", map[string]string{"sft.yaml": "s: 1\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if done.Branch != "gpuctl/create-sft" || done.Base != "main" || r.Run(r.Bare, "rev-parse", "gpuctl/create-sft") != done.Commit ||
		r.Run(r.Bare, "rev-parse", "main") != head {
		t.Fatalf("%+v", done)
	}
	if _, err := s.Commit(context.Background(), opts, edits(t, &calls, "", map[string]string{"x.yaml": "x: 1\n"})); err == nil {
		t.Fatal("a branch that exists was pushed to")
	}
}

// TestCommitRefusesPathsOutside: an edit cannot write outside the tree, into .git or any of
// its spellings, or into a dot directory; nothing is pushed.
func TestCommitRefusesPathsOutside(t *testing.T) {
	r := newTestRemote(t, nil)
	base := r.Commit("base", map[string]string{"deploy/a.yaml": "a: 1\n"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main", Path: "deploy"})
	for _, p := range []string{"../x.yaml", "/etc/x", ".git/hooks/pre-commit", "a/../../b", "x/.git/config", "",
		"teams/alice/.GIT", "teams/alice/.GIT/x.yaml", "teams/alice/.x/cm.yaml", "teams/alice/GIT~1/x.yaml", "teams/alice/.git./x.yaml",
		"teams/alice/.g\u200cit/x.yaml"} {
		var calls atomic.Int64
		if _, err := s.Commit(context.Background(), ada, edits(t, &calls, "", map[string]string{p: "x"})); err == nil || errors.As(err, new(*sources.PushError)) {
			t.Errorf("%q: %v", p, err)
		}
	}
	if head := r.Run(r.Bare, "rev-parse", "main"); head != base {
		t.Errorf("remote main moved to %s", head)
	}
}

func TestCheckRepoPath(t *testing.T) {
	for p, want := range map[string]string{
		"teams/alice/a.yaml":            "",
		"teams/bob/notes (old).md":      "",
		"teams/alice/.GIT":              `git: path "teams/alice/.GIT": ".GIT" is .git to Git`,
		"teams/alice/.git":              `".git" is .git to Git`,
		"teams/alice/GIT~1":             `"GIT~1" is .git to Git`,
		"teams/alice/.git.":             `".git." is .git to Git`,
		"teams/alice/.g\u200cit/a.yaml": "is .git to Git",
		"teams/alice/.x/cm.yaml":        `".x" starts with a dot`,
		"../x.yaml":                     `".." segment`,
		"/etc/x":                        "relative",
	} {
		err := checkRepoPath(p)
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("checkRepoPath(%q) = %v, want %q", p, err, want)
		}
	}
}

// TestCommitErrorsHideCredentials: a password in the URL never shows in an error.
func TestCommitErrorsHideCredentials(t *testing.T) {
	r := newTestRemote(t, func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) })
	})
	url := strings.Replace(r.URL, "http://", "http://ci:s3cret-pass@", 1)
	s := newSourceT(t, Options{URL: url, Ref: "main"})
	var calls atomic.Int64
	_, err := s.Commit(context.Background(), ada, edits(t, &calls, "", map[string]string{"a.yaml": "x"}))
	var pe *sources.PushError
	if !errors.As(err, &pe) || strings.Contains(err.Error(), "s3cret") || calls.Load() != 0 {
		t.Fatalf("%v", err)
	}
}
