package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/sources"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// aheadSource is a source of one directory whose revisions the test names, quiet throughout,
// and which knows its files' digests (a render can then be consistent with the revision).
type aheadSource struct {
	sources.Source
	rev   sources.Revision
	files map[string][]byte
}

func (s *aheadSource) Digest(rel string) ([sha256.Size]byte, bool) {
	b, ok := s.files[rel]
	return sha256.Sum256(b), ok
}

func (s *aheadSource) Fetch(context.Context) (sources.Revision, error) { return s.rev, nil }
func (s *aheadSource) Activity() <-chan struct{}                       { return nil }
func (s *aheadSource) Quiet() bool                                     { return true }

// heldFS holds every read of a file named web.yaml until release is closed, and says on
// reading when the first one began.
type heldFS struct {
	filesys.FileSystem
	reading chan struct{}
	release chan struct{}
}

func (f heldFS) ReadFile(p string) ([]byte, error) {
	if strings.HasSuffix(p, "web.yaml") {
		select {
		case f.reading <- struct{}{}:
		default:
		}
		<-f.release
	}
	return f.FileSystem.ReadFile(p)
}

// TestUnusedRenderAheadStops: a sync that fetched another revision than its render ahead (a
// file written again in the burst) renders itself, and the render ahead, still reading the
// tree, is stopped instead of running beside it to its end; one of the same revision is
// waited for and used.
func TestUnusedRenderAheadStops(t *testing.T) {
	dir := t.TempDir()
	web := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n")
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), web, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		fetched string // the revision the sync fetched
		used    bool
	}{{"another revision", "rev-2", false}, {"the same revision", "rev-1", true}} {
		t.Run(tc.name, func(t *testing.T) {
			src := &aheadSource{rev: sources.Revision{ID: "rev-1", Dir: dir}, files: map[string][]byte{"web.yaml": web}}
			fs := heldFS{FileSystem: filesys.MakeFsOnDisk(), reading: make(chan struct{}, 1), release: make(chan struct{})}
			d := New(Options{Source: src, FS: fs})
			d.renderAhead(t.Context())
			select {
			case <-fs.reading:
			case <-time.After(10 * time.Second):
				t.Fatal("the render ahead never read web.yaml")
			}
			d.mu.Lock()
			a := d.ahead
			d.mu.Unlock()
			if a == nil {
				t.Fatal("no render ahead registered")
			}
			var got *ahead
			var ok bool
			taken := make(chan struct{})
			go func() {
				defer close(taken)
				got, ok = d.takeAhead(t.Context(), sources.Revision{ID: tc.fetched, Dir: dir})
			}()
			if !tc.used {
				<-taken // it does not wait for a render it will not use
			}
			close(fs.release)
			<-taken
			select {
			case <-a.done:
			case <-time.After(10 * time.Second):
				t.Fatal("the render ahead never ended")
			}
			if ok != tc.used {
				t.Fatalf("takeAhead used it: %v, want %v", ok, tc.used)
			}
			if tc.used {
				if a.err != nil || got != a || len(a.res.Objects) != 1 {
					t.Fatalf("the render ahead of the same revision: %v, %d objects", a.err, len(a.res.Objects))
				}
				return
			}
			if !errors.Is(a.err, context.Canceled) {
				t.Fatalf("the unused render ahead ended with error %v (a result: %v), want it stopped (context canceled)", a.err, a.res != nil)
			}
		})
	}
}
