package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/sources"
	"github.com/gpuctl/gpuctl/test/gittest"
)

// TestCheckoutSymlinkLeavingTheTree: a team's symlink to a directory outside the checkout
// is checked out as a symlink, and a later commit that puts a directory of files where the
// symlink was writes them into the new tree, not through the link: the directory outside
// stays empty.
func TestCheckoutSymlinkLeavingTheTree(t *testing.T) {
	outside := t.TempDir()
	r := gittest.New(t, nil)
	r.Write(map[string]string{"teams/alice/a.yaml": "a: 1\n"})
	if err := os.Symlink(outside, filepath.Join(r.Work, "teams/alice/up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../../etc/passwd", filepath.Join(r.Work, "teams/alice/passwd.yaml")); err != nil {
		t.Fatal(err)
	}
	r.Commit("links", nil)
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	ctx := context.Background()
	rev, err := s.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"up": outside, "passwd.yaml": "../../../../../../etc/passwd"} {
		if got, err := os.Readlink(filepath.Join(rev.Dir, "teams/alice", name)); err != nil || got != want {
			t.Errorf("%s: %q, %v; want a symlink to %q", name, got, err, want)
		}
	}

	if err := os.Remove(filepath.Join(r.Work, "teams/alice/up")); err != nil {
		t.Fatal(err)
	}
	next := r.Commit("a directory where the link was", map[string]string{"teams/alice/up/x.yaml": "x: 1\n"})
	rev, err = s.Fetch(ctx)
	if err != nil || rev.ID != next {
		t.Fatalf("Fetch = %s, %v; want %s", rev.ID, err, next)
	}
	if fi, err := os.Lstat(filepath.Join(rev.Dir, "teams/alice/up")); err != nil || !fi.IsDir() {
		t.Fatalf("teams/alice/up: %v, %v; want a directory of the tree", fi, err)
	}
	if readFile(t, rev.Dir, "teams/alice/up/x.yaml") != "x: 1\n" {
		t.Error("teams/alice/up/x.yaml lacks its content")
	}
	if entries, err := os.ReadDir(outside); err != nil || len(entries) != 0 {
		t.Errorf("the directory the symlink named holds %v, %v; want it untouched", entries, err)
	}
}

// TestCheckoutFileBecomesDirectory: a file replaced by a directory of the same name, and a
// directory replaced by a file, are checked out as the new tree has them.
func TestCheckoutFileBecomesDirectory(t *testing.T) {
	r := gittest.New(t, nil)
	r.Commit("base", map[string]string{"teams/alice/x.yaml": "file\n", "teams/bob/d/y.yaml": "y: 1\n"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	ctx := context.Background()
	if _, err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	r.Write(map[string]string{"teams/alice/x.yaml": "", "teams/bob/d/y.yaml": ""})
	if err := os.RemoveAll(filepath.Join(r.Work, "teams/bob/d")); err != nil {
		t.Fatal(err)
	}
	next := r.Commit("swap", map[string]string{"teams/alice/x.yaml/z.yaml": "z: 1\n", "teams/bob/d": "now a file\n"})
	rev, err := s.Fetch(ctx)
	if err != nil || rev.ID != next {
		t.Fatalf("Fetch = %s, %v; want %s", rev.ID, err, next)
	}
	want := []string{"teams/alice/x.yaml/z.yaml", "teams/bob/d"}
	if got := listFiles(t, rev.Dir); !slices.Equal(got, want) || readFile(t, rev.Dir, "teams/bob/d") != "now a file\n" || readFile(t, rev.Dir, "teams/alice/x.yaml/z.yaml") != "z: 1\n" {
		t.Errorf("files = %v, want %v with their content", got, want)
	}
}

// TestCheckoutDotDotName: a tree entry named ".." (written with plumbing) is refused before
// anything is written, naming the path; the last good tree stays, and nothing lands beside it.
func TestCheckoutDotDotName(t *testing.T) {
	r := gittest.New(t, nil)
	good := r.Commit("good", map[string]string{"teams/alice/a.yaml": "a: 1\n"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	ctx := context.Background()
	if _, err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	r.CommitTree("escape", map[string]string{"teams/alice/../../x.yaml": "kind: ConfigMap\n"})
	rev, err := s.Fetch(ctx)
	var ue *sources.UncheckableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `".." segment`) {
		t.Fatalf("Fetch = %v, want an UncheckableError for the \"..\" segment", err)
	}
	if rev.ID != good {
		t.Errorf("Fetch returned %s, want the last good %s", rev.ID, good)
	}
	if got := workDir(t, s); !slices.Equal(got, []string{".git", treeDir}) {
		t.Errorf("the working directory holds %v, want the clone and the last good tree alone", got)
	}
	if _, err := os.Lstat(filepath.Join(s.dir, "x.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("x.yaml was written outside the tree: %v", err)
	}
}

// TestCheckoutNamesOfTheWorkingDirectory: files named like the working directory's own
// (tree, a checkout-… directory, the .old of an exchange) are files of the tree like any
// other: they land inside it, and the working directory holds the clone and the tree alone.
func TestCheckoutNamesOfTheWorkingDirectory(t *testing.T) {
	r := gittest.New(t, nil)
	files := map[string]string{"tree/a.yaml": "a: 1\n", "checkout-0123456789ab-1/b.yaml": "b: 1\n", "tree.old": "c\n", "teams/tree": "d\n"}
	r.Commit("names", files)
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	ctx := context.Background()
	for range 2 { // the first checkout, then one exchanged with it
		rev, err := s.Fetch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for name, content := range files {
			if got := readFile(t, rev.Dir, name); got != content {
				t.Errorf("%s: %q, want %q", name, got, content)
			}
		}
		if got := workDir(t, s); !slices.Equal(got, []string{".git", treeDir}) {
			t.Errorf("the working directory holds %v, want the clone and its tree alone", got)
		}
		r.Commit("again", map[string]string{"tree/a.yaml": "a: 2\n"})
		files["tree/a.yaml"] = "a: 2\n"
	}
}

// TestCheckoutHugeLinkTarget: a blob marked as a symbolic link is read up to the longest target
// a link may have, not whole: a longer one fails the checkout, naming the file, and the last good
// revision stays.
func TestCheckoutHugeLinkTarget(t *testing.T) {
	r := gittest.New(t, nil)
	good := r.Commit("good", map[string]string{"teams/alice/a.yaml": "a: 1\n"})
	s := newSourceT(t, Options{URL: r.URL, Ref: "main"})
	ctx := context.Background()
	if _, err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	r.CommitLinks("huge link", map[string]string{"teams/alice/link": strings.Repeat("x", 1<<20)})
	rev, err := s.Fetch(ctx)
	if err == nil || !strings.Contains(err.Error(), "longer than 4096 bytes") || !strings.Contains(err.Error(), "link") {
		t.Fatalf("Fetch = %v, want the link refused for its length", err)
	}
	if rev.ID != good || readFile(t, rev.Dir, "teams/alice/a.yaml") != "a: 1\n" {
		t.Errorf("Fetch returned %s, want the last good %s and its tree", rev.ID, good)
	}
}
