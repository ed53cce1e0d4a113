package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/notify"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/sources"
	"github.com/gpuctl/gpuctl/usage"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Options configure a Daemon.
type Options struct {
	// Source yields the revisions to apply.
	Source sources.Source
	// Render configures rendering; Root is set to each revision's directory when Config is set.
	// Its Cluster, the cluster's name, also names it in the status, the metrics
	// (gpuctl_reconciler_info), the Events of the idle policy and the commits of writes.
	Render render.Options
	// Engine plans and applies.
	Engine *reconciler.Manager
	// Store records the status and carries sync requests.
	Store *Store
	// Interval is the time between syncs when nothing signals (default 5 min).
	Interval time.Duration
	// MinBackoff is the first retry delay after a failed sync; it doubles up to Interval.
	MinBackoff time.Duration
	// Identity names this replica in the status (pod name).
	Identity string
	// DriftMode is drift.ModeReport (default: a sync of an unchanged revision leaves drift as
	// it is; a new revision or a sync request applies everything) or drift.ModeCorrect (every
	// sync applies, and Drift repairs drift as it happens).
	DriftMode drift.Mode
	// Drift detects drift between syncs; nil disables detection (DriftStore is still read).
	Drift Detector
	// DriftStore holds the drift report that Drift writes; a standby reads it from there.
	DriftStore *drift.Store
	// RenderTimeout bounds one render (default DefaultRenderTimeout): a revision whose files
	// cannot be read or built in time fails the sync, and the last good revision stays applied.
	RenderTimeout time.Duration
	// SyncTimeout bounds one sync: fetch, render, plan and apply (default DefaultSyncTimeout).
	SyncTimeout time.Duration
	// RenderCacheBytes bounds the render cache that keeps each file's work from one sync to
	// the next, so that a revision re-renders only the files it changed (default
	// render.DefaultCacheBytes; negative: no cache).
	RenderCacheBytes int64
	// FS is the filesystem revisions are read through (default: the disk).
	FS filesys.FileSystem
	// SlowFetch is how long a fetch lasts before it is logged and shown in the status
	// (Status.FetchingSince; default DefaultSlowFetch).
	SlowFetch time.Duration
	// ProgressEvery is how often a sync that lasts longer logs its progress (default
	// DefaultProgressEvery).
	ProgressEvery time.Duration
	// ProbeAPI asks whether the Kubernetes API server answers (default ProbeReadyz of
	// Store.Kube): a daemon whose request failed probes it, and, while it does not answer,
	// reports it unreachable (Status.APIServer, Ready) and probes it every APIProbeEvery
	// (default DefaultAPIProbeEvery) until it does, then syncs at once.
	ProbeAPI      func(context.Context) error
	APIProbeEvery time.Duration
	// Now is the clock of the progress lines (default time.Now).
	Now func() time.Time
	// Writes configure the API's writes (Write).
	Writes WriteOptions
	// Usage reads GPU utilization from Prometheus for the idle policy and gpuctl_team_gpus;
	// nil without --prometheus-url.
	Usage *usage.Client
	// IdleEvery is how often the leader evaluates the idle policy and gpuctl_team_gpus when
	// Usage is set (default DefaultIdleEvery; idle.go).
	IdleEvery time.Duration
	// Alerts receives the Events of syncs and of the idle policy (notify.go), and, while the
	// daemon leads, of failed Jobs and reached quotas (jobwatch.go; default notify.Discard:
	// nothing is watched for them).
	Alerts notify.Sender
	// Dynamic reads the JobSets and Kueue's ClusterQueues whose alerts the daemon sends with
	// those of Jobs and ResourceQuotas (jobwatch_kueue.go), when the cluster serves their kinds;
	// nil: only Jobs and ResourceQuotas are watched.
	Dynamic dynamic.Interface
	// Statuses reports each sync's result on its commit (a Git source with a forge); nil: none.
	Statuses StatusReporter
	// Recorder records each sync's result as a Kubernetes Event on the status ConfigMap; nil:
	// none.
	Recorder record.EventRecorder
	// Metrics may be nil.
	Metrics *Metrics
	Log     *slog.Logger
}

// DefaultRenderTimeout and DefaultSyncTimeout bound a render and a whole sync.
const (
	DefaultRenderTimeout = time.Minute
	DefaultSyncTimeout   = 10 * time.Minute
)

