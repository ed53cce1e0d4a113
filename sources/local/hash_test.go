package local

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// backdate sets the mtime of every file under root an hour back, out of racyWindow, as in a
// tree that was checked out before the source started.
func backdate(t testing.TB, root string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestIDIsAPureFunctionOfContent(t *testing.T) {
	files := map[string]string{"a.yaml": "a: 1\n", "team/b.yaml": "b: 1\n", "team/c/d.yaml": "d: 1\n"}
	one, two := t.TempDir(), t.TempDir()
	for _, rel := range []string{"a.yaml", "team/b.yaml", "team/c/d.yaml"} {
		write(t, one, rel, files[rel])
	}
	for _, rel := range []string{"team/c/d.yaml", "a.yaml", "team/b.yaml"} { // another order
		write(t, two, rel, files[rel])
	}
	backdate(t, two)                                         // other mtimes
	must(t, os.MkdirAll(filepath.Join(two, "empty"), 0o755)) // directories without files do not count
	srcOne, _ := newSource(t, one)
	srcTwo, _ := newSource(t, two)
	idOne, idTwo := fetch(t, srcOne).ID, fetch(t, srcTwo).ID
	if idOne != idTwo {
		t.Fatalf("same content, different IDs: %s and %s", idOne, idTwo)
	}

	must(t, os.Chmod(filepath.Join(two, "team/b.yaml"), 0o755))
	rev := fetch(t, srcTwo)
	if rev.ID == idOne || !slices.Equal(rev.Changed, []string{"team/b.yaml"}) {
		t.Errorf("chmod +x: ID %s (was %s), Changed %q: want a new ID and [team/b.yaml]", rev.ID, idOne, rev.Changed)
	}
	write(t, one, "a.yaml", "a: 2\n")
	if rev := fetch(t, srcOne); rev.ID == idOne {
		t.Error("new content, same ID")
	}
}

func TestSymlinks(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "secret.yaml", "password: hunter2\n")
	root := t.TempDir()
	write(t, root, "a.yaml", "a: 1\n")
	write(t, root, "sub/x.yaml", "x: 1\n")
	write(t, root, ".hidden.yaml", "h: 1\n")
	links := map[string]string{
		"etc":          "/etc",                                          // leaves the root
		"secret.yaml":  filepath.Join(outside, "secret.yaml"),           // leaves the root
		"escape.yaml":  "../" + filepath.Base(outside) + "/secret.yaml", // leaves the root
		"link.yaml":    "a.yaml",                                        // inside: hashed as a.yaml
		"abs.yaml":     filepath.Join(root, "sub", "x.yaml"),            // inside, absolute
		"dangling":     "missing.yaml",                                  // skipped
		"dirlink":      "sub",                                           // directory: not followed
		"peek.yaml":    ".hidden.yaml",                                  // hidden target: not followed
		"sub/up.yaml":  "../a.yaml",                                     // inside, relative upwards
		"sub/loop.yml": "loop.yml",                                      // a loop: cannot be resolved
		"sub/far":      strings.Repeat("../", 20) + "etc/hostname",      // leaves the root
	}
	for name, target := range links {
		must(t, os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))))
	}
	src, logs := newSource(t, root)
	got := fetch(t, src)
	fetch(t, src) // warnings are logged once per path

	want := idOf(t, map[string]string{
		"a.yaml": "a: 1\n", "link.yaml": "a: 1\n", "abs.yaml": "x: 1\n",
		"sub/x.yaml": "x: 1\n", "sub/up.yaml": "a: 1\n",
	})
	if got.ID != want {
		t.Errorf("ID %s, want %s: the in-root links hashed as their targets, nothing else", got.ID, want)
	}
	for _, name := range []string{"etc", "secret.yaml", "escape.yaml", "dangling", "peek.yaml", "sub/loop.yml", "sub/far"} {
		if n := strings.Count(logs.String(), "path="+name+" "); n != 1 {
			t.Errorf("%d warnings for %s, want 1", n, name)
		}
	}
	if !strings.Contains(logs.String(), "leaves the root") {
		t.Error("no warning says the link leaves the root")
	}
	if strings.Contains(logs.String(), "path=dirlink level=WARN") {
		t.Error("a symlinked directory was warned about")
	}
}

