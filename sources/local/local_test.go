package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/sources"
)

// Generous waits: a signal is expected within Debounce (+ MaxWait at worst); tests wait much
// longer so that a loaded machine does not make them flaky, and assert latency separately.
const (
	testDebounce = 50 * time.Millisecond
	signalWait   = 5 * time.Second
	quietWait    = 500 * time.Millisecond
)

// logBuf collects a Source's log for assertions; it is written from the watcher goroutine.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// newSource starts a Source on root with the test debounce, closed at the end of the test; the
// log is printed when the test fails.
func newSource(t *testing.T, root string) (*Source, *logBuf) {
	t.Helper()
	logs := &logBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	src, err := New(Options{Root: root, Debounce: testDebounce, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := src.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("source log:\n%s", logs)
		}
	})
	return src, logs
}

// write creates or replaces root/rel (slash-separated), creating its directories.
func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func fetch(t *testing.T, src *Source) sources.Revision {
	t.Helper()
	rev, err := src.Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	return rev
}

// waitSignal waits up to d for a value on Changes and returns how long it took.
func waitSignal(src *Source, d time.Duration) (time.Duration, bool) {
	start := time.Now()
	select {
	case <-src.Changes():
		return time.Since(start), true
	case <-time.After(d):
		return d, false
	}
}

// mustSignal fails the test unless Changes receives a value within signalWait.
func mustSignal(t *testing.T, src *Source) time.Duration {
	t.Helper()
	took, ok := waitSignal(src, signalWait)
	if !ok {
		t.Fatalf("no signal on Changes within %v", signalWait)
	}
	return took
}

// drain drops a pending signal.
func drain(src *Source) {
	select {
	case <-src.Changes():
	default:
	}
}

// waitUntil fetches after each signal until ok holds for the revision, and returns it with
// every path that any of those fetches reported as changed.
func waitUntil(t *testing.T, src *Source, ok func(sources.Revision) bool) (sources.Revision, []string) {
	t.Helper()
	var seen []string
	deadline := time.Now().Add(signalWait)
	for {
		if _, got := waitSignal(src, time.Until(deadline)); !got {
			t.Fatalf("condition not met within %v; changed so far: %q", signalWait, seen)
		}
		rev := fetch(t, src)
		for _, p := range rev.Changed {
			if !slices.Contains(seen, p) {
				seen = append(seen, p)
			}
		}
		if ok(rev) {
			slices.Sort(seen)
			return rev, seen
		}
	}
}

// idOf returns the revision ID of a fresh tree holding files (slash path -> content).
func idOf(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		write(t, root, rel, content)
	}
	src, _ := newSource(t, root)
	return fetch(t, src).ID
}

