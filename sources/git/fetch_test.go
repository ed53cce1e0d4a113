package git

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFetchClone(t *testing.T) {
	r := newTestRemote(t, nil)
	id := r.Commit("Add GPU pools\n\nLonger body.", map[string]string{
		"deploy/pool.yaml":     "kind: Pool\n",
		"deploy/nested/q.yaml": "kind: Queue\n",
		"README.md":            "outside Path\n",
	})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main", Path: "deploy"})

	rev, err := s.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rev.ID != id || rev.Message != "Add GPU pools" || rev.Author != "Ada Lovelace" {
		t.Errorf("revision = %+v, want ID %s, subject and author", rev, id)
	}
	if rev.Time.IsZero() || rev.Changed != nil {
		t.Errorf("Time = %v, Changed = %v; want a time and nil on the first fetch", rev.Time, rev.Changed)
	}
	if got, want := listFiles(t, rev.Dir), []string{"nested/q.yaml", "pool.yaml"}; !slices.Equal(got, want) {
		t.Errorf("files in Dir = %v, want %v", got, want)
	}
	if got := s.URL(); got != r.URL+"@main//deploy" {
		t.Errorf("URL() = %q", got)
	}
}

func TestFetchNewCommitListsChanged(t *testing.T) {
	r := newTestRemote(t, nil)
	r.Commit("one", map[string]string{"deploy/a.yaml": "a: 1\n", "deploy/b.yaml": "b: 1\n", "x.md": "x"})
	s := newSourceT(t, Options{URL: r.URL, Path: "deploy"})
	ctx := context.Background()
	if _, err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}

	r.Commit("two", map[string]string{"deploy/c.yaml": "c: 1\n"})
	id := r.Commit("three", map[string]string{"deploy/a.yaml": "a: 2\n", "x.md": "outside"})
	rev, err := s.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev.ID != id || rev.Message != "three" {
		t.Errorf("ID, Message = %s, %q; want %s, three", rev.ID, rev.Message, id)
	}
	if !slices.Equal(rev.Changed, []string{"a.yaml", "c.yaml"}) {
		t.Errorf("Changed = %q, want [a.yaml c.yaml] (both commits, inside Path only)", rev.Changed)
	}
	if got := readFile(t, rev.Dir, "a.yaml"); got != "a: 2\n" {
		t.Errorf("a.yaml = %q", got)
	}

	again, err := s.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != id || again.Changed == nil || len(again.Changed) != 0 {
		t.Errorf("unchanged fetch = %s, Changed %#v; want %s and empty", again.ID, again.Changed, id)
	}
}

