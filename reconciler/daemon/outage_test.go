package daemon_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/testcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The fault drills of an API-server outage (issue 32): kube-apiserver (or etcd) killed in the
// middle of a sync's writes or prunes, or while the daemon waits, and started again on the same
// port over the same data.

// apiOutage kills and restarts the test cluster's API server, or its etcd; a test that ends
// during an outage starts it again, so that the package's later tests have one.
type apiOutage struct {
	t    *testing.T
	etcd bool // etcd dies, not kube-apiserver
	down atomic.Bool
	// killed is when the kill happened; set before down.
	killed time.Time
}

// newAPIOutage returns the outage of kube-apiserver; with etcd, of etcd.
func newAPIOutage(t *testing.T, etcd bool) *apiOutage {
	o := &apiOutage{t: t, etcd: etcd}
	t.Cleanup(func() {
		if o.down.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := o.start(ctx); err != nil {
				t.Errorf("start %s again: %v", o.what(), err)
			}
		}
	})
	return o
}

func (o *apiOutage) what() string {
	if o.etcd {
		return "etcd"
	}
	return "the API server"
}

func (o *apiOutage) start(ctx context.Context) error {
	if o.etcd {
		return testcluster.Current().StartEtcd(ctx)
	}
	return testcluster.Current().StartAPIServer(ctx)
}

// kill kills the API server or etcd (SIGKILL); it may be called from a request's transport.
func (o *apiOutage) kill() {
	stop := testcluster.Current().StopAPIServer
	if o.etcd {
		stop = testcluster.Current().StopEtcd
	}
	if err := stop(); err != nil {
		o.t.Errorf("kill %s: %v", o.what(), err)
		return
	}
	o.killed = time.Now()
	o.down.Store(true)
}

// restart starts the API server or etcd again and returns when the API server is ready.
func (o *apiOutage) restart() time.Time {
	o.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := o.start(ctx); err != nil {
		o.t.Fatalf("start %s again: %v", o.what(), err)
	}
	o.down.Store(false)
	back := time.Now()
	o.t.Logf("%s was down %s", o.what(), back.Sub(o.killed).Round(time.Millisecond))
	return back
}

// killAt returns an option of newHarness whose engine writes one object at a time and kills the
// API server just before its n-th write (method) to a Job of ns, once armed: that write and
// every later one fail, as they do when kube-apiserver dies in the middle of a sync.
func (o *apiOutage) killAt(ns, method string, n int64, armed *atomic.Bool, changes chan struct{}) func(*daemon.Options) {
	var writes atomic.Int64
	kills := func(r *http.Request) bool {
		if armed.Load() && r.Method == method && r.URL.Query().Get("dryRun") == "" &&
			strings.Contains(r.URL.Path, "/namespaces/"+ns+"/jobs") && writes.Add(1) == n {
			o.kill()
		}
		return false
	}
	return func(opts *daemon.Options) {
		cfg := rest.CopyConfig(testcluster.Current().RESTConfig())
		cfg.Wrap(testcluster.CountRequests(new(atomic.Int64), kills))
		eopts := reconciler.DefaultOptions()
		eopts.Namespace, eopts.MaxPrune, eopts.Concurrency = opts.Store.Namespace, 1, 1
		engine, err := reconciler.NewManager(cfg, eopts)
		if err != nil {
			o.t.Fatal(err)
		}
		// A long backoff: the sync after the outage is the one its end starts, not a retry.
		opts.Engine, opts.Source, opts.MinBackoff = engine, gatedSource{opts.Source, changes}, time.Minute
	}
}

// waitMemory waits until the status that the daemon serves from memory (GET /api/v1/status)
// satisfies ok, and returns it.
func waitMemory(t *testing.T, h *harness, what string, ok func(daemon.Status) bool) daemon.Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := h.d.Status(h.ctx)
		if err == nil && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; the daemon's status: %s: %s (api server %v, err %v)", what, st.Result, st.Message, st.APIServer, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkOutageShown checks that the daemon says, from memory, that the API server is
// unreachable since the kill (refusing connections, or not ready without its etcd), and that it
// is not ready.
func checkOutageShown(t *testing.T, o *apiOutage, h *harness) {
	t.Helper()
	st := waitMemory(t, h, "the status to say the API server is unreachable", func(s daemon.Status) bool { return s.APIServer != nil })
	want := "connection refused"
	if o.etcd {
		want = "the API server is not ready: GET /readyz answered 500"
	}
	if u := st.APIServer; u.Since.Before(o.killed.Add(-time.Second)) || !strings.Contains(u.Error, want) {
		t.Errorf("the outage: %s; want it since the kill at %s, %s", u, o.killed.UTC().Format(time.RFC3339), want)
	}
	if err := h.d.Ready(); err == nil || !strings.Contains(err.Error(), "the API server is unreachable since") {
		t.Errorf("Ready during the outage: %v; want the outage", err)
	}
}