// Daemon runs syncs one at a time.
type Daemon struct {
	opts Options

	requests chan struct{} // wakes the loop for a sync request (requests.go)
	watch    statusWatch   // the status ConfigMap's informer: requests, and the status a standby serves

	mu      sync.Mutex
	last    Status
	lastRev sources.Revision

	// writeMu makes writes one at a time; tree keeps a sync (its fetch and render) and a write
	// of a directory source apart, so that no sync reads a half-written tree.
	writeMu sync.Mutex
	tree    sync.RWMutex

	running atomic.Bool // Run has started (this replica leads)
	synced  atomic.Bool // and has finished its first sync
	// firstSync is closed when the first sync has ended (FirstSync).
	firstSync     chan struct{}
	firstSyncOnce sync.Once

	renderCache *render.Cache // nil: every render reads every file anew
	// ahead is the last render ahead (ahead.go), taken by the next sync; aheadBusy is set
	// while one runs.
	ahead     *ahead
	aheadBusy atomic.Bool
	// snapshot is what the last sync left as it found it (it had nothing to do), for a sync of
	// the same revision to check from the watches alone.
	snapshot atomic.Pointer[reconciler.Snapshot]
	// fetching is when the fetch in progress began (nil: none), for the status (fetching.go).
	fetching atomic.Pointer[time.Time]
	// release collects and frees the memory of large syncs when they end (release.go).
	release *releaser
	// api is whether the API server answers (outage.go).
	api apiHealth
	// idle is what the idle policy remembers between its rounds (idle.go).
	idle idleState
	// multiKueueWorker: the last render was a MultiKueue worker's (render.Result), where the
	// job alerts leave MultiKueue's copies to the manager (jobwatch.go).
	multiKueueWorker atomic.Bool
}

// Ready reports whether the replica can serve: not while it cannot reach the API server
// (Status.APIServer: the status it serves is then the last one recorded, and neither a sync
// request nor a sync can be made); else a standby always can (status and sync requests go
// through the ConfigMap), a leader once its first sync is done. Only readiness says so: the
// liveness probe (/healthz) does not depend on the API server.
func (d *Daemon) Ready() error {
	if u := d.api.down.Load(); u != nil {
		return errors.New("the API server is " + u.String())
	}
	if d.running.Load() && !d.synced.Load() {
		return errors.New("first sync in progress")
	}
	return nil
}

// FirstSync is closed when this replica's first sync has ended, whatever its result: work
// that can wait for it (the API's informers, whose answers a leader does not serve before it is
// Ready) leaves it the machine.
func (d *Daemon) FirstSync() <-chan struct{} { return d.firstSync }

