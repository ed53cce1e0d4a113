package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/sources/local"
	"github.com/gpuctl/gpuctl/test/testcluster"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// stuckFS never returns from reading a file whose name ends with suffix, as a file on a hung
// network mount or a pipe would, until release is closed.
type stuckFS struct {
	filesys.FileSystem
	suffix  string
	release chan struct{}
}

func (s stuckFS) ReadFile(p string) ([]byte, error) {
	if strings.HasSuffix(p, s.suffix) {
		<-s.release
	}
	return s.FileSystem.ReadFile(p)
}

// stuckDaemon returns a daemon over a directory whose web.yaml can never be read.
func stuckDaemon(t *testing.T, name string, renderTimeout, syncTimeout time.Duration) (*daemon.Daemon, *daemon.Store) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(compute("web", "default", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := local.New(local.Options{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	store := daemon.NewStore(kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig()), "sys-"+name)
	d := daemon.New(daemon.Options{Source: src, Store: store, Identity: name, Interval: time.Hour,
		RenderTimeout: renderTimeout, SyncTimeout: syncTimeout,
		FS: stuckFS{FileSystem: filesys.MakeFsOnDisk(), suffix: "web.yaml", release: release}})
	return d, store
}

// syncWithin runs one sync and fails unless it ends within limit.
func syncWithin(t *testing.T, ctx context.Context, d *daemon.Daemon, limit time.Duration) daemon.Status {
	t.Helper()
	start := time.Now()
	st := d.SyncOnce(ctx, "")
	if took := time.Since(start); took > limit {
		t.Fatalf("the sync took %s, more than %s", took, limit)
	}
	return st
}

// TestRenderTimeoutFailsSync: a render that cannot finish fails the sync at --render-timeout,
// with a status that says so, and nothing is applied.
func TestRenderTimeoutFailsSync(t *testing.T) {
	d, store := stuckDaemon(t, "render-timeout", 300*time.Millisecond, time.Minute)
	st := syncWithin(t, context.Background(), d, 5*time.Second)
	if st.Result != daemon.ResultFailed || !strings.Contains(st.Message, "deadline") || !strings.Contains(st.Message, "web.yaml") {
		t.Fatalf("want a failed sync that names the deadline and the file, got %s: %s", st.Result, st.Message)
	}
	if st.AppliedRevision != "" || st.Summary != "" {
		t.Fatalf("something was planned or applied: %+v", st)
	}
	stored, _, err := store.Read(context.Background())
	if err != nil || stored.Result != daemon.ResultFailed {
		t.Fatalf("stored status %+v (err %v), want Failed", stored, err)
	}
}

// TestSyncTimeoutEndsRender: --sync-timeout bounds the render too.
func TestSyncTimeoutEndsRender(t *testing.T) {
	d, _ := stuckDaemon(t, "sync-timeout", time.Minute, 300*time.Millisecond)
	st := syncWithin(t, context.Background(), d, 5*time.Second)
	if st.Result != daemon.ResultFailed || !strings.Contains(st.Message, "deadline") {
		t.Fatalf("want a failed sync at the sync deadline, got %s: %s", st.Result, st.Message)
	}
}

// TestShutdownEndsSync: the end of the daemon's context (SIGTERM) ends a sync in progress at
// once, whatever the timeouts.
func TestShutdownEndsSync(t *testing.T) {
	d, _ := stuckDaemon(t, "shutdown", time.Hour, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	st := syncWithin(t, ctx, d, 3*time.Second)
	if st.Result != daemon.ResultFailed || !strings.Contains(st.Message, "canceled") {
		t.Fatalf("want a failed sync, got %s: %s", st.Result, st.Message)
	}
}