// converged waits until the status ConfigMap records a sync that started after the one that
// failed in the outage (failed) and applied its revision, and checks that the daemon no longer
// reports an outage.
func converged(t *testing.T, h *harness, failed daemon.Status) daemon.Status {
	t.Helper()
	st := h.waitStatus("the sync after the outage", func(s daemon.Status) bool {
		return s.LastAttempt.After(failed.LastAttempt) && s.Result == daemon.ResultSucceeded && s.Revision == s.AppliedRevision
	})
	if mem, err := h.d.Status(h.ctx); err != nil || mem.APIServer != nil {
		t.Errorf("after the outage the daemon still reports one: %v (err %v)", mem.APIServer, err)
	}
	if err := h.d.Ready(); err != nil {
		t.Errorf("not ready after the outage: %v", err)
	}
	return st
}

// jobSet lists the Jobs of ns, sorted.
func jobSet(t *testing.T, h *harness, ns string) []string {
	t.Helper()
	names := jobsIn(t, h, ns)
	slices.Sort(names)
	return names
}

// killMidSync runs a daemon over the files of R1 and, once R1 is applied, lets edit change them
// into R2 and kills the API server (or etcd) at the sync's 10th write (method) to a Job of ns.
// It returns once the daemon shows the outage and, when the API server was killed, that sync
// has failed, with R1's status and the failed sync's (from memory; R1's when etcd was killed:
// the sync waits on the API server, which waits on etcd).
func killMidSync(t *testing.T, o *apiOutage, name, ns string, r1 map[string]string, method string, edit func(*harness)) (h *harness, applied, failed daemon.Status) {
	t.Helper()
	var armed atomic.Bool
	changes := make(chan struct{}, 1)
	h = newHarness(t, name, r1, o.killAt(ns, method, 10, &armed, changes))
	h.start()
	applied = h.waitStatus("R1 applied", func(s daemon.Status) bool { return s.Result == daemon.ResultSucceeded })
	armed.Store(true)
	edit(h)
	changes <- struct{}{}
	if o.etcd {
		checkOutageShown(t, o, h)
		return h, applied, applied
	}
	failed = waitMemory(t, h, "the sync to fail", func(s daemon.Status) bool {
		return s.LastAttempt.After(applied.LastAttempt) && s.Result == daemon.ResultFailed
	})
	if !o.down.Load() {
		t.Fatalf("the sync failed without a kill: %s", failed.Message)
	}
	checkOutageShown(t, o, h)
	return h, applied, failed
}

// TestAPIServerKilledMidSync: kube-apiserver killed after a sync has created 9 of the 40 Jobs
// of a new revision, and started again. The daemon says the API server is unreachable while
// it is, and syncs as soon as it answers (not after its backoff, a minute here): that sync
// applies the whole revision, prunes nothing, and its status says so.
func TestAPIServerKilledMidSync(t *testing.T) { testKilledMidSync(t, "outage-apply", false) }

// TestEtcdKilledMidSync: the same with etcd killed. The API server keeps its connections and
// lets the sync's write wait; the sync's probe of /readyz finds it not ready within 10 s, and
// the daemon says so. Once etcd is back, the sync ends, or a new one applies the revision.
func TestEtcdKilledMidSync(t *testing.T) { testKilledMidSync(t, "outage-etcd", true) }

