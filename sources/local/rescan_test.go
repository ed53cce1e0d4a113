package local

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A Fetch between two walks hashes only the paths that file events named (rescan). Whatever
// happens to the tree, its revision must be the one a walk of the whole tree gives: random
// edits, creations, removals, renames of files and directories, mode changes and symlinks,
// each followed by a Fetch, are checked against a new Source's first (walking) Fetch.
func TestRescanIsTheWalk(t *testing.T) {
	root := t.TempDir()
	for i := range 40 {
		write(t, root, fmt.Sprintf("d%d/f%02d.yaml", i%4, i), fmt.Sprintf("i: %d\n", i))
	}
	src, _ := newSource(t, root)
	fetch(t, src)
	rng := rand.New(rand.NewPCG(18, 2))
	dirs := func() []string {
		var out []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && p != root {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	files := func() []string {
		var out []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	pick := func(list []string) string {
		if len(list) == 0 {
			return ""
		}
		return list[rng.IntN(len(list))]
	}
	incremental := 0
	for step := range 150 {
		var did string
		for range 1 + rng.IntN(3) { // a Fetch may follow several changes
			did = randomChange(t, rng, root, dirs(), files(), pick, step)
		}
		rev := fetch(t, src)
		if !src.walked {
			incremental++
		}
		fresh, err := New(Options{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		want := fetch(t, fresh)
		if rev.ID != want.ID {
			t.Fatalf("step %d (%s): Fetch gave %s, a walk of the tree %s", step, did, rev.ID, want.ID)
		}
		for rel, d := range fresh.prev {
			if got, ok := src.Digest(rel); !ok || got != d.sum {
				t.Fatalf("step %d (%s): digest of %s differs from the walk's", step, did, rel)
			}
		}
		fresh.Close()
	}
	if incremental < 100 {
		t.Errorf("only %d of 150 Fetches hashed the events' paths alone; the others walked", incremental)
	}
}

// randomChange makes one random change below root and says what it did.
func randomChange(t *testing.T, rng *rand.Rand, root string, dirs, files []string, pick func([]string) string, step int) string {
	t.Helper()
	name := func(ext string) string { return fmt.Sprintf("n%03d-%d%s", step, rng.IntN(1000), ext) }
	dir := root
	if d := pick(dirs); d != "" && rng.IntN(3) > 0 {
		dir = d
	}
	f := pick(files)
	if fi, err := os.Lstat(f); f != "" && err == nil && !fi.Mode().IsRegular() && rng.IntN(2) == 0 {
		must(t, os.Remove(f)) // a link: writes through it may meet a gone directory
		return "remove link " + f
	}
	switch op := rng.IntN(11); {
	case op == 0 || f == "":
		p := filepath.Join(dir, name(".yaml"))
		must(t, os.WriteFile(p, []byte(name("")), 0o644))
		return "create " + p
	case op == 1 && regular(f):
		must(t, os.WriteFile(f, []byte(name("")), 0o644))
		return "write " + f
	case op == 2:
		must(t, os.Remove(f))
		return "remove " + f
	case op == 3:
		to := filepath.Join(dir, name(".yaml"))
		must(t, os.Rename(f, to))
		return "rename " + f + " to " + to
	case op == 4:
		nd := filepath.Join(dir, name(""))
		must(t, os.MkdirAll(filepath.Join(nd, "sub"), 0o755))
		must(t, os.WriteFile(filepath.Join(nd, "a.yaml"), []byte(name("")), 0o644))
		must(t, os.WriteFile(filepath.Join(nd, "sub", "b.yaml"), []byte(name("")), 0o644))
		return "new tree " + nd
	case op == 5 && dir != root:
		must(t, os.RemoveAll(dir))
		return "remove tree " + dir
	case op == 6 && dir != root:
		to := filepath.Join(root, name(""))
		must(t, os.Rename(dir, to))
		return "rename tree " + dir + " to " + to
	case op == 7 && regular(f):
		fi, err := os.Lstat(f)
		must(t, err)
		must(t, os.Chmod(f, fi.Mode()^0o100))
		return "chmod " + f
	case op == 8:
		link := filepath.Join(dir, name(".yaml"))
		if err := os.Symlink(f, link); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		return "link " + link + " to " + f
	case op == 9:
		p := filepath.Join(dir, "."+name(".yaml")) // hidden: not part of the tree
		must(t, os.WriteFile(p, []byte("x"), 0o644))
		return "hidden " + p
	case op == 10 && regular(f): // a same-size rewrite just after a write (the racy case)
		must(t, os.WriteFile(f, []byte("racy: 1"), 0o644))
		must(t, os.WriteFile(f, []byte("racy: 2"), 0o644))
		return "racy rewrite " + f
	default:
		p := filepath.Join(root, name(".yml"))
		must(t, os.WriteFile(p, []byte(name("")), 0o644))
		return "create " + p
	}
}

func regular(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

// An edit is found by a Fetch that reads that file alone and walks nothing, even when the
// Fetch follows the write at once (before the debounce, and before the watcher has read its
// events: the barrier waits for them).
func TestFetchAfterAnEditReadsThatFile(t *testing.T) {
	src, root := fetched200(t)
	for i := range 20 {
		rel := fmt.Sprintf("d%d/f%03d.yaml", i%10, i*7)
		write(t, root, rel, fmt.Sprintf("edit: %d\n", i))
		rev := fetch(t, src)
		if src.walked || src.reads != 1 || !slices.Equal(rev.Changed, []string{rel}) {
			t.Fatalf("edit %d: walked %v, read %d files, Changed %q: want no walk, 1 read, [%s]", i, src.walked, src.reads, rev.Changed, rel)
		}
	}
}

// The watch is trusted for FullScanEvery at most, and not at all without its barrier: a
// change that made no event (here: made while the events were dropped) is found by the walk.
func TestFetchWalksWhenTheWatchIsNotTrusted(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.yaml", "a: 1\n")
	src, _ := newSource(t, root)
	first := fetch(t, src)
	write(t, root, "b.yaml", "b: 1\n")
	src.watch.sync()
	src.watch.take() // the events are lost
	if rev := fetch(t, src); src.walked || rev.ID != first.ID {
		t.Fatalf("with the events lost, Fetch walked %v and gave a new revision %v: the test does not test", src.walked, rev.ID != first.ID)
	}
	src.full = time.Now().Add(-FullScanEvery)
	if rev := fetch(t, src); !src.walked || !slices.Equal(rev.Changed, []string{"b.yaml"}) {
		t.Errorf("a Fetch FullScanEvery after the last walk: walked %v, Changed %q; want a walk that finds b.yaml", src.walked, rev.Changed)
	}
}

// Without a writable temporary directory there is no barrier: every Fetch walks the tree.
func TestFetchWalksWithoutTheBarrier(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	root := t.TempDir()
	write(t, root, "a.yaml", "a: 1\n")
	src, _ := newSource(t, root)
	fetch(t, src)
	write(t, root, "c.yaml", "c: 1\n")
	if rev := fetch(t, src); !src.walked || !slices.Equal(rev.Changed, []string{"c.yaml"}) {
		t.Errorf("a Fetch without the barrier: walked %v, Changed %q; want a walk that finds c.yaml", src.walked, rev.Changed)
	}
}

// Quiet says that nothing changed between the last two fetches, even when the content is the
// same again: a file removed and written back makes the same revision, and is not quiet.
func TestQuiet(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.yaml", "a: 1\n")
	src, _ := newSource(t, root)
	first := fetch(t, src)
	if src.Quiet() {
		t.Error("the first Fetch (a walk) is quiet")
	}
	fetch(t, src)
	if !src.Quiet() {
		t.Error("a Fetch with no event since the one before is not quiet")
	}
	must(t, os.Remove(filepath.Join(root, "a.yaml")))
	write(t, root, "a.yaml", "a: 1\n")
	if rev := fetch(t, src); rev.ID != first.ID || src.Quiet() {
		t.Errorf("removed and written back: same revision %v, quiet %v; want the same revision, not quiet", rev.ID == first.ID, src.Quiet())
	}
	fetch(t, src)
	if !src.Quiet() {
		t.Error("quiet again: not")
	}
}
