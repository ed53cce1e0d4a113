package local

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/sources"
)

func TestDebouncer(t *testing.T) {
	ms := time.Millisecond
	tests := map[string]struct {
		events []time.Duration // when events arrive; -1 fires the timer
		want   []time.Duration // the wait returned for each event
	}{
		"single event":        {events: []time.Duration{0}, want: []time.Duration{100 * ms}},
		"quiet restarts":      {events: []time.Duration{0, 50 * ms, 120 * ms}, want: []time.Duration{100 * ms, 100 * ms, 100 * ms}},
		"stream hits the cap": {events: []time.Duration{0, 500 * ms, 950 * ms, 1000 * ms, 1200 * ms}, want: []time.Duration{100 * ms, 100 * ms, 50 * ms, 0, 0}},
		"fire starts anew":    {events: []time.Duration{0, 980 * ms, -1, 1100 * ms}, want: []time.Duration{100 * ms, 20 * ms, 100 * ms}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := debouncer{quiet: 100 * ms, max: time.Second}
			t0 := time.Now()
			var got []time.Duration
			for _, at := range tc.events {
				if at < 0 {
					d.fire()
					continue
				}
				got = append(got, d.event(t0.Add(at)))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("waits = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEditSignalsAndFetch(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.yaml", "a: 1\n")
	write(t, root, "b/c.yaml", "c: 1\n")
	src, _ := newSource(t, root)
	before := fetch(t, src)

	write(t, root, "a.yaml", "a: 2\n")
	took := mustSignal(t, src)
	t.Logf("signal %v after the write (debounce %v)", took, testDebounce)
	if took > 2*time.Second {
		t.Errorf("signal took %v, want well under 1 s", took)
	}
	rev := fetch(t, src)
	if rev.ID == before.ID {
		t.Error("ID did not change")
	}
	if want := []string{"a.yaml"}; !slices.Equal(rev.Changed, want) {
		t.Errorf("Changed = %q, want %q", rev.Changed, want)
	}
}

// TestConfigEditSignals: an edit of .gpuctl.yaml (namespace rules, tenancy, queueing) is a new
// revision at once, though other dot-files are not; in a subdirectory too (a tenant's, which
// the render reports as an error).
func TestConfigEditSignals(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.yaml", "a: 1\n")
	write(t, root, ".gpuctl.yaml", "version: v0.1\n")
	src, _ := newSource(t, root)
	before := fetch(t, src)

	write(t, root, ".gpuctl.yaml", "version: v0.1\nqueueing: kueue\n")
	mustSignal(t, src)
	rev := fetch(t, src)
	if rev.ID == before.ID || !slices.Equal(rev.Changed, []string{".gpuctl.yaml"}) {
		t.Errorf("after an edit of .gpuctl.yaml: ID %s -> %s, Changed %q", before.ID, rev.ID, rev.Changed)
	}
	write(t, root, "teams/alice/.gpuctl.yaml", "version: v0.1\n")
	mustSignal(t, src)
	if rev2 := fetch(t, src); !slices.Equal(rev2.Changed, []string{"teams/alice/.gpuctl.yaml"}) {
		t.Errorf("after a tenant's .gpuctl.yaml: Changed %q", rev2.Changed)
	}
}

func TestSignalLatency(t *testing.T) {
	root := t.TempDir()
	src, err := New(Options{Root: root}) // the default debounce
	must(t, err)
	defer src.Close()
	var worst time.Duration
	for i := range 5 {
		write(t, root, "a.yaml", fmt.Sprintf("a: %d\n", i))
		took := mustSignal(t, src)
		worst = max(worst, took)
		time.Sleep(2 * DefaultDebounce) // let stray events of this write settle
		drain(src)
	}
	t.Logf("worst latency of 5 edits: %v (debounce %v)", worst, DefaultDebounce)
	if worst > 2*time.Second {
		t.Errorf("worst latency %v, want well under 1 s", worst)
	}
}

func TestBurstGivesOneSignal(t *testing.T) {
	root := t.TempDir()
	src, err := New(Options{Root: root}) // the default debounce: 100 ms
	must(t, err)
	defer src.Close()
	for i := range 50 {
		write(t, root, fmt.Sprintf("f%02d.yaml", i%10), fmt.Sprintf("i: %d\n", i))
	}
	mustSignal(t, src)
	n := 1
	for {
		if _, ok := waitSignal(src, 2*MaxWait); !ok {
			break
		}
		n++
	}
	t.Logf("50 writes gave %d signal(s)", n)
	if n > 2 {
		t.Errorf("50 writes gave %d signals, want 1 (at most 2)", n)
	}
}

func TestContinuousStreamSignalsWithinMaxWait(t *testing.T) {
	root := t.TempDir()
	src, err := New(Options{Root: root, Debounce: 300 * time.Millisecond})
	must(t, err)
	defer src.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // a write every 20 ms never leaves 300 ms of quiet
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				os.WriteFile(filepath.Join(root, "log.yaml"), []byte(fmt.Sprint(i)), 0o644)
			}
		}
	}()
	took, ok := waitSignal(src, signalWait)
	close(stop)
	<-done
	if !ok {
		t.Fatalf("no signal within %v of a continuous stream", signalWait)
	}
	t.Logf("first signal %v into a continuous stream (MaxWait %v)", took, MaxWait)
	if took > 2*time.Second {
		t.Errorf("first signal after %v, want about MaxWait (%v)", took, MaxWait)
	}
}

