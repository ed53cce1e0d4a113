package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gpuctl/gpuctl/internal/humanize"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
)

// DefaultAPIProbeEvery is how often a daemon that cannot reach the API server probes it
// (Options.APIProbeEvery).
const DefaultAPIProbeEvery = 2 * time.Second

// apiProbeTimeout bounds one probe of the API server.
const apiProbeTimeout = 5 * time.Second

// slowSyncProbe is how often a sync in progress probes the API server: an API server whose
// etcd is down keeps its connections and watches open and lets requests wait, and only a probe
// of /readyz says why the sync does not end.
const slowSyncProbe = 10 * time.Second

// Unreachable is an outage of the Kubernetes API server as the daemon sees it
// (Status.APIServer).
type Unreachable struct {
	// Since is when a request of the daemon first failed, which a probe then confirmed.
	Since time.Time `json:"unreachableSince"`
	// Error is the last probe's error.
	Error string `json:"error"`
}

// String is the outage on one line: `unreachable since 2026-11-27T10:02:24Z (2m): dial tcp
// 10.96.0.1:443: connect: connection refused`.
func (u *Unreachable) String() string {
	return "unreachable since " + u.Since.UTC().Format(time.RFC3339) + " (" + humanize.Age(time.Since(u.Since)) + "): " + u.Error
}

// apiHealth is what the daemon knows of the API server: requests that failed make it probe
// (suspect), and an outage that ends wakes the loop (back).
type apiHealth struct {
	suspect chan struct{}               // a request failed: probe now (capacity 1)
	back    chan struct{}               // the API server answers again after an outage: sync now (capacity 1)
	down    atomic.Pointer[Unreachable] // nil: the API server answers
	// wrote is when (Unix ns) a write of the daemon last succeeded: an API server that takes
	// writes answers, whatever its /readyz says while it recovers (etcd back, its checks not yet).
	wrote atomic.Int64
}

// apiAnswered records that a write to the API server succeeded: an outage that a probe
// recorded is over (the probes of waitAPI see it too).
func (d *Daemon) apiAnswered() {
	d.api.wrote.Store(time.Now().UnixNano())
	d.api.down.Store(nil)
}

// suspectAPI tells the daemon that a request to the API server failed (err, nil: none): unless
// the API server answered it with a client error (401, 403, 404, a conflict, an invalid
// object), the daemon probes the API server at once (watchAPI).
func (d *Daemon) suspectAPI(err error) {
	if err != nil && !answered(err) {
		d.probeSoon()
	}
}

// probeSoon makes the daemon probe the API server at once (watchAPI).
func (d *Daemon) probeSoon() {
	select {
	case d.api.suspect <- struct{}{}:
	default: // a probe is queued
	}
}

// probeWhileSyncing probes the API server every slowSyncProbe until stop is called (the sync
// has ended).
func (d *Daemon) probeWhileSyncing() (stop func()) {
	tick := time.NewTicker(slowSyncProbe)
	done := make(chan struct{})
	go func() {
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				d.probeSoon()
			}
		}
	}()
	return func() { close(done) }
}

// answered reports whether err is an answer of the API server that says nothing of an outage:
// a status below 500, other than 429.
func answered(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code > 0 && code < http.StatusInternalServerError && code != http.StatusTooManyRequests
}

// watchAPI probes the API server whenever a request failed (suspectAPI): one that does not
// answer is recorded as unreachable — Status.APIServer, served from memory by every replica
// (the status ConfigMap cannot be written meanwhile), and Ready fails with it — and probed every
// Options.APIProbeEvery until it answers; then the loop syncs at once (the failed syncs'
// backoff may have grown to --interval) and the outage is cleared. It returns when ctx ends.
func (d *Daemon) watchAPI(ctx context.Context) {
	defer d.api.down.Store(nil)
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.api.suspect:
		}
		since := time.Now()
		err := d.probeAPI(ctx)
		if err == nil || ctx.Err() != nil {
			continue
		}
		d.api.down.Store(&Unreachable{Since: since, Error: err.Error()})
		d.opts.Log.Warn("the API server is unreachable", "err", err)
		if !d.waitAPI(ctx, since) {
			return
		}
		d.api.down.Store(nil)
		d.opts.Log.Info("the API server answers again; syncing now", "unreachable for", humanize.Duration(time.Since(since)))
		select {
		case d.api.back <- struct{}{}:
		default:
		}
	}
}

// waitAPI probes the API server every Options.APIProbeEvery until it answers (true) or ctx
// ends (false), recording each probe's error in the outage that began at since.
func (d *Daemon) waitAPI(ctx context.Context, since time.Time) bool {
	tick := time.NewTicker(d.opts.APIProbeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		err := d.probeAPI(ctx)
		if err == nil || d.api.wrote.Load() >= since.UnixNano() {
			return true // it answers, or a write succeeded since the outage began
		}
		if ctx.Err() != nil {
			return false
		}
		d.api.down.Store(&Unreachable{Since: since, Error: err.Error()})
	}
}

// probeAPI probes the API server once (Options.ProbeAPI), within apiProbeTimeout.
func (d *Daemon) probeAPI(ctx context.Context) error {
	if d.opts.ProbeAPI == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, apiProbeTimeout)
	defer cancel()
	return d.opts.ProbeAPI(ctx)
}

// ProbeReadyz returns the probe of Options.ProbeAPI that asks the API server of kube for
// /readyz, which every client may read (the ClusterRole system:public-info-viewer): it fails
// when no answer comes (connection refused, a timeout) or the API server is not ready (an
// answer of 500 or more: etcd down, say). An answer of 401, 403 or 404 (a cluster that does not
// let the daemon read /readyz) is taken for a working API server.
func ProbeReadyz(kube kubernetes.Interface) func(context.Context) error {
	return func(ctx context.Context) error {
		rc := kube.Discovery().RESTClient()
		if rc == nil { // a fake clientset
			_, err := kube.Discovery().ServerVersion()
			return err
		}
		var code int
		err := rc.Get().AbsPath("/readyz").Do(ctx).StatusCode(&code).Error()
		switch {
		case err == nil, answered(err):
			return nil
		case code >= http.StatusInternalServerError:
			return fmt.Errorf("the API server is not ready: GET /readyz answered %d", code)
		}
		return err
	}
}