func testKilledMidSync(t *testing.T, name string, etcd bool) {
	ns := name + "-jobs"
	o := newAPIOutage(t, etcd)
	h, r1, failed := killMidSync(t, o, name, ns, crashFiles(ns, "r1", 0), http.MethodPatch, func(h *harness) {
		for f, c := range crashFiles(ns, "r2", 40) {
			h.write(f, c)
		}
	})
	t.Logf("the outage was shown %s after the kill", time.Since(o.killed).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // a few of the backoff's seconds
	back := o.restart()
	st := converged(t, h, failed)
	took := time.Since(back)
	t.Logf("converged %s after %s was back (the backoff: a minute after %s)", took.Round(time.Millisecond), o.what(), failed.LastAttempt.Format(time.TimeOnly))
	// What is tested is that the daemon does not wait out its backoff (a minute after the
	// failed sync): a bound well below it, not a speed bar, so that a loaded machine (etcd's
	// own recovery took 10.4 s on 2 busy cores) does not fail it.
	if took > 30*time.Second {
		t.Errorf("the daemon synced %s after %s was back; want well before its backoff's minute", took.Round(time.Millisecond), o.what())
	}
	if got := jobSet(t, h, ns); len(got) != 42 {
		t.Errorf("%d Jobs after the outage, want the 42 of R2", len(got))
	}
	if st.Counts["delete"] != 0 || st.Applying != nil || st.AppliedRevision == r1.AppliedRevision {
		t.Errorf("the status after the outage: %s: %s (%s; counts %v, applying %v); want R2 applied, nothing pruned", st.Result, st.Message, st.Summary, st.Counts, st.Applying)
	}
	cm, err := h.kube.CoreV1().ConfigMaps(ns).Get(h.ctx, "settings", metav1.GetOptions{})
	if err != nil || cm.Data["setting"] != "r2" {
		t.Errorf("the ConfigMap of R2: %v (err %v)", cm.Data, err)
	}
}

// TestAPIServerOutageDuringPrunes: R2 removes 40 of R1's 42 Jobs; kube-apiserver is killed at
// the 10th prune and started again. The sync that its return starts prunes the 31 left, and
// nothing else: the Namespace, the ConfigMap and the 2 Jobs that R2 keeps are all there.
func TestAPIServerOutageDuringPrunes(t *testing.T) {
	const name, ns = "outage-prune", "outage-prune-jobs"
	o := newAPIOutage(t, false)
	h, _, failed := killMidSync(t, o, name, ns, crashFiles(ns, "r1", 40), http.MethodDelete, func(h *harness) {
		if got := jobSet(t, h, ns); len(got) != 42 {
			t.Fatalf("%d Jobs of R1, want 42", len(got))
		}
		for _, j := range rangeFrom(100, 40) {
			if err := os.Remove(filepath.Join(h.dir, fmt.Sprintf("job-%05d.yaml", j))); err != nil {
				t.Fatal(err)
			}
		}
	})
	back := o.restart()
	if left := len(jobSet(t, h, ns)); left != 42-9 {
		t.Errorf("%d Jobs when the API server was back; want 33 (the killed sync pruned 9)", left)
	}
	st := converged(t, h, failed)
	t.Logf("converged %s after the API server was back", time.Since(back).Round(time.Millisecond))
	want := []string{ns + "-00000", ns + "-00001"}
	if got := jobSet(t, h, ns); !slices.Equal(got, want) {
		t.Errorf("Jobs after the outage: %q, want %q", got, want)
	}
	if st.Counts["delete"] != 31 {
		t.Errorf("the sync after the outage: %s (%s; counts %v); want the 31 prunes left", st.Message, st.Summary, st.Counts)
	}
	if _, err := h.kube.CoreV1().ConfigMaps(ns).Get(h.ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("the ConfigMap that R2 keeps: %v", err)
	}
	if _, err := h.kube.CoreV1().Namespaces().Get(h.ctx, ns, metav1.GetOptions{}); err != nil {
		t.Errorf("the Namespace that R2 keeps: %v", err)
	}
}

// TestAPIServerOutageShownAndEndedBySync: kube-apiserver killed while the daemon waits. Within
// seconds the leader and a standby say, from memory, that it is unreachable since then, and
// neither is ready; a sync of a new revision fails meanwhile, and its backoff is 40 s. When
// the API server answers again, the daemon syncs within seconds, long before its backoff would
// have: before, the next attempt came with the backoff (2 s doubling to 64 s in a longer
// outage), and nothing said the API server was unreachable.
func TestAPIServerOutageShownAndEndedBySync(t *testing.T) {
	const name, ns = "outage-wait", "outage-wait-jobs"
	const backoff = 40 * time.Second
	o := newAPIOutage(t, false)
	changes := make(chan struct{}, 1)
	h := newHarness(t, name, crashFiles(ns, "r1", 0), func(opts *daemon.Options) {
		opts.Source, opts.MinBackoff = gatedSource{opts.Source, changes}, backoff
	})
	standby := newHarness(t, name, nil)
	h.start()
	h.waitStatus("R1 applied", func(s daemon.Status) bool { return s.Result == daemon.ResultSucceeded })
	if err := standby.d.WatchStatus(standby.ctx); err != nil {
		t.Fatal(err)
	}
	o.kill()
	checkOutageShown(t, o, h) // no sync since: the watch of the status saw it
	t.Logf("the outage was shown %s after the kill", time.Since(o.killed).Round(time.Millisecond))
	checkOutageShown(t, o, standby)

	h.write("settings.yaml", crashFiles(ns, "r2", 0)["settings.yaml"])
	changes <- struct{}{}
	failed := waitMemory(t, h, "a sync to fail", func(s daemon.Status) bool { return s.Result == daemon.ResultFailed })
	retry := failed.LastAttempt.Add(failed.Duration + backoff)
	time.Sleep(3 * time.Second)
	back := o.restart()
	converged(t, h, failed)
	took := time.Since(back)
	t.Logf("converged %s after the API server was back; the backoff's retry was %s after it", took.Round(time.Millisecond), retry.Sub(back).Round(time.Millisecond))
	if took > 10*time.Second || !time.Now().Before(retry) {
		t.Errorf("the daemon synced %s after the API server was back; want within 10 s, before the backoff's retry", took.Round(time.Millisecond))
	}
	cm, err := h.kube.CoreV1().ConfigMaps(ns).Get(h.ctx, "settings", metav1.GetOptions{})
	if err != nil || cm.Data["setting"] != "r2" {
		t.Errorf("the ConfigMap of R2: %v (err %v)", cm.Data, err)
	}
	waitMemory(t, standby, "the standby to see the API server back", func(s daemon.Status) bool { return s.APIServer == nil })
	if err := standby.d.Ready(); err != nil || time.Since(back) > 5*time.Second {
		t.Errorf("the standby %s after the API server was back: ready: %v", time.Since(back).Round(time.Millisecond), err)
	}
}
