package detector

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/notify"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// Options configure a Detector.
type Options struct {
	// Config reaches the cluster (watches); Kube and Engine must use the same cluster.
	Config *rest.Config
	Kube   kubernetes.Interface
	// Engine reads, dry-runs and (in correct mode) applies objects with gpuctl's field manager.
	Engine *reconciler.Manager
	// Store receives the report and history; nil keeps them in memory only.
	Store *drift.Store
	// Mode is drift.ModeReport (record only, the default) or drift.ModeCorrect (re-apply owned
	// fields, recreate deleted objects, re-label nodes).
	Mode drift.Mode
	// DeleteShadow lets correct mode delete shadow workloads (never by default).
	DeleteShadow bool
	// IgnoreManagers are field managers whose writes are not drift: controllers that own a
	// field by design (kube-controller-manager writes an HPA's replicas). Default:
	// DefaultIgnoreManagers.
	IgnoreManagers []string
	// HistorySize bounds the history (default drift.DefaultHistory).
	HistorySize int
	// Resync is the interval of full re-evaluations between syncs (default 5 min).
	Resync time.Duration
	// Workers evaluate keys in parallel (default 4).
	Workers int
	// Metrics is the gpuctl_drift_objects{kind,category} gauge; nil disables it.
	Metrics *prometheus.GaugeVec
	// Events records a Kubernetes Event on each drifted object; nil disables them.
	Events record.EventRecorder
	// Alerts receives a Drift or ShadowWorkload alert for each new item of the report, and
	// DriftResolved when it leaves (alerts.go); default notify.Discard.
	Alerts notify.Sender
	Log    *slog.Logger
}

// DefaultIgnoreManagers are the controllers whose fields are never drift.
var DefaultIgnoreManagers = []string{"kube-controller-manager"}

// Detector finds drift; see the package documentation.
type Detector struct {
	opts Options
	meta metadata.Interface
	dyn  dynamic.Interface

	queue workqueue.TypedRateLimitingInterface[string]

	mu       sync.Mutex
	cond     *sync.Cond
	paused   bool // a sync is writing, or no revision has been applied yet
	desired  *desiredState
	items    map[string]drift.Item // by Item.Key
	history  drift.History
	loaded   bool // the stored report and history were read
	dirty    bool // the report changed since it was stored
	evalAt   time.Time
	attempts map[string][]time.Time // corrections per item key, for the loop guard
	// flushFailed counts the writes of the report that failed in a row; the next is not
	// before flushAfter (flushBackoff).
	flushFailed int
	flushAfter  time.Time
	// correcting: items gpuctl repaired whose resolution is awaited (Corrected, ShadowDeleted)
	correcting map[string]drift.Transition
	// pending are the object keys a sync left possibly different, evaluated after it
	pending []string

	w *watches
}

// New returns a detector; Run starts it.
func New(opts Options) (*Detector, error) {
	if opts.Mode == "" {
		opts.Mode = drift.ModeReport
	}
	if _, err := drift.ParseMode(string(opts.Mode)); err != nil {
		return nil, err
	}
	if opts.IgnoreManagers == nil {
		opts.IgnoreManagers = DefaultIgnoreManagers
	}
	if opts.Resync <= 0 {
		opts.Resync = 5 * time.Minute
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Alerts == nil {
		opts.Alerts = notify.Discard
	}
	mc, err := metadata.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	d := &Detector{opts: opts, meta: mc, dyn: dyn, paused: true, items: map[string]drift.Item{},
		history: drift.History{Max: opts.HistorySize}, attempts: map[string][]time.Time{}, correcting: map[string]drift.Transition{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[string](250*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "gpuctl-drift"})}
	d.cond = sync.NewCond(&d.mu)
	return d, nil
}

// Run watches and evaluates until ctx ends.
func (d *Detector) Run(ctx context.Context) error {
	d.load(ctx)
	w, err := d.startWatches(ctx)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.w = w
	d.mu.Unlock()
	var wg sync.WaitGroup
	for range d.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d.work(ctx) {
			}
		}()
	}
	go func() {
		<-ctx.Done()
		d.queue.ShutDown()
		d.mu.Lock()
		d.paused = false // let waiting workers see the shutdown
		d.cond.Broadcast()
		d.mu.Unlock()
	}()
	go d.flushLoop(ctx)
	tick := time.NewTicker(d.opts.Resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			d.flush(context.Background())
			return nil
		case <-tick.C:
			d.queue.Add(keyAll)
		}
	}
}

// BeginSync pauses evaluation while the daemon writes.
func (d *Detector) BeginSync() {
	d.mu.Lock()
	d.paused = true
	d.mu.Unlock()
}