func TestNewNestedDirectory(t *testing.T) {
	root := t.TempDir()
	src, _ := newSource(t, root)
	fetch(t, src)
	// mkdir -p and write at once: the file exists before the watch on a/b/c is added.
	write(t, root, "a/b/c/f.yaml", "f: 1\n")
	_, seen := waitUntil(t, src, func(r sources.Revision) bool { return slices.Contains(r.Changed, "a/b/c/f.yaml") })
	if want := []string{"a/b/c/f.yaml"}; !slices.Equal(seen, want) {
		t.Errorf("Changed = %q, want %q", seen, want)
	}
	// Now a/b/c is watched: editing the file signals.
	write(t, root, "a/b/c/f.yaml", "f: 2\n")
	mustSignal(t, src)
	if rev := fetch(t, src); !slices.Equal(rev.Changed, []string{"a/b/c/f.yaml"}) {
		t.Errorf("Changed = %q after an edit in a new directory", rev.Changed)
	}
}

func TestRecreatedAndRenamedDirectories(t *testing.T) {
	root := t.TempDir()
	write(t, root, "sub/deep/x.yaml", "x: 1\n")
	src, _ := newSource(t, root)
	fetch(t, src)

	// Removed and created again: the new directory is watched.
	must(t, os.RemoveAll(filepath.Join(root, "sub")))
	write(t, root, "sub/deep/x.yaml", "x: 2\n")
	want := idOf(t, map[string]string{"sub/deep/x.yaml": "x: 2\n"})
	waitUntil(t, src, func(r sources.Revision) bool { return r.ID == want })
	write(t, root, "sub/deep/x.yaml", "x: 3\n")
	mustSignal(t, src)

	// Renamed: the watches follow the new name, also below it.
	must(t, os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "moved")))
	want = idOf(t, map[string]string{"moved/deep/x.yaml": "x: 3\n"})
	_, seen := waitUntil(t, src, func(r sources.Revision) bool { return r.ID == want })
	if want := []string{"moved/deep/x.yaml", "sub/deep/x.yaml"}; !slices.Equal(seen, want) {
		t.Errorf("Changed = %q after the rename, want %q", seen, want)
	}
	write(t, root, "moved/deep/new/y.yaml", "y: 1\n")
	waitUntil(t, src, func(r sources.Revision) bool { return slices.Contains(r.Changed, "moved/deep/new/y.yaml") })
	write(t, root, "moved/deep/new/y.yaml", "y: 2\n")
	mustSignal(t, src)
	if rev := fetch(t, src); !slices.Equal(rev.Changed, []string{"moved/deep/new/y.yaml"}) {
		t.Errorf("Changed = %q, want [moved/deep/new/y.yaml]", rev.Changed)
	}
}

// editorSaves are the ways editors write file.yaml, as steps run one after another.
var editorSaves = map[string][]func(root, content string) error{
	"in place (VS Code)": {
		func(root, c string) error { return os.WriteFile(filepath.Join(root, "file.yaml"), []byte(c), 0o644) },
	},
	"vim (backup by rename)": {
		func(root, _ string) error { // vim's check that it may write here; gone at once
			if err := os.WriteFile(filepath.Join(root, "4913"), nil, 0o644); err != nil {
				return err
			}
			return os.Remove(filepath.Join(root, "4913"))
		},
		func(root, _ string) error { return rename(root, "file.yaml", "file.yaml~") },
		func(root, c string) error { return os.WriteFile(filepath.Join(root, "file.yaml"), []byte(c), 0o644) },
		func(root, _ string) error { return os.Remove(filepath.Join(root, "file.yaml~")) },
	},
	"swap file renamed over": {
		func(root, c string) error {
			return os.WriteFile(filepath.Join(root, ".file.yaml.swp"), []byte(c), 0o644)
		},
		func(root, _ string) error { return rename(root, ".file.yaml.swp", "file.yaml") },
	},
	"backup file renamed over": {
		func(root, c string) error { return os.WriteFile(filepath.Join(root, "file.yaml~"), []byte(c), 0o644) },
		func(root, _ string) error { return rename(root, "file.yaml~", "file.yaml") },
	},
	"JetBrains safe write": {
		func(root, c string) error {
			return os.WriteFile(filepath.Join(root, "file.yaml___jb_tmp___"), []byte(c), 0o644)
		},
		func(root, _ string) error { return rename(root, "file.yaml", "file.yaml___jb_old___") },
		func(root, _ string) error { return rename(root, "file.yaml___jb_tmp___", "file.yaml") },
		func(root, _ string) error { return os.Remove(filepath.Join(root, "file.yaml___jb_old___")) },
	},
}

