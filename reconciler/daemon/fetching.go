package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/sources"
)

// DefaultSlowFetch is how long a fetch lasts before the status shows it (Options.SlowFetch).
const DefaultSlowFetch = 5 * time.Second

// fetch fetches the newest revision from the source. A fetch that lasts longer than
// Options.SlowFetch is logged and shown in the status, in memory (LastStatus) and in the status
// ConfigMap (Status.FetchingSince: `gpuctl status` says "fetching for 45s"), so that a source
// that does not answer is seen while it does not; the status that the sync records when it
// ends clears it.
func (d *Daemon) fetch(ctx context.Context) (sources.Revision, error) {
	began := time.Now()
	d.fetching.Store(&began)
	var mu sync.Mutex
	ended := false
	slow := time.AfterFunc(d.opts.SlowFetch, func() {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			return
		}
		d.opts.Log.Warn("the source has not answered yet", "source", d.opts.Source.URL(), "fetching for", humanize.Duration(time.Since(began)))
		st := d.LastStatus()
		st.FetchingSince = began
		wctx, cancel := context.WithTimeout(ctx, statusWriteTimeout)
		defer cancel()
		if err := d.writeProgress(wctx, &st); err != nil && ctx.Err() == nil {
			d.opts.Log.Error("write status", "err", err)
		}
	})
	rev, err := d.opts.Source.Fetch(ctx)
	slow.Stop()
	mu.Lock()
	ended = true // a write of the slow fetch's status has ended: the sync's own comes after it
	mu.Unlock()
	d.fetching.Store(nil)
	return rev, err
}

// statusWriteTimeout bounds a write of the status while a sync runs (a slow fetch's): the sync
// waits for it.
const statusWriteTimeout = 10 * time.Second

// fetchingSince is when the fetch in progress began, when it has lasted longer than
// Options.SlowFetch; zero otherwise.
func (d *Daemon) fetchingSince() time.Time {
	if p := d.fetching.Load(); p != nil && time.Since(*p) >= d.opts.SlowFetch {
		return *p
	}
	return time.Time{}
}

// writeProgress records st, the status of the last sync with what the sync in progress is
// doing (an apply begun, a slow fetch), in the status ConfigMap, as this replica's.
func (d *Daemon) writeProgress(ctx context.Context, st *Status) error {
	st.Cluster, st.Source, st.Leader, st.Mode = d.opts.Render.Cluster, d.opts.Source.URL(), d.opts.Identity, d.opts.DriftMode
	st.APIServer = nil // a write that succeeds reached it
	if st.Result == "" {
		st.Result = ResultPending
	}
	err := d.opts.Store.Write(ctx, *st)
	d.suspectAPI(err)
	return err
}