// New returns a daemon; Run starts it.
func New(opts Options) *Daemon {
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Minute
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 2 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.DriftMode == "" {
		opts.DriftMode = drift.ModeReport
	}
	if opts.RenderTimeout <= 0 {
		opts.RenderTimeout = DefaultRenderTimeout
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	if opts.FS == nil {
		opts.FS = diskFS()
	}
	if opts.SlowFetch <= 0 {
		opts.SlowFetch = DefaultSlowFetch
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = DefaultProgressEvery
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ProbeAPI == nil && opts.Store != nil && opts.Store.Kube != nil {
		opts.ProbeAPI = ProbeReadyz(opts.Store.Kube)
	}
	if opts.APIProbeEvery <= 0 {
		opts.APIProbeEvery = DefaultAPIProbeEvery
	}
	if opts.IdleEvery <= 0 {
		opts.IdleEvery = DefaultIdleEvery
	}
	if opts.Alerts == nil {
		opts.Alerts = notify.Discard
	}
	d := &Daemon{opts: opts, requests: make(chan struct{}, 1), firstSync: make(chan struct{}), release: newReleaser(),
		api: apiHealth{suspect: make(chan struct{}, 1), back: make(chan struct{}, 1)}}
	if opts.RenderCacheBytes >= 0 {
		d.renderCache = render.NewCache(opts.RenderCacheBytes)
	}
	opts.Metrics.setInfo(opts.Render.Cluster)
	d.multiKueueWorker.Store(opts.Render.Config.IsWorker(opts.Render.Cluster)) // until a render says
	return d
}

// Run syncs on every source change, interval, webhook and sync request until ctx ends. Only
// the leader runs it.
func (d *Daemon) Run(ctx context.Context) error {
	d.running.Store(true)
	defer d.running.Store(false)
	if st, _, err := d.opts.Store.Read(ctx); err == nil {
		st.FetchingSince = time.Time{} // a fetch of a replica that stopped during it
		d.mu.Lock()
		d.last = st
		d.mu.Unlock()
	} else {
		d.suspectAPI(err) // probed once the watch of the status runs
	}
	stopWatch, err := d.watchStatus(ctx)
	if err != nil {
		return fmt.Errorf("watch sync requests: %w", err)
	}
	defer stopWatch()
	if d.opts.Drift != nil {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			if err := d.opts.Drift.Run(ctx); err != nil {
				d.opts.Log.Error("drift detection stopped", "err", err)
			}
		}()
	}
	if d.opts.Usage != nil { // the idle policy and gpuctl_team_gpus, while this replica leads
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			d.runIdle(ctx)
		}()
	}
	if d.opts.Alerts != notify.Discard { // JobFailed and QuotaReached, while this replica leads (jobwatch.go)
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			d.watchJobs(ctx)
		}()
	}
	timer := time.NewTimer(0) // the first sync starts at once
	defer timer.Stop()
	failures := 0
	activity := d.activity()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-activity:
			d.renderAhead(ctx) // files are changing: render them while they settle
			continue
		case <-d.opts.Source.Changes():
		case <-d.api.back: // the API server answers again: no wait for the backoff
		case <-d.requests:
			if d.pendingRequest().ID == "" {
				continue // answered by the sync that ended meanwhile
			}
		case <-timer.C:
		}
		st := d.syncOnce(ctx, d.takeRequest())
		d.release.afterSync()
		if ctx.Err() != nil {
			return nil
		}
		wait := d.opts.Interval
		if st.Result == ResultSucceeded || st.Result == ResultInvalid || st.Result == ResultRefused {
			failures = 0 // these wait for a new revision, not for time
		} else {
			failures++
			wait = min(d.opts.MinBackoff<<min(failures-1, 20), d.opts.Interval)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// LastStatus returns the status of the last sync this replica ran, with the fetch in progress
// when it is slow (Status.FetchingSince) and the outage of the API server, if any
// (Status.APIServer).
func (d *Daemon) LastStatus() Status {
	d.mu.Lock()
	st := d.last
	d.mu.Unlock()
	st.FetchingSince = d.fetchingSince()
	st.APIServer = d.api.down.Load()
	return st
}

// SyncOnce fetches, renders, plans and applies once, records the status and returns it. A
// fetch failure, invalid files or a refused plan change nothing in the cluster. A request id
// ("": none) makes it a requested sync, which applies everything (see Options.DriftMode).
func (d *Daemon) SyncOnce(ctx context.Context, request string) Status {
	return d.syncOnce(ctx, Request{ID: request})
}

// syncOnce is SyncOnce answering the request r (none when r.ID is "").
func (d *Daemon) syncOnce(ctx context.Context, r Request) Status {
	start := time.Now()
	d.mu.Lock()
	prev := d.last
	d.mu.Unlock()
	st := Status{Cluster: d.opts.Render.Cluster, Source: d.opts.Source.URL(), LastAttempt: start, Leader: d.opts.Identity, Mode: d.opts.DriftMode,
		AppliedRevision: prev.AppliedRevision, AppliedDigest: prev.AppliedDigest, LastSuccess: prev.LastSuccess,
		LastHandledRequest: prev.LastHandledRequest, HandledThrough: prev.HandledThrough, Held: prev.Held,
		Applying: prev.Applying} // until an apply ends: the cluster may hold part of that revision
	syncCtx, cancel := context.WithTimeout(ctx, d.opts.SyncTimeout)
	stopProbes := d.probeWhileSyncing()
	d.sync(syncCtx, &st, prev, r.ID != "")
	stopProbes()
	cancel()
	if r.ID != "" { // only the status of the ended sync answers the requests: no earlier write
		st.LastHandledRequest, st.HandledThrough = r.ID, r.Version
	}
	st.Duration = time.Since(start)
	d.mu.Lock()
	d.last = st
	d.mu.Unlock()
	// Ready before the status is written: whoever sees the status may find the replica ready.
	d.synced.Store(true)
	d.firstSyncOnce.Do(func() { close(d.firstSync) })
	if err := d.opts.Store.Write(ctx, st); err == nil {
		d.apiAnswered()
	} else if ctx.Err() == nil {
		d.opts.Log.Error("write status", "err", err)
		d.suspectAPI(err)
	}
	if st.Result == ResultFailed && ctx.Err() == nil {
		d.probeSoon() // a request of the plan or the apply may have found no API server
	}
	d.opts.Metrics.observe(st)
	d.log(st)
	if ctx.Err() == nil { // a sync cut short by the end of the daemon tells nothing
		d.tell(prev, st)
	}
	return st
}

func (d *Daemon) log(st Status) {
	attrs := []any{"result", st.Result, "revision", humanize.Revision(st.Revision), "duration", st.Duration.Round(time.Millisecond)}
	if st.Summary != "" {
		attrs = append(attrs, "summary", st.Summary)
	}
	if p := st.Plan; p != nil {
		attrs = append(attrs, "plan", fmt.Sprintf("%s, %d requests, %d listed, %d from watches", p.Duration.Round(time.Millisecond), p.Requests, p.Listed, p.Watched))
	}
	if st.Steps != nil {
		attrs = append(attrs, "steps", st.Steps.String())
	}
	if st.Result == ResultSucceeded {
		d.opts.Log.Info("synced", attrs...)
		return
	}
	attrs = append(attrs, "message", st.Message)
	for i, e := range st.Errors {
		if i == 5 {
			break
		}
		attrs = append(attrs, fmt.Sprintf("error%d", i), e)
	}
	d.opts.Log.Warn("sync not applied", attrs...)
}

// maxErrors bounds the errors kept in the status.
const maxErrors = 50

// sync does the work of SyncOnce and fills st. prev is the status before; requested tells a
// sync that someone asked for.
func (d *Daemon) sync(ctx context.Context, st *Status, prev Status, requested bool) {
	snapshot := d.snapshot.Swap(nil) // set again by a sync that leaves nothing to do
	steps := &Steps{}
	rev, res, err, renderErr := d.read(ctx, steps, func(rev sources.Revision) bool { return d.unchanged(ctx, rev, prev, snapshot, st) })
	if err == nil && res == nil && renderErr == nil { // unchanged: nothing rendered, planned nor applied
		d.snapshot.Store(snapshot)
		return
	}
	st.Steps = steps
	if err != nil {
		st.Result, st.Message = ResultFetchFailed, err.Error()
		if st.AppliedRevision != "" {
			st.Message += "; revision " + humanize.Revision(st.AppliedRevision) + " stays applied"
		}
		return
	}
	st.Revision, st.RevisionMessage = rev.ID, rev.Message
	err = renderErr
	var ve *render.ValidationError
	switch {
	case errors.As(err, &ve):
		st.Result = ResultInvalid
		st.Message = humanize.Plural(len(res.Errors()), "error") + " in the files; nothing applied"
		for _, diag := range res.Errors() { // paths relative to the revision, as in the repository
			st.Errors = appendBounded(st.Errors, strings.TrimPrefix(diag.Error(), rev.Dir+string(filepath.Separator)))
		}
		return
	case err != nil:
		st.Result, st.Message = ResultFailed, "render: "+err.Error()
		if st.AppliedRevision != "" {
			st.Message += "; revision " + humanize.Revision(st.AppliedRevision) + " stays applied"
		}
		return
	}
	objects, bodies := res.Objects, res.Bodies
	st.Held = heldScopes(res.Held, prev, rev.Dir)
	held, worker := render.HeldNamespaces(res.Held), res.MultiKueueWorker
	d.multiKueueWorker.Store(worker)
	res.Documents = nil // the parsed documents are not needed any more: let them be collected
	prog := d.newSyncProgress()
	plan, err := d.opts.Engine.PlanRender(prog.planContext(ctx), res)
	if plan != nil {
		steps.Plan = plan.Stats.Took
	}
	if err != nil {
		st.Result, st.Message = ResultFailed, "plan: "+err.Error()
		return
	}
	st.Summary, st.Counts = plan.Summary(), counts(plan)
	st.Plan = &PlanCost{Requests: plan.Stats.Requests, Listed: plan.Stats.Listed, Watched: plan.Stats.Watched, Duration: plan.Stats.Took}
	for _, w := range plan.Warnings {
		st.Errors = appendBounded(st.Errors, "warning: "+w)
	}
	if plan.Refused != nil {
		st.Result, st.Message = ResultRefused, plan.Refused.Error()
		return
	}
	digest := heldDigest(reconciler.Digest(objects), held)
	// Report mode trusts the status to say what the cluster holds: not when an apply was
	// interrupted since (prev.Applying), nor for members of gpuctl's inventory that nothing
	// desires (such as those a killed sync of a later revision created), which are never drift.
	if d.opts.DriftMode != drift.ModeCorrect && !requested && prev.Result == ResultSucceeded && prev.AppliedDigest == digest &&
		prev.Applying == nil && plan.Count(reconciler.ActionDelete) == 0 {
		// Report mode: the revision is applied; what differs now is drift, reported by the
		// detector and left as it is until Git changes or someone asks for a sync.
		st.Result, st.AppliedRevision, st.LastSuccess = ResultSucceeded, rev.ID, time.Now()
		st.Message = "revision " + humanize.Revision(rev.ID) + " is applied" + heldNote(st.Held)
		if plan.HasChanges() {
			st.Message += "; drift is reported, not corrected (--drift=report): gpuctl sync applies it again"
		}
		if d.opts.Drift != nil {
			began := time.Now()
			d.opts.Drift.EndSync(rev.ID, objects, bodies, pendingOf(plan, false), held, worker)
			steps.Drift = time.Since(began)
		}
		if !plan.HasChanges() {
			d.snapshot.Store(reconciler.SnapshotOf(plan, objects))
		}
		return
	}
	if d.opts.DriftMode != drift.ModeCorrect && !requested && plan.LeaveDrift() > 0 {
		// A new revision: Git wins on the objects it changes (the engine takes their fields
		// back); on the others, fields another manager took are drift, left as they are.
		st.Summary, st.Counts = plan.Summary(), counts(plan)
	}
	if plan.HasChanges() {
		if err := d.recordIntent(ctx, prev, rev.ID); err != nil {
			st.Result, st.Message = ResultFailed, "record the apply of revision "+humanize.Revision(rev.ID)+" in the status before it: "+err.Error()+"; nothing applied"
			return
		}
	}
	if d.opts.Drift != nil {
		d.opts.Drift.BeginSync()
	}
	applied := time.Now()
	cs, err := d.opts.Engine.Apply(ctx, plan, prog.apply)
	steps.Apply = time.Since(applied)
	st.Applying = nil // the apply has ended: its results are this status
	if err == nil && !plan.HasChanges() {
		d.snapshot.Store(reconciler.SnapshotOf(plan, objects))
	}
	taken := takenBack(plan, cs, rev.ID)
	for _, it := range taken {
		st.TakenBack = appendBounded(st.TakenBack, it.Object.String()+": "+it.Message)
	}
	d.recordTakenBack(ctx, taken)
	if d.opts.Drift != nil {
		began := time.Now()
		if cs == nil || cs.WriteFailed() {
			d.opts.Drift.EndSync("", nil, nil, nil, nil, false)
		} else { // applied, but for objects that failed at plan time: they are not watched
			pending, accepted := pendingOf(plan, true), plan.Accepted(objects)
			plan = nil // let the plan's live objects go before the detector indexes the revision
			d.opts.Drift.EndSync(rev.ID, accepted, bodies, pending, held, worker)
		}
		steps.Drift = time.Since(began)
	}
	queued := queuedJobs(objects)
	jobErrors := d.jobStartErrors(ctx, cs, applied, queued)
	if err != nil {
		st.Result, st.Message = ResultFailed, humanize.Plural(len(failed(cs)), "object")+" failed"
		for _, r := range failed(cs) {
			st.Errors = appendBounded(st.Errors, fmt.Sprintf("%s: %s: %s", r.Object, r.Action, r.Error))
		}
		if cs == nil {
			st.Message = err.Error()
		}
		reportJobs(st, jobErrors, cs, queued)
		return
	}
	st.Result, st.Message = ResultSucceeded, "applied revision "+humanize.Revision(rev.ID)+heldNote(st.Held)
	if a := prev.Applying; a != nil {
		st.Message += "; the apply of " + a.String() + " had not ended (the daemon stopped): this sync applied in full"
	}
	if len(taken) > 0 {
		st.Message += "; took back fields from other managers on " + humanize.Plural(len(taken), "object") + " (Git wins on what a revision changes)"
	}
	st.AppliedRevision, st.AppliedDigest, st.LastSuccess = rev.ID, digest, time.Now()
	reportJobs(st, jobErrors, cs, queued)
}

// recordIntent records in the status, before an apply's first write, that revision is being
// applied (Status.Applying): a daemon killed during the apply leaves it there, and the next
// one plans and applies in full instead of trusting the status's AppliedDigest. The rest of the
// status stays prev's, which answers no new request; the leader serves it too.
func (d *Daemon) recordIntent(ctx context.Context, prev Status, revision string) error {
	intent := prev
	intent.Applying = &Applying{Revision: revision, Since: time.Now()}
	if err := d.writeProgress(ctx, &intent); err != nil {
		return err
	}
	d.mu.Lock()
	d.last = intent
	d.mu.Unlock()
	return nil
}

// read fetches the newest revision and renders it, while no write changes the tree; a fetch
// error is err, a render error renderErr.
func (d *Daemon) read(ctx context.Context, steps *Steps, unchanged func(sources.Revision) bool) (rev sources.Revision, res *render.Result, err, renderErr error) {
	d.tree.RLock()
	defer d.tree.RUnlock()
	began := time.Now()
	rev, err = d.fetch(ctx)
	steps.Fetch = time.Since(began)
	if err != nil {
		return rev, nil, err, nil
	}
	d.mu.Lock()
	d.lastRev = rev
	d.mu.Unlock()
	if unchanged != nil && unchanged(rev) {
		return rev, nil, nil, nil
	}
	began = time.Now()
	if a, ok := d.takeAhead(ctx, rev); ok {
		steps.Render, steps.Ahead = time.Since(began), a.took
		return rev, a.res, nil, a.err
	}
	res, renderErr = d.render(ctx, rev)
	steps.Render = time.Since(began)
	return rev, res, nil, renderErr
}

// unchanged answers a sync of the revision the last sync left nothing to do for from the
// engine's watches alone (reconciler.Snapshot): when every object is still as that sync found
// it, nothing is rendered, listed or written. It fills st and reports true; false leaves st as
// it was.
func (d *Daemon) unchanged(ctx context.Context, rev sources.Revision, prev Status, s *reconciler.Snapshot, st *Status) bool {
	if s == nil || prev.Result != ResultSucceeded || prev.AppliedRevision != rev.ID || prev.Applying != nil {
		return false
	}
	plan, ok := d.opts.Engine.Unchanged(ctx, s)
	if !ok {
		return false
	}
	st.Revision, st.RevisionMessage = rev.ID, rev.Message
	st.Summary, st.Counts = plan.Summary(), counts(plan)
	st.Plan = &PlanCost{Requests: plan.Stats.Requests, Watched: plan.Stats.Watched, Duration: plan.Stats.Took}
	st.Result, st.AppliedRevision, st.LastSuccess = ResultSucceeded, rev.ID, time.Now()
	st.Message = "revision " + humanize.Revision(rev.ID) + " is applied; nothing changed since (no file, no object)"
	return true
}

// render renders a revision within the render timeout (and ctx).
func (d *Daemon) render(ctx context.Context, rev sources.Revision) (*render.Result, error) {
	opts := d.opts.Render
	if opts.Config != nil {
		opts.Root = rev.Dir
	}
	if opts.Cache == nil {
		opts.Cache = d.renderCache
	}
	opts.Deferred = true // the engine and the detector materialize what they read (reconciler.PlanDeferred)
	opts.Hold = true     // a team's errors hold that team's files only
	if dg, ok := d.opts.Source.(sources.Digester); ok && opts.Digest == nil {
		// The source has just hashed the revision's files: those the cache has seen are not
		// read again.
		dir := filepath.Clean(rev.Dir) + string(filepath.Separator)
		opts.Digest = func(abs string) (sum [sha256.Size]byte, ok bool) {
			rel, below := strings.CutPrefix(abs, dir)
			if !below || !filepath.IsLocal(rel) || filepath.Clean(rel) != rel {
				return sum, false
			}
			return dg.Digest(filepath.ToSlash(rel))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.RenderTimeout)
	defer cancel()
	return render.New(opts).RenderContext(ctx, d.opts.FS, rev.Dir)
}

func failed(cs *reconciler.ChangeSet) []reconciler.Result {
	if cs == nil {
		return nil
	}
	return cs.Failed()
}

func appendBounded(list []string, s string) []string {
	if len(list) >= maxErrors {
		return list
	}
	return append(list, s)
}

func counts(p *reconciler.Plan) map[string]int {
	out := map[string]int{}
	for _, c := range p.Changes {
		if c.Error != "" {
			out["failed"]++
		} else {
			out[string(c.Action)]++
		}
	}
	return out
}

// Plan renders the last fetched revision and plans it, writing nothing.
func (d *Daemon) Plan(ctx context.Context) (*reconciler.Plan, error) {
	d.mu.Lock()
	rev := d.lastRev
	d.mu.Unlock()
	if rev.Dir == "" {
		return nil, errors.New("no revision fetched yet on this replica (it may not be the leader)")
	}
	d.tree.RLock()
	res, err := d.render(ctx, rev)
	d.tree.RUnlock()
	if err != nil {
		return nil, err
	}
	return d.opts.Engine.PlanRender(ctx, res)
}