func TestFetchForcePushConverges(t *testing.T) {
	r := newTestRemote(t, nil)
	base := r.Commit("base", map[string]string{"keep.yaml": "k: 1\n"})
	r.Commit("add", map[string]string{"gone.yaml": "g: 1\n", "dir/old.yaml": "o: 1\n"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	ctx := context.Background()
	rev, err := s.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	untracked := filepath.Join(rev.Dir, "stray.txt")
	if err := os.WriteFile(untracked, []byte("not in git"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Rewrite history: drop "add", commit something else on top of base, force-push.
	r.Git("reset", "-q", "--hard", base)
	r.Write(map[string]string{"keep.yaml": "k: 2\n", "new.yaml": "n: 1\n"})
	r.Git("add", "-A")
	r.Git("commit", "-q", "-m", "rewritten")
	r.Git("push", "-q", "--force", "origin", "HEAD:refs/heads/main")
	id := r.Git("rev-parse", "HEAD")

	rev, err = s.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev.ID != id {
		t.Fatalf("ID = %s, want the force-pushed %s", rev.ID, id)
	}
	if got, want := listFiles(t, rev.Dir), []string{"keep.yaml", "new.yaml"}; !slices.Equal(got, want) {
		t.Errorf("worktree = %v, want exactly %v", got, want)
	}
	if got := readFile(t, rev.Dir, "keep.yaml"); got != "k: 2\n" {
		t.Errorf("keep.yaml = %q", got)
	}
	want := []string{"dir/old.yaml", "gone.yaml", "keep.yaml", "new.yaml"}
	if !slices.Equal(rev.Changed, want) {
		t.Errorf("Changed = %q, want %q", rev.Changed, want)
	}
}

func TestFetchRollbackToAnEarlierCommit(t *testing.T) {
	r := newTestRemote(t, nil)
	old := r.Commit("good", map[string]string{"a": "good"})
	s := newSourceT(t, Options{URL: r.URL})
	ctx := context.Background()
	if _, err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	r.Commit("bad", map[string]string{"a": "bad", "b": "bad"})
	if rev, err := s.Fetch(ctx); err != nil || readFile(t, rev.Dir, "a") != "bad" {
		t.Fatalf("Fetch = %+v, %v", rev, err)
	}
	r.Git("push", "-q", "--force", "origin", old+":refs/heads/main")

	rev, err := s.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev.ID != old || !slices.Equal(listFiles(t, rev.Dir), []string{"a"}) || readFile(t, rev.Dir, "a") != "good" {
		t.Errorf("after the rollback: ID %s, files %v; want %s with a = good", rev.ID, listFiles(t, rev.Dir), old)
	}
	if !slices.Equal(rev.Changed, []string{"a", "b"}) {
		t.Errorf("Changed = %q, want [a b]", rev.Changed)
	}
}

func TestFetchPinnedCommit(t *testing.T) {
	for name, allowSHA := range map[string]bool{"by hash": true, "full fetch": false} {
		t.Run(name, func(t *testing.T) {
			r := newTestRemote(t, nil)
			if allowSHA {
				r.Run(r.Bare, "config", "uploadpack.allowReachableSHA1InWant", "true")
			}
			pinned := r.Commit("pinned", map[string]string{"v.yaml": "v: 1\n"})
			r.Commit("later", map[string]string{"v.yaml": "v: 2\n"})
			s := newSourceT(t, Options{URL: r.URL, Ref: strings.ToUpper(pinned)})

			rev, err := s.Fetch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if rev.ID != pinned || readFile(t, rev.Dir, "v.yaml") != "v: 1\n" {
				t.Errorf("ID = %s, v.yaml = %q; want %s, v: 1", rev.ID, readFile(t, rev.Dir, "v.yaml"), pinned)
			}
			if s.MatchesRef("refs/heads/main") {
				t.Error("a pinned source must not match pushes")
			}
		})
	}
}

func TestFetchTag(t *testing.T) {
	r := newTestRemote(t, nil)
	v1 := r.Commit("release 1", map[string]string{"v.yaml": "v: 1\n"})
	r.Git("tag", "-a", "-m", "version 1", "v1")
	r.Git("tag", "light")
	r.Git("push", "-q", "origin", "v1", "light")
	r.Commit("work in progress", map[string]string{"v.yaml": "v: 2\n"})

	for _, ref := range []string{"refs/tags/v1", "refs/tags/light"} {
		t.Run(ref, func(t *testing.T) {
			s := newSourceT(t, Options{URL: r.URL, Ref: ref})
			rev, err := s.Fetch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if rev.ID != v1 || readFile(t, rev.Dir, "v.yaml") != "v: 1\n" {
				t.Errorf("ID = %s, want the tagged commit %s", rev.ID, v1)
			}
		})
	}
}

func TestFetchRemoteHEAD(t *testing.T) {
	r := newTestRemote(t, nil)
	r.Commit("on main", map[string]string{"f": "main"})
	trunk := r.CommitTo("trunk", "on trunk", map[string]string{"f": "trunk"})
	r.Run(r.Bare, "symbolic-ref", "HEAD", "refs/heads/trunk")

	s := newSourceT(t, Options{URL: r.URL})
	if !s.MatchesRef("refs/heads/anything") {
		t.Error("before the first fetch, the default ref must match any push")
	}
	rev, err := s.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rev.ID != trunk || readFile(t, rev.Dir, "f") != "trunk" {
		t.Errorf("ID = %s, want the remote HEAD's branch trunk at %s", rev.ID, trunk)
	}
	if !s.MatchesRef("refs/heads/trunk") || s.MatchesRef("refs/heads/main") {
		t.Error("after the first fetch, only the remote HEAD's branch must match")
	}
}

func TestFetchFailureKeepsLastGood(t *testing.T) {
	r := newTestRemote(t, nil)
	good := r.Commit("good", map[string]string{"a.yaml": "a: 1\n"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	ctx := context.Background()
	first, err := s.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.Commit("unseen", map[string]string{"a.yaml": "a: 2\n"})
	r.Srv.Close()

	rev, err := s.Fetch(ctx)
	if err == nil {
		t.Fatal("Fetch succeeded with the server down")
	}
	if !strings.HasPrefix(err.Error(), "git: fetch "+r.URL+": ") {
		t.Errorf("error %q does not name the step and URL", err)
	}
	if rev.ID != good || rev.Dir != first.Dir {
		t.Errorf("revision = %s in %s, want the last good %s", rev.ID, rev.Dir, good)
	}
	if got := readFile(t, rev.Dir, "a.yaml"); got != "a: 1\n" {
		t.Errorf("worktree changed: a.yaml = %q", got)
	}
}

func TestFetchErrors(t *testing.T) {
	r := newTestRemote(t, nil)
	r.Commit("one", map[string]string{"deploy/a.yaml": "a"})
	tests := map[string]struct {
		opts Options
		want string
	}{
		"missing branch": {Options{URL: r.URL, Ref: "nope"}, "refs/heads/nope"},
		"missing tag":    {Options{URL: r.URL, Ref: "refs/tags/v9"}, "refs/tags/v9"},
		"missing path":   {Options{URL: r.URL, Path: "prod"}, `path "prod"`},
		"missing repo":   {Options{URL: r.Srv.URL + "/other.git"}, "git: fetch " + r.Srv.URL + "/other.git"},
		"missing commit": {Options{URL: r.URL, Ref: strings.Repeat("ab", 20)}, "is on no branch or tag"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newSourceT(t, tc.opts)
			rev, err := s.Fetch(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to mention %q", err, tc.want)
			}
			if rev.ID != "" {
				t.Errorf("revision = %s, want zero (no good one yet)", rev.ID)
			}
		})
	}
}

func TestDirReusedAndKept(t *testing.T) {
	r := newTestRemote(t, nil)
	id := r.Commit("one", map[string]string{"a": "1"})
	dir := filepath.Join(t.TempDir(), "clone")
	for range 2 {
		s, err := New(Options{URL: r.URL, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		rev, err := s.Fetch(context.Background())
		if err != nil || rev.ID != id || rev.Dir != filepath.Join(dir, treeDir) {
			t.Fatalf("Fetch = %s in %s, %v; want %s in %s", rev.ID, rev.Dir, err, id, filepath.Join(dir, treeDir))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(rev.Dir, "a")); err != nil {
			t.Fatalf("Close removed a directory it did not create: %v", err)
		}
	}

	busy := t.TempDir()
	os.WriteFile(filepath.Join(busy, "precious"), nil, 0o644)
	if _, err := New(Options{URL: r.URL, Dir: busy}); err == nil {
		t.Error("New accepted a non-empty directory that is not a clone")
	}
}

func TestCloseRemovesTempDir(t *testing.T) {
	r := newTestRemote(t, nil)
	r.Commit("one", map[string]string{"a": "1"})
	s, err := New(Options{URL: r.URL})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rev.Dir); !os.IsNotExist(err) {
		t.Errorf("temp dir still there after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Fetch(context.Background()); err != ErrClosed {
		t.Errorf("Fetch after Close = %v, want ErrClosed", err)
	}
}
