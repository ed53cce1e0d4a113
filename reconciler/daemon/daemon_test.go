package daemon_test

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/sources"
	"github.com/gpuctl/gpuctl/sources/local"
	"github.com/gpuctl/gpuctl/test/testcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, testcluster.Options{})) }

// harness runs one daemon over a directory, in a namespace of its own.
type harness struct {
	t      testing.TB
	ctx    context.Context
	dir    string
	ns     string // the namespace of the daemon's status and inventory
	kube   kubernetes.Interface
	store  *daemon.Store
	d      *daemon.Daemon
	syncs  atomic.Int64
	cancel context.CancelFunc
}

// newHarness returns the harness of a daemon over files; each of with changes its options.
func newHarness(t testing.TB, name string, files map[string]string, with ...func(*daemon.Options)) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	h := &harness{t: t, ctx: ctx, dir: t.TempDir(), ns: "sys-" + name, cancel: cancel}
	for f, c := range files {
		h.write(f, c)
	}
	cfg := testcluster.Current().RESTConfig()
	h.kube = kubernetes.NewForConfigOrDie(cfg)
	opts := reconciler.DefaultOptions()
	opts.Namespace, opts.MaxPrune = h.ns, 1
	engine, err := reconciler.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	src, err := local.New(local.Options{Root: h.dir, Debounce: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	h.store = daemon.NewStore(h.kube, h.ns)
	o := daemon.Options{Source: countingSource{src, &h.syncs}, Engine: engine, Store: h.store,
		Interval: time.Hour, MinBackoff: 100 * time.Millisecond, Identity: name, Render: render.Options{}}
	for _, f := range with {
		f(&o)
	}
	h.d = daemon.New(o)
	return h
}

// countingSource counts fetches: one per sync.
type countingSource struct {
	sources.Source
	n *atomic.Int64
}

func (c countingSource) Fetch(ctx context.Context) (sources.Revision, error) {
	c.n.Add(1)
	return c.Source.Fetch(ctx)
}

// Activity, Quiet and Digest are the source's, as the daemon would see them without the
// counter.
func (c countingSource) Activity() <-chan struct{} {
	if a, ok := c.Source.(sources.Activity); ok {
		return a.Activity()
	}
	return nil
}

func (c countingSource) Quiet() bool {
	a, ok := c.Source.(sources.Activity)
	return ok && a.Quiet()
}

func (c countingSource) Digest(rel string) ([sha256.Size]byte, bool) {
	if d, ok := c.Source.(sources.Digester); ok {
		return d.Digest(rel)
	}
	return [sha256.Size]byte{}, false
}

func (h *harness) write(name, content string) {
	h.t.Helper()
	p := filepath.Join(h.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) start() {
	go func() { _ = h.d.Run(h.ctx) }()
}

// waitStatus waits until the recorded status satisfies ok.
func (h *harness) waitStatus(what string, ok func(daemon.Status) bool) daemon.Status {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _, err := h.store.Read(h.ctx)
		if err == nil && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; status %+v (err %v)", what, st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func compute(name, ns string, replicas int) string {
	return "kind: compute\nversion: v0.1\njob: {name: " + name + ", namespace: " + ns + "}\nenvironment: {image: nginx}\nservice: {replicas: " + string(rune('0'+replicas)) + "}\n"
}

// TestLocalEditIsApplied: a file edit is applied within a second; an invalid edit changes and
// prunes nothing and says why; fixing it converges.
func TestLocalEditIsApplied(t *testing.T) {
	h := newHarness(t, "local", map[string]string{"web.yaml": compute("web", "default", 1), "api.yaml": compute("api", "default", 1)})
	if err := h.d.Ready(); err != nil {
		t.Fatalf("a replica that does not lead is ready: %v", err)
	}
	select {
	case <-h.d.FirstSync():
		t.Fatal("FirstSync is closed before any sync")
	default:
	}
	h.start()
	st := h.waitStatus("first sync", func(s daemon.Status) bool { return s.Result == daemon.ResultSucceeded })
	if err := h.d.Ready(); err != nil {
		t.Fatalf("not ready after the first sync: %v", err)
	}
	select {
	case <-h.d.FirstSync():
	case <-time.After(5 * time.Second):
		t.Fatal("FirstSync is not closed after the first sync")
	}
	if st.AppliedRevision == "" || !strings.HasPrefix(st.Source, "dir:") {
		t.Fatalf("status %+v", st)
	}

	start := time.Now()
	h.write("web.yaml", compute("web", "default", 3))
	for {
		d, err := h.kube.AppsV1().Deployments("default").Get(h.ctx, "web", metav1.GetOptions{})
		if err == nil && *d.Spec.Replicas == 3 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("the edit was not applied within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("edit applied after %s", time.Since(start).Round(time.Millisecond))

	// a broken commit: api.yaml is invalid, web.yaml is gone from the tree
	h.write("api.yaml", "kind: compute\nversion: v0.1\njob: {name: api}\nenvironment: {image: nginx}\nresources: {gpu: -1}\n")
	if err := os.Remove(filepath.Join(h.dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	st = h.waitStatus("invalid revision", func(s daemon.Status) bool { return s.Result == daemon.ResultInvalid })
	if len(st.Errors) != 1 || st.Errors[0] != "api.yaml:5:18: resources.gpu: must be 0 or more, got -1" {
		t.Fatalf("errors %q", st.Errors)
	}
	for _, name := range []string{"web", "api"} {
		if _, err := h.kube.AppsV1().Deployments("default").Get(h.ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("an invalid revision deleted %s: %v", name, err)
		}
	}

	h.write("api.yaml", compute("api", "default", 2))
	h.waitStatus("fixed revision", func(s daemon.Status) bool {
		return s.Result == daemon.ResultSucceeded && s.Revision == s.AppliedRevision
	})
	if _, err := h.kube.AppsV1().Deployments("default").Get(h.ctx, "web", metav1.GetOptions{}); err == nil {
		t.Fatal("web.yaml was removed but the Deployment was not pruned")
	}
}

// TestSyncRequestHandledOnce: gpuctl sync's request annotation is handled by exactly one sync,
// and its id is echoed in the status.
func TestSyncRequestHandledOnce(t *testing.T) {
	h := newHarness(t, "request", map[string]string{"a.yaml": compute("req", "default", 1)})
	h.start()
	h.waitStatus("first sync", func(s daemon.Status) bool { return s.Result == daemon.ResultSucceeded })
	time.Sleep(300 * time.Millisecond) // let the informer settle
	before := h.syncs.Load()
	if _, err := h.store.Request(h.ctx, "req-1"); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("request handled", func(s daemon.Status) bool { return s.LastHandledRequest == "req-1" })
	time.Sleep(500 * time.Millisecond)
	if n := h.syncs.Load() - before; n != 1 {
		t.Fatalf("the request caused %d syncs, want 1", n)
	}
}

// TestLeaderFailover: two replicas; only the leader syncs; when it dies (no lease release),
// the standby takes over within the lease duration and syncs.
func TestLeaderFailover(t *testing.T) {
	files := map[string]string{"a.yaml": compute("ha", "default", 1)}
	a, b := newHarness(t, "ha", files), newHarness(t, "ha", files)
	b.dir = a.dir
	lease := 2 * time.Second
	if err := daemon.EnsureNamespace(a.ctx, a.kube, a.ns); err != nil {
		t.Fatal(err)
	}
	standby := map[string]*atomic.Int32{"replica-a": {}, "replica-b": {}}
	runReplica := func(h *harness, id string) context.CancelFunc {
		ctx, cancel := context.WithCancel(h.ctx)
		go daemon.RunAsLeader(ctx, daemon.LeaderOptions{Kube: h.kube, Namespace: h.ns, Name: "lease-ha", Identity: id,
			LeaseDuration: lease, RenewDeadline: lease * 2 / 3, RetryPeriod: 200 * time.Millisecond,
			OnStandby: func() { standby[id].Add(1) }},
			func(ctx context.Context) { _ = h.d.Run(ctx) })
		return cancel
	}
	stopA := runReplica(a, "replica-a")
	a.waitStatus("a leads", func(s daemon.Status) bool { return s.Leader == "ha" && s.Result == daemon.ResultSucceeded })
	runReplica(b, "replica-b")
	time.Sleep(lease)
	if n := b.syncs.Load(); n != 0 {
		t.Fatalf("the standby synced %d times while the leader lived", n)
	}
	// The standby is told so (its API's informers start then); the leader is not.
	if standby["replica-b"].Load() == 0 || standby["replica-a"].Load() != 0 {
		t.Fatalf("OnStandby calls: replica-a %d, replica-b %d", standby["replica-a"].Load(), standby["replica-b"].Load())
	}
	killed := time.Now()
	stopA() // dies without releasing the lease
	for b.syncs.Load() == 0 {
		if time.Since(killed) > 3*lease {
			t.Fatalf("the standby did not take over within %s", 3*lease)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("standby took over %s after the leader died (lease %s)", time.Since(killed).Round(time.Millisecond), lease)
	if took := time.Since(killed); took > lease+lease/2 {
		t.Errorf("takeover took %s, more than the lease duration %s (+50%%)", took, lease)
	}
}

// TestPerObjectErrorInStatus: an object of a kind the cluster does not serve fails alone; the
// rest is applied, and the status (the ConfigMap that gpuctl status, /api/v1/status and the
// page read) says Failed, counts it and names it, so that the sync is retried.
func TestPerObjectErrorInStatus(t *testing.T) {
	h := newHarness(t, "objerr", map[string]string{
		"web.yaml":    compute("objerr-web", "default", 1),
		"widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\n",
	})
	h.start()
	st := h.waitStatus("failed sync", func(s daemon.Status) bool { return s.Result == daemon.ResultFailed })
	want := "Widget default/w: skipped: example.com/v1, Kind=Widget: the cluster does not serve this kind"
	if len(st.Errors) != 1 || !strings.HasPrefix(st.Errors[0], want) || st.Counts["failed"] != 1 ||
		!strings.Contains(st.Summary, "1 failed") || st.Message != "1 object failed" {
		t.Fatalf("status: message %q, summary %q, counts %v, errors %q", st.Message, st.Summary, st.Counts, st.Errors)
	}
	if _, err := h.kube.AppsV1().Deployments("default").Get(h.ctx, "objerr-web", metav1.GetOptions{}); err != nil {
		t.Fatalf("the other objects were not applied: %v", err)
	}
}

// TestRenderAhead: the daemon renders a directory's files at the first event of an edit,
// while the events settle, and the sync uses that render (its steps say so) — but only when it
// is of the revision the sync fetched: a second write within the same burst is what ends up
// applied, never the state the render ahead may have seen.
func TestRenderAhead(t *testing.T) {
	h := newHarness(t, "ahead", map[string]string{"web.yaml": compute("ahead-web", "default", 1)})
	h.start()
	first := h.waitStatus("first sync", func(s daemon.Status) bool { return s.Result == daemon.ResultSucceeded })
	replicas := func() int32 {
		d, err := h.kube.AppsV1().Deployments("default").Get(h.ctx, "ahead-web", metav1.GetOptions{})
		if err != nil {
			return -1
		}
		return *d.Spec.Replicas
	}
	waitReplicas := func(n int32) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for replicas() != n {
			if time.Now().After(deadline) {
				t.Fatalf("replicas %d, want %d", replicas(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// The render ahead starts at a write's first file event: it may read the file between its
	// truncation and its content, or before the write's second event, and the sync then renders
	// itself (right, only slower; the burst below tests it). An editor that saves by renaming
	// makes one event, after which the file is whole: so here. Of five edits, one at least
	// uses it.
	prev, used := first.AppliedRevision, false
	var steps []string
	outside := t.TempDir() // the same file system as h.dir, outside the tree
	for _, n := range []int{2, 5, 2, 5, 2} {
		tmp := filepath.Join(outside, "web.yaml")
		if err := os.WriteFile(tmp, []byte(compute("ahead-web", "default", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(h.dir, "web.yaml")); err != nil {
			t.Fatal(err)
		}
		waitReplicas(int32(n))
		st := h.waitStatus("the edit's sync", func(s daemon.Status) bool {
			return s.Result == daemon.ResultSucceeded && s.AppliedRevision != prev && s.Steps != nil
		})
		if st.Steps.Ahead > 0 {
			used = true
			break
		}
		prev, steps = st.AppliedRevision, append(steps, st.Steps.String())
	}
	if !used {
		t.Errorf("five edits' syncs rendered themselves (steps %s): no render ahead was used", strings.Join(steps, "; "))
	}

	for i := range 10 { // two writes in one burst: the second one wins
		h.write("web.yaml", compute("ahead-web", "default", 3))
		time.Sleep(time.Duration(i) * 2 * time.Millisecond)
		h.write("web.yaml", compute("ahead-web", "default", 4))
		waitReplicas(4)
		time.Sleep(300 * time.Millisecond) // no later sync may change it
		if got := replicas(); got != 4 {
			t.Fatalf("round %d: replicas %d after the burst, want 4 (the last write)", i, got)
		}
		h.write("web.yaml", compute("ahead-web", "default", 1))
		waitReplicas(1)
	}
}
