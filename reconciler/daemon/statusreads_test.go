package daemon_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/testcluster"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// countedClient is a client of the test cluster at client-go's default rate (5 requests a
// second, burst 10: the daemon's client before issue 32) whose GETs of the status ConfigMap
// are counted in n.
func countedClient(n *atomic.Int64) kubernetes.Interface {
	cfg := rest.CopyConfig(testcluster.Current().RESTConfig())
	cfg.QPS, cfg.Burst = 5, 10
	cfg.Wrap(testcluster.CountRequests(n, testcluster.GetOf("configmaps", keys.StatusName)))
	return kubernetes.NewForConfigOrDie(cfg)
}

// floodStatus reads status with 300 readers at once, each again and again until stop is
// closed (nil: once each), and returns the time of each read. The reads' context ends with
// stop: a read still waiting then is not counted.
func floodStatus(t *testing.T, status func(context.Context) (daemon.Status, error), stop <-chan struct{}) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if stop != nil {
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	var mu sync.Mutex
	var took []time.Duration
	var wg sync.WaitGroup
	for range 300 {
		wg.Go(func() {
			for {
				began := time.Now()
				st, err := status(ctx)
				d := time.Since(began)
				if ctx.Err() != nil && err != nil {
					return
				}
				if err != nil || st.Result == "" {
					t.Errorf("status read: %+v, %v", st, err)
					return
				}
				mu.Lock()
				took = append(took, d)
				mu.Unlock()
				if stop == nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		})
	}
	wg.Wait()
	return took
}

// TestStatusReadsMakeNoRequests (issue 32, finding 3): 300 readers of the leader's status at
// once (what GET /api/v1/status and the page call) make no request to the API server, and a
// sync started meanwhile records its status at once, though the daemon's client has
// client-go's default rate: before, each read was a GET through that client, 300 of them held
// the sync's status write for a minute (p50 of a read: 28 s).
func TestStatusReadsMakeNoRequests(t *testing.T) {
	var gets atomic.Int64
	h := newHarness(t, "reads", map[string]string{"a.yaml": compute("reads", "default", 1)},
		func(o *daemon.Options) { o.Store = daemon.NewStore(countedClient(&gets), o.Store.Namespace) })
	h.start()
	first := h.waitStatus("first sync", func(s daemon.Status) bool { return s.Result == daemon.ResultSucceeded })
	before := gets.Load()

	stop := make(chan struct{})
	done := make(chan []time.Duration)
	go func() { done <- floodStatus(t, h.d.Status, stop) }()
	time.Sleep(200 * time.Millisecond) // the readers are at it
	edited := time.Now()
	h.write("a.yaml", compute("reads", "default", 2))
	recorded := time.Duration(0)
	for deadline := edited.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, _, err := h.store.Read(h.ctx); err == nil && st.Result == daemon.ResultSucceeded && st.Revision != first.Revision {
			recorded = time.Since(edited)
			break
		}
	}
	close(stop)
	took := <-done

	if len(took) == 0 {
		t.Fatalf("no status read ended in %s; the edit's status recorded after %s (0: not in 30 s)", time.Since(edited), recorded)
	}
	t.Logf("%d status reads: p50 %s, p99 %s; the edit's status recorded after %s (0: not in 30 s)", len(took), percentile(took, 0.5), percentile(took, 0.99), recorded)
	if n := gets.Load() - before; n != 0 {
		t.Errorf("%d status reads made %d GETs of the status ConfigMap, want 0", len(took), n)
	}
	if recorded == 0 || recorded > 5*time.Second {
		t.Errorf("a sync during the reads recorded its status after %s (0: not in 30 s), want at once", recorded)
	}
	if p50 := percentile(took, 0.5); p50 > 100*time.Millisecond {
		t.Errorf("p50 of a status read %s, want from memory", p50)
	}
}