func TestNewRejectsBadRoot(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file.yaml")
	write(t, dir, "file.yaml", "a: 1\n")
	missing := filepath.Join(dir, "missing")
	tests := map[string]struct {
		opts Options
		want []string // substrings of the error
		is   error
	}{
		"missing root":      {opts: Options{Root: missing}, want: []string{missing}, is: fs.ErrNotExist},
		"root is a file":    {opts: Options{Root: file}, want: []string{file, "not a directory"}},
		"empty root":        {opts: Options{}, want: []string{"empty"}},
		"negative debounce": {opts: Options{Root: dir, Debounce: -time.Second}, want: []string{"debounce"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			src, err := New(tc.opts)
			if err == nil {
				src.Close()
				t.Fatal("New succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
		})
	}
}

func TestFetchFirstRevision(t *testing.T) {
	root := t.TempDir()
	write(t, root, "pool.yaml", "kind: GPUPool\n")
	src, _ := newSource(t, root)
	rev := fetch(t, src)
	if len(rev.ID) != 2*idBytes {
		t.Errorf("ID %q: want %d hex digits", rev.ID, 2*idBytes)
	}
	if rev.Changed != nil {
		t.Errorf("first Changed = %q, want nil", rev.Changed)
	}
	if rev.Dir != root || src.URL() != "dir:"+root {
		t.Errorf("Dir %q, URL %q: want the root %q", rev.Dir, src.URL(), root)
	}
	if rev.Message != "" || time.Since(rev.Time) > time.Minute {
		t.Errorf("Message %q, Time %v: want empty and now", rev.Message, rev.Time)
	}
	again := fetch(t, src)
	if again.ID != rev.ID || again.Changed == nil || len(again.Changed) != 0 {
		t.Errorf("unchanged tree: ID %s -> %s, Changed %#v: want same ID, empty Changed", rev.ID, again.ID, again.Changed)
	}
}

func TestRelativeRoot(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	write(t, root, "cfg/a.yaml", "a: 1\n")
	src, _ := newSource(t, "cfg")
	if want := "dir:" + filepath.Join(root, "cfg"); src.URL() != want {
		t.Errorf("URL %q, want %q", src.URL(), want)
	}
}

func TestTrigger(t *testing.T) {
	src, _ := newSource(t, t.TempDir())
	src.Trigger()
	src.Trigger() // coalesced with the first
	if _, ok := waitSignal(src, time.Second); !ok {
		t.Fatal("Trigger did not signal")
	}
	if _, ok := waitSignal(src, quietWait); ok {
		t.Error("two Triggers gave two signals")
	}
}

func TestCloseStopsSignalling(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.yaml", "a: 1\n")
	src, _ := newSource(t, root)
	rev := fetch(t, src)
	write(t, root, "a.yaml", "a: 2\n") // pending when Close runs
	must(t, src.Close())
	write(t, root, "a.yaml", "a: 3\n")
	write(t, root, "b/c.yaml", "c: 1\n")
	src.Trigger()
	if _, ok := waitSignal(src, quietWait); ok {
		t.Error("signal after Close")
	}
	if err := src.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	got, err := src.Fetch(context.Background())
	if !errors.Is(err, ErrClosed) || got.ID != rev.ID {
		t.Errorf("Fetch after Close = %s, %v: want the last revision %s and ErrClosed", got.ID, err, rev.ID)
	}
}

func TestFetchErrorKeepsLastRevision(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cfg")
	write(t, root, "a.yaml", "a: 1\n")
	src, _ := newSource(t, root)
	good := fetch(t, src)

	must(t, os.RemoveAll(root))
	rev, err := src.Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), root) {
		t.Fatalf("Fetch of a removed root: err %v, want one naming %s", err, root)
	}
	if rev.ID != good.ID {
		t.Errorf("Fetch error returned %q, want the last good revision %q", rev.ID, good.ID)
	}

	// The root comes back: the watcher finds it, and Changed is against the last good revision.
	write(t, root, "b.yaml", "b: 1\n")
	rev, _ = waitUntil(t, src, func(r sources.Revision) bool { return slices.Contains(r.Changed, "b.yaml") })
	if want := []string{"a.yaml", "b.yaml"}; !slices.Equal(rev.Changed, want) {
		t.Errorf("Changed = %q, want %q", rev.Changed, want)
	}
	write(t, root, "b.yaml", "b: 2\n")
	mustSignal(t, src)
}

func TestFetchPermissionError(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads unreadable directories")
	}
	root := t.TempDir()
	write(t, root, "a.yaml", "a: 1\n")
	write(t, root, "locked/b.yaml", "b: 1\n")
	src, _ := newSource(t, root)
	good := fetch(t, src)
	locked := filepath.Join(root, "locked")
	must(t, os.Chmod(locked, 0))
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	rev, err := src.Fetch(context.Background())
	if !errors.Is(err, fs.ErrPermission) || rev.ID != good.ID {
		t.Errorf("Fetch = %s, %v: want the last good revision %s and a permission error", rev.ID, err, good.ID)
	}
}

func TestFetchCanceled(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.yaml", "a: 1\n")
	src, _ := newSource(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := src.Fetch(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Fetch with a canceled context: %v", err)
	}
}

// TestDigest: the source tells the SHA-256 of each file of the last revision it returned (a
// render then need not read it again), and nothing of a file that revision does not hold.
func TestDigest(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.yaml", "kind: compute\n")
	write(t, root, "team/b.yaml", "kind: training\n")
	write(t, root, ".b.yaml.swp", "swap")
	src, _ := newSource(t, root)
	if _, ok := src.Digest("a.yaml"); ok {
		t.Error("a digest before the first fetch")
	}
	fetch(t, src)
	for rel, content := range map[string]string{"a.yaml": "kind: compute\n", "team/b.yaml": "kind: training\n"} {
		if sum, ok := src.Digest(rel); !ok || sum != sha256.Sum256([]byte(content)) {
			t.Errorf("%s: digest %x %v, want that of its content", rel, sum, ok)
		}
	}
	for _, rel := range []string{".b.yaml.swp", "missing.yaml", "team"} {
		if _, ok := src.Digest(rel); ok {
			t.Errorf("%s: a digest of a file the revision does not hold", rel)
		}
	}
	write(t, root, "a.yaml", "kind: inference\n")
	if sum, _ := src.Digest("a.yaml"); sum != sha256.Sum256([]byte("kind: compute\n")) {
		t.Error("the digest changed before a fetch: it must be that of the revision returned")
	}
	fetch(t, src)
	if sum, _ := src.Digest("a.yaml"); sum != sha256.Sum256([]byte("kind: inference\n")) {
		t.Error("the digest is not that of the new revision")
	}
}