func rename(root, from, to string) error {
	return os.Rename(filepath.Join(root, from), filepath.Join(root, to))
}

func TestEditorSaves(t *testing.T) {
	for name, steps := range editorSaves {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, "file.yaml", "v: 0\n")
			write(t, root, "other.yaml", "o: 1\n")
			src, _ := newSource(t, root)
			fetch(t, src)
			for round := 1; round <= 2; round++ { // the file is still seen after a save
				content := fmt.Sprintf("v: %d\n", round)
				want := idOf(t, map[string]string{"file.yaml": content, "other.yaml": "o: 1\n"})
				var seen []string
				for _, step := range steps {
					must(t, step(root, content))
					seen = append(seen, fetch(t, src).Changed...) // temp files never show
				}
				_, last := waitUntil(t, src, func(r sources.Revision) bool { return r.ID == want })
				for _, p := range append(seen, last...) {
					if p != "file.yaml" {
						t.Errorf("round %d: Changed holds %q", round, p)
					}
				}
				if !slices.Contains(append(seen, last...), "file.yaml") {
					t.Errorf("round %d: file.yaml never in Changed", round)
				}
			}
		})
	}
}

func TestHiddenPathsDoNotSignal(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".git/HEAD", "ref: refs/heads/main\n")
	write(t, root, "a.yaml", "a: 1\n")
	write(t, root, "sub/b.yaml", "b: 1\n")
	src, _ := newSource(t, root)
	before := fetch(t, src)

	write(t, root, ".git/HEAD", "ref: refs/heads/dev\n")
	write(t, root, ".git/objects/ab/cdef", "blob")
	write(t, root, ".cache/new/x.yaml", "x: 1\n") // a hidden directory created now
	write(t, root, ".hidden.yaml", "h: 1\n")
	write(t, root, "sub/.env", "SECRET=1\n")
	must(t, os.Remove(filepath.Join(root, ".git/HEAD")))
	if took, ok := waitSignal(src, quietWait); ok {
		t.Errorf("changes in hidden paths signalled after %v", took)
	}
	if rev := fetch(t, src); rev.ID != before.ID || len(rev.Changed) != 0 {
		t.Errorf("hidden files changed the revision: %s -> %s, Changed %q", before.ID, rev.ID, rev.Changed)
	}
}

func TestRemoveAppearsInChanged(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.yaml", "a: 1\n")
	write(t, root, "b/c.yaml", "c: 1\n")
	src, _ := newSource(t, root)
	fetch(t, src)
	must(t, os.Remove(filepath.Join(root, "b/c.yaml")))
	mustSignal(t, src)
	rev := fetch(t, src)
	if want := []string{"b/c.yaml"}; !slices.Equal(rev.Changed, want) {
		t.Errorf("Changed = %q, want %q", rev.Changed, want)
	}
	if want := idOf(t, map[string]string{"a.yaml": "a: 1\n"}); rev.ID != want {
		t.Errorf("ID %s, want %s (the tree without b/c.yaml)", rev.ID, want)
	}
}

func TestChmodSignals(t *testing.T) {
	root := t.TempDir()
	write(t, root, "run.sh", "#!/bin/sh\n")
	src, _ := newSource(t, root)
	fetch(t, src)
	must(t, os.Chmod(filepath.Join(root, "run.sh"), 0o755))
	mustSignal(t, src)
	if rev := fetch(t, src); !slices.Equal(rev.Changed, []string{"run.sh"}) {
		t.Errorf("Changed = %q after chmod +x, want [run.sh]", rev.Changed)
	}
}

func TestIgnored(t *testing.T) {
	for name, want := range map[string]bool{
		".git": true, ".file.yaml.swp": true, "file.yaml~": true, "#file.yaml#": true,
		"file.yaml___jb_tmp___": true, "file.yaml___jb_old___": true,
		"file.yaml": false, "4913": false, "#": false, "a#b": false, "kustomization.yaml": false,
		".gpuctl.yaml": false, ".gpuctl.yaml.swp": true, ".gpuctl.yml": true,
	} {
		if got := ignored(name); got != want {
			t.Errorf("ignored(%q) = %v, want %v", name, got, want)
		}
	}
	for rel, want := range map[string]bool{".": false, "a/b.yaml": false, "a/.git/x": true, ".github/x.yaml": true} {
		if got := hidden(filepath.FromSlash(rel)); got != want {
			t.Errorf("hidden(%q) = %v, want %v", rel, got, want)
		}
	}
}