// fetched200 is a Source over a tree of 200 files in 10 directories (d0/f000.yaml, ...),
// written long ago, after its first Fetch.
func fetched200(t *testing.T) (src *Source, root string) {
	t.Helper()
	root = t.TempDir()
	for i := range 200 {
		write(t, root, fmt.Sprintf("d%d/f%03d.yaml", i%10, i), fmt.Sprintf("i: %d\n", i))
	}
	backdate(t, root)
	src, _ = newSource(t, root)
	fetch(t, src)
	return src, root
}

func TestFetchReadsOnlyChangedFiles(t *testing.T) {
	src, root := fetched200(t)
	if src.reads != 200 {
		t.Errorf("first Fetch read %d files, want 200", src.reads)
	}
	fetch(t, src)
	if src.reads != 0 {
		t.Errorf("unchanged Fetch read %d files, want 0", src.reads)
	}
	write(t, root, "d3/f013.yaml", "i: changed\n")
	rev := fetch(t, src)
	if src.reads != 1 || !slices.Equal(rev.Changed, []string{"d3/f013.yaml"}) {
		t.Errorf("Fetch after one edit read %d files, Changed %q: want 1 and [d3/f013.yaml]", src.reads, rev.Changed)
	}
}

func TestRacyFileIsReadAgain(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "a.yaml")
	write(t, root, "a.yaml", "a: 1\n")
	src, _ := newSource(t, root)
	first := fetch(t, src)
	// Same size, same mtime: only the racy rule makes Fetch read it again.
	fi, err := os.Stat(p)
	must(t, err)
	write(t, root, "a.yaml", "a: 2\n")
	must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
	if rev := fetch(t, src); rev.ID == first.ID {
		t.Error("a same-size rewrite within the mtime granularity was missed")
	}
}

func TestChangedPaths(t *testing.T) {
	d := func(b byte, exec bool) digest { return digest{sum: [32]byte{b}, exec: exec} }
	prev := map[string]digest{"same": d(1, false), "edit": d(2, false), "gone": d(3, false), "mode": d(4, false)}
	cur := map[string]digest{"same": d(1, false), "edit": d(9, false), "mode": d(4, true), "added": d(5, false)}
	if got, want := changed(prev, cur), []string{"added", "edit", "gone", "mode"}; !slices.Equal(got, want) {
		t.Errorf("changed = %q, want %q", got, want)
	}
	if got := changed(cur, cur); got == nil || len(got) != 0 {
		t.Errorf("changed of equal trees = %#v, want empty and not nil", got)
	}
}

// makeTree writes n files of about 300 bytes into 20 directories under root.
func makeTree(b *testing.B, root string, n int) {
	b.Helper()
	for i := range n {
		p := filepath.Join(root, fmt.Sprintf("team-%02d", i%20), fmt.Sprintf("pool-%04d.yaml", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat(fmt.Sprintf("line %d\n", i), 40)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFetch1000Files measures a Fetch of a 1,000-file tree after one file changed: one
// file read, 1,000 stats. The write is not timed.
func BenchmarkFetch1000Files(b *testing.B) {
	root := b.TempDir()
	makeTree(b, root, 1000)
	backdate(b, root)
	src, err := New(Options{Root: root})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	ctx := b.Context()
	if _, err := src.Fetch(ctx); err != nil {
		b.Fatal(err)
	}
	edited := filepath.Join(root, "team-07", "pool-0007.yaml")
	reads := 0
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if err := os.WriteFile(edited, []byte(fmt.Sprintf("edit %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rev, err := src.Fetch(ctx)
		if err != nil || len(rev.Changed) != 1 {
			b.Fatalf("Fetch: %v, Changed %q", err, rev.Changed)
		}
		reads += src.reads
	}
	b.ReportMetric(float64(reads)/float64(b.N), "files-read/op")
}

// BenchmarkFetch1000FilesCold measures the first Fetch of a 1,000-file tree: every file read.
func BenchmarkFetch1000FilesCold(b *testing.B) {
	root := b.TempDir()
	makeTree(b, root, 1000)
	src, err := New(Options{Root: root})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	ctx := b.Context()
	for b.Loop() {
		src.mu.Lock()
		src.cache, src.prev = map[string]cached{}, nil
		src.mu.Unlock()
		if _, err := src.Fetch(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