// EndSync resumes evaluation; with desired, against the objects of revision (bodies hold
// those a deferred render left as heads: see reconciler.PlanDeferred). The objects in pending
// may differ from them; the others were just applied and are evaluated only when they change
// (or at the next Resync). held are the tenant namespaces whose files had errors: gpuctl's
// workloads there stay as a revision before left them, and are no shadows. multiKueueWorker
// (render.Result.MultiKueueWorker) believes MultiKueue's labels: a Job or JobSet with them is
// the manager's copy, no shadow; elsewhere it is judged as if it had none.
func (d *Detector) EndSync(revision string, desired []*unstructured.Unstructured, bodies *render.Bodies, pending []object.Ref, held []string, multiKueueWorker bool) {
	var ds *desiredState
	digest := ""
	if desired != nil {
		digest = reconciler.Digest(desired)
	}
	d.mu.Lock()
	same := d.desired != nil && desired != nil && d.desired.digest == digest
	prev := d.desired
	if same { // the same objects (a sync of an unchanged revision): keep the index
		copied := *d.desired
		copied.revision = revision
		ds = &copied
	}
	d.mu.Unlock()
	if desired != nil && !same {
		var err error
		if ds, err = newDesiredState(revision, digest, desired, bodies, prev, d.opts.Engine); err != nil {
			d.opts.Log.Error("drift: index the applied objects", "err", err)
			ds = nil
		}
	}
	if ds != nil && len(held) > 0 {
		ds.held = make(map[string]bool, len(held))
		for _, ns := range held {
			ds.held[ns] = true
		}
	} else if ds != nil {
		ds.held = nil
	}
	if ds != nil {
		ds.multiKueueWorker = multiKueueWorker
	}
	d.mu.Lock()
	if ds != nil {
		d.desired = ds
		clear(d.attempts) // the loop guard starts again with each sync
		d.pending = d.pending[:0]
		for _, r := range pending {
			d.pending = append(d.pending, "o:"+r.Key())
		}
	}
	if d.desired != nil {
		d.paused = false
		d.cond.Broadcast()
	}
	d.mu.Unlock()
	if ds != nil {
		d.queue.Add(keyWatch) // start watches for new kinds, then evaluate everything
	} else if d.desired != nil {
		d.queue.Add(keyAll)
	}
}

// Current returns the report and history, or false before the first evaluation.
func (d *Detector) Current() (drift.Report, []drift.Entry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.desired == nil || d.evalAt.IsZero() {
		return drift.Report{}, nil, false
	}
	return d.reportLocked(), slices.Clone(d.history.Entries), true
}

func (d *Detector) reportLocked() drift.Report {
	r := drift.Report{Generated: d.evalAt, Mode: d.opts.Mode, Items: make([]drift.Item, 0, len(d.items))}
	if d.desired != nil {
		r.Revision = d.desired.revision
	}
	for _, it := range d.items {
		r.Items = append(r.Items, it)
	}
	drift.Sort(r.Items)
	return r
}

// state returns the desired state to evaluate against, waiting while a sync runs; nil when
// the detector is shutting down.
func (d *Detector) state(ctx context.Context) *desiredState {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.paused && ctx.Err() == nil {
		d.cond.Wait()
	}
	if ctx.Err() != nil {
		return nil
	}
	return d.desired
}

// The queue's keys: keyAll (re-evaluate everything), keyWatch (after a sync: start watches
// for new kinds, then evaluate what the sync left pending, the nodes and the workloads),
// "o:<object.Ref.Key>", "n:<node>", "s:<kind>/<namespace>/<name>".
const (
	keyAll   = "all"
	keyWatch = "watch"
)

// work evaluates one key; false when the queue shut down.
func (d *Detector) work(ctx context.Context) bool {
	key, shutdown := d.queue.Get()
	if shutdown {
		return false
	}
	defer d.queue.Done(key)
	ds := d.state(ctx)
	if ds == nil {
		return ctx.Err() == nil
	}
	err := d.evaluate(ctx, ds, key)
	switch {
	case err == nil:
		d.queue.Forget(key)
	case ctx.Err() != nil:
	case errors.Is(err, errRetry):
		d.queue.AddRateLimited(key)
	default:
		d.opts.Log.Warn("drift: evaluation failed; will retry", "key", key, "err", err)
		d.queue.AddRateLimited(key)
	}
	return true
}

func (d *Detector) evaluate(ctx context.Context, ds *desiredState, key string) error {
	switch {
	case key == keyWatch:
		if err := d.w.ensure(ctx, ds); err != nil {
			return err
		}
		return d.evaluateAll(ctx, ds, false)
	case key == keyAll:
		return d.evaluateAll(ctx, ds, true)
	case len(key) > 2 && key[:2] == "o:":
		return d.evalObject(ctx, ds, key[2:])
	case len(key) > 2 && key[:2] == "n:":
		return d.evalNode(ctx, ds, key[2:])
	case len(key) > 2 && key[:2] == "s:":
		return d.evalShadow(ctx, ds, key[2:])
	}
	return nil
}

// ignored reports whether an object opted out of drift detection.
func ignored(annotations map[string]string) bool {
	return annotations[keys.Drift] == keys.DriftIgnore
}
