package git

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gpuctl/gpuctl/sources"
)

// TestFetchUncheckableRevision: a commit already in the remote whose tree holds a path that Git
// refuses to check out (written with plumbing: git add refuses it) is an error naming the
// commit and the path, the last good revision and its files stay; the next commit, which
// removes the path, is fetched and checked out as ever.
func TestFetchUncheckableRevision(t *testing.T) {
	r := newTestRemote(t, nil)
	good := r.Commit("good", map[string]string{"teams/alice/a.yaml": "a: 1\n", "teams/bob/b.yaml": "b: 1\n"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	ctx := context.Background()
	if _, err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"teams/alice/.GIT/x.yaml", "teams/alice/git~1/x.yaml", "teams/alice/.git./x.yaml", "teams/alice/.g\u200cit/x.yaml"} {
		id := r.CommitTree("bad", map[string]string{"teams/alice/a.yaml": "a: 2\n", bad: "kind: ConfigMap\n"})
		rev, err := s.Fetch(ctx)
		var ue *sources.UncheckableError
		if !errors.As(err, &ue) || ue.Revision != id || ue.Path != path.Dir(bad) {
			t.Fatalf("%s: fetch = %v, want an UncheckableError of %s naming the path", bad, err, id)
		}
		for _, want := range []string{id[:12], fmt.Sprintf("path %q", path.Dir(bad)), "cannot be checked out", "remove the path"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the error %q does not say %q", bad, err, want)
			}
		}
		if rev.ID != good || readFile(t, rev.Dir, "teams/alice/a.yaml") != "a: 1\n" {
			t.Errorf("%s: fetch returned %s (a.yaml %q), want the last good %s, its files untouched", bad, rev.ID, readFile(t, rev.Dir, "teams/alice/a.yaml"), good)
		}
	}
	r.CommitTree("bad", map[string]string{"teams/alice/a.yaml": "a: 2\n", "teams/alice/.GIT/x.yaml": "x\n"})
	fixed := r.Commit("fix", map[string]string{"teams/bob/b.yaml": "b: 2\n"})
	rev, err := s.Fetch(ctx)
	if err != nil || rev.ID != fixed {
		t.Fatalf("fetch of the next good commit = %s, %v; want %s", rev.ID, err, fixed)
	}
	if got := listFiles(t, rev.Dir); !slices.Equal(got, []string{"teams/alice/a.yaml", "teams/bob/b.yaml"}) || readFile(t, rev.Dir, "teams/bob/b.yaml") != "b: 2\n" {
		t.Errorf("files after the fix: %v", got)
	}
	if !slices.Equal(rev.Changed, []string{"teams/bob/b.yaml"}) {
		t.Errorf("Changed = %v, want the file that changed since the last good revision", rev.Changed)
	}
}

// TestFetchUncheckableFirstRevision: a clone whose first commit holds such a path checks
// nothing out, and takes the next good commit.
func TestFetchUncheckableFirstRevision(t *testing.T) {
	r := newTestRemote(t, nil)
	r.Commit("base", map[string]string{"keep.yaml": "k: 1\n"})
	r.CommitTree("bad", map[string]string{".Git/hooks/post-checkout": "#!/bin/sh\n"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	ctx := context.Background()
	if _, err := s.Fetch(ctx); !errors.As(err, new(*sources.UncheckableError)) || !strings.Contains(err.Error(), `path ".Git"`) {
		t.Fatalf("first fetch = %v, want an UncheckableError naming .Git", err)
	}
	fixed := r.Commit("fix", map[string]string{"new.yaml": "n: 1\n"})
	rev, err := s.Fetch(ctx)
	if err != nil || rev.ID != fixed || !slices.Equal(listFiles(t, rev.Dir), []string{"keep.yaml", "new.yaml"}) {
		t.Fatalf("fetch of the good commit = %+v, %v", rev, err)
	}
}

// TestCommitOnUncheckableRevision: a write on a branch whose newest commit cannot be checked
// out is refused, saying so, and nothing is pushed; once a commit removes the path, it lands.
func TestCommitOnUncheckableRevision(t *testing.T) {
	r := newTestRemote(t, nil)
	r.Commit("base", map[string]string{"teams/alice/a.yaml": "a: 1\n"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	ctx := context.Background()
	if _, err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	bad := r.CommitTree("bad", map[string]string{"teams/alice/.GIT/x.yaml": "x\n"})
	var calls atomic.Int64
	_, err := s.Commit(ctx, ada, edits(t, &calls, "", map[string]string{"teams/bob/b.yaml": "b: 1\n"}))
	if !errors.As(err, new(*sources.UncheckableError)) || calls.Load() != 0 || !strings.Contains(err.Error(), `path "teams/alice/.GIT"`) {
		t.Fatalf("commit on %s = %v after %d edits, want an UncheckableError before the edit", bad, err, calls.Load())
	}
	if head := r.Run(r.Bare, "rev-parse", "main"); head != bad {
		t.Fatalf("remote main moved to %s", head)
	}
	r.Commit("fix", map[string]string{"teams/alice/a.yaml": "a: 2\n"})
	if _, err := s.Commit(ctx, ada, edits(t, &calls, "", map[string]string{"teams/bob/b.yaml": "b: 1\n"})); err != nil {
		t.Fatalf("commit after the fix: %v", err)
	}
}

// TestCommitBesideAnyFileName: a file whose name Git takes but kyaml's in-memory filesystem
// refuses stops no commit: the edit sees it, and the commit keeps it.
func TestCommitBesideAnyFileName(t *testing.T) {
	r := newTestRemote(t, nil)
	r.Commit("base", map[string]string{"teams/bob/notes (old).md": "old\n", "teams/bob/résumé ✓.yaml": "r: 1\n", "teams/alice/a.yaml": "a: 1\n"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	var calls atomic.Int64
	done, err := s.Commit(context.Background(), ada, edits(t, &calls, "teams/bob/notes (old).md", map[string]string{"teams/alice/b.yaml": "b: 1\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Run(r.Bare, "ls-tree", "-r", "-z", "--name-only", done.Commit); !strings.Contains(got, "teams/bob/notes (old).md") || !strings.Contains(got, "teams/alice/b.yaml") {
		t.Errorf("tree: %q", got)
	}
}