// TestStandbyServesStatusFromItsInformer: a replica that does not lead answers the status from
// its informer of the status ConfigMap (WatchStatus): 300 readers make no request, and a sync
// of the leader shows there as soon as it is recorded.
func TestStandbyServesStatusFromItsInformer(t *testing.T) {
	h := newHarness(t, "standby", map[string]string{"a.yaml": compute("standby", "default", 1)})
	h.start()
	first := h.waitStatus("first sync", func(s daemon.Status) bool { return s.Result == daemon.ResultSucceeded })

	var gets atomic.Int64
	standby := daemon.New(daemon.Options{Store: daemon.NewStore(countedClient(&gets), h.ns), Identity: "standby"})
	if st, err := standby.Status(h.ctx); err != nil || st.Revision != first.Revision || gets.Load() != 1 {
		t.Fatalf("without its informer a standby reads the ConfigMap: %+v %v, %d GETs", st, err, gets.Load())
	}
	if err := standby.WatchStatus(h.ctx); err != nil {
		t.Fatal(err)
	}
	before := gets.Load()
	took := floodStatus(t, standby.Status, nil)
	if n := gets.Load() - before; n != 0 {
		t.Errorf("300 status reads of a standby made %d GETs, want 0", n)
	}
	t.Logf("standby: %d status reads, p50 %s", len(took), percentile(took, 0.5))

	h.write("a.yaml", compute("standby", "default", 2))
	leader := h.waitStatus("the edit's sync", func(s daemon.Status) bool {
		return s.Result == daemon.ResultSucceeded && s.Revision != first.Revision
	})
	deadline := time.Now().Add(2 * time.Second)
	for {
		st, err := standby.Status(h.ctx)
		if err == nil && st.Revision == leader.Revision && st.LastAttempt.Equal(leader.LastAttempt) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby still shows %+v (%v) 2 s after the leader recorded %s", st, err, leader.Revision)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConcurrentRequestsAreAllAnswered (issue 32, finding 2): 10 sync requests at once are
// all answered, each by a sync that started after it was made, by fewer syncs than requests;
// before, the newest request's id alone was echoed and 9 callers waited for ever.
func TestConcurrentRequestsAreAllAnswered(t *testing.T) {
	h := newHarness(t, "concurrent", map[string]string{"a.yaml": compute("concurrent", "default", 1)})
	h.start()
	h.waitStatus("first sync", func(s daemon.Status) bool { return s.Result == daemon.ResultSucceeded })
	before := h.syncs.Load()
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			asked := time.Now()
			req, err := h.store.Request(h.ctx, daemon.NewRequestID())
			if err != nil {
				t.Error(err)
				return
			}
			st := h.waitStatus("request "+req.ID, func(s daemon.Status) bool { return s.Answers(req) })
			if st.Result != daemon.ResultSucceeded || st.LastAttempt.Before(asked) {
				t.Errorf("request %d (%s at %s) answered by a sync that started at %s: %s %s", i, req.ID, asked.Format(time.RFC3339Nano),
					st.LastAttempt.Format(time.RFC3339Nano), st.Result, st.Message)
			}
		})
	}
	wg.Wait()
	n := h.syncs.Load() - before
	t.Logf("10 requests at once: %d syncs", n)
	if n < 1 || n > 5 {
		t.Errorf("10 requests made %d syncs, want 1 to 5 (one sync answers every request made before it started)", n)
	}
}

// TestAnswers: a status answers a request when its sync had seen the request's version (or a
// later one) when it started, or the request's own id; versions compare as integers.
func TestAnswers(t *testing.T) {
	cases := map[string]struct {
		st   daemon.Status
		req  daemon.Request
		want bool
	}{
		"same version":             {daemon.Status{HandledThrough: "120"}, daemon.Request{ID: "b", Version: "120"}, true},
		"later version":            {daemon.Status{HandledThrough: "1000"}, daemon.Request{ID: "b", Version: "999"}, true},
		"earlier version":          {daemon.Status{HandledThrough: "999"}, daemon.Request{ID: "b", Version: "1000"}, false},
		"no sync answered yet":     {daemon.Status{}, daemon.Request{ID: "b", Version: "7"}, false},
		"own id, opaque versions":  {daemon.Status{LastHandledRequest: "b", HandledThrough: "x"}, daemon.Request{ID: "b", Version: "y"}, true},
		"other id, opaque version": {daemon.Status{LastHandledRequest: "a", HandledThrough: "x"}, daemon.Request{ID: "b", Version: "y"}, false},
	}
	for name, c := range cases {
		if got := c.st.Answers(c.req); got != c.want {
			t.Errorf("%s: Answers = %v, want %v", name, got, c.want)
		}
	}
	if a, b := daemon.NewRequestID(), daemon.NewRequestID(); a == b {
		t.Errorf("two request ids are the same: %s", a)
	}
}
