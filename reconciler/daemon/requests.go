package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func diskFS() filesys.FileSystem { return filesys.MakeFsOnDisk() }

// Request is a sync request as Store.Request wrote it. A request is answered by any sync that
// started after it was made: every caller that waits gets the result of such a sync
// (Status.Answers), however many ask at once.
type Request struct {
	// ID is the value that the request wrote in the request annotation, unique per request
	// (NewRequestID): for logs, and LastHandledRequest.
	ID string `json:"id"`
	// Version is the resourceVersion of the status ConfigMap that the request's write made.
	// The API server orders the ConfigMap's writes by it (resourceVersions of one object
	// compare as integers), so no clock of the caller or of the daemon is involved: a sync
	// that starts once the daemon has seen this version of the ConfigMap answers the request.
	Version string `json:"version"`
}

// NewRequestID returns a new request id: the time, for a person who reads it, and a random
// suffix, so that two requests never write the same value (a write of the value already there
// changes nothing, and no watch would see it).
func NewRequestID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return time.Now().UTC().Format(time.RFC3339Nano) + "-" + hex.EncodeToString(b[:])
}

// Answers reports whether the status is that of a sync that started after the request r was
// made (the sync that answered it, or a later one): its HandledThrough is at or after the
// request's Version. Where a resourceVersion is not an integer (an API server that does not
// number its writes), only the sync that saw the request's own ID answers it.
func (s Status) Answers(r Request) bool {
	if r.ID != "" && s.LastHandledRequest == r.ID {
		return true
	}
	c, err := resourceversion.CompareResourceVersion(s.HandledThrough, r.Version)
	return err == nil && c >= 0
}

// statusWatch is the informer of the status ConfigMap: the leader learns of sync requests
// from it, and every replica serves the status from it (Daemon.Status) without a request to
// the API server. Its zero value is stopped.
type statusWatch struct {
	mu  sync.Mutex
	inf cache.SharedIndexInformer // nil: not started
	// decoded is the status of the last version of the ConfigMap read, so that a read of an
	// unchanged ConfigMap does not decode it again.
	decoded atomic.Pointer[decodedStatus]
}

// decodedStatus is the status of one version of the status ConfigMap.
type decodedStatus struct {
	version string
	st      Status
	err     error
}

// WatchStatus starts the informer of the status ConfigMap until ctx ends, so that Status answers
// from memory on every replica, a standby's too; Run starts it when it is not started. It waits
// (at most 30 s) for the informer's first list.
func (d *Daemon) WatchStatus(ctx context.Context) error {
	stop, err := d.watchStatus(ctx)
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, stop)
	return nil
}

// watchStatus starts the informer of the status ConfigMap unless it runs; stop stops the one
// it started (a no-op for one that was running).
func (d *Daemon) watchStatus(ctx context.Context) (stop func(), err error) {
	w := &d.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inf != nil {
		return func() {}, nil
	}
	// A list or watch that fails (the watch of a stopped API server is retried at once, and
	// refused) makes the daemon probe the API server: an outage is seen between syncs too.
	cms := d.opts.Store.Kube.CoreV1().ConfigMaps(d.opts.Store.Namespace)
	only := func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + d.opts.Store.Name }
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			only(&o)
			list, err := cms.List(ctx, o)
			d.suspectAPI(err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			only(&o)
			w, err := cms.Watch(ctx, o)
			d.suspectAPI(err)
			return w, err
		},
	}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	handle := func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && d.requested(cm) {
			select {
			case d.requests <- struct{}{}:
			default: // a wake-up is queued: the sync it starts answers this request too
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	}); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	var running sync.WaitGroup
	running.Go(func() { d.watchAPI(wctx) })
	running.Go(func() { inf.RunWithContext(wctx) })
	syncCtx, syncCancel := context.WithTimeout(wctx, 30*time.Second)
	defer syncCancel()
	cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced)
	w.inf = inf
	return func() {
		cancel()
		running.Wait()
		w.mu.Lock()
		w.inf = nil
		w.mu.Unlock()
		w.decoded.Store(nil)
	}, nil
}

// watched returns the status ConfigMap as the informer last saw it (nil: none), and false
// when the informer is not running or has not listed yet.
func (d *Daemon) watched() (*corev1.ConfigMap, bool) {
	w := &d.watch
	w.mu.Lock()
	inf := w.inf
	w.mu.Unlock()
	if inf == nil || !inf.HasSynced() {
		return nil, false
	}
	obj, exists, err := inf.GetStore().GetByKey(d.opts.Store.Namespace + "/" + d.opts.Store.Name)
	if err != nil {
		return nil, false
	}
	if !exists {
		return nil, true
	}
	cm, ok := obj.(*corev1.ConfigMap)
	return cm, ok
}

// watchedStatus is the status as the informer last saw it; nil when the informer has no
// answer (it does not run, or has not listed yet).
func (d *Daemon) watchedStatus() *decodedStatus {
	cm, ok := d.watched()
	switch {
	case !ok:
		return nil
	case cm == nil:
		return &decodedStatus{st: d.opts.Store.none()}
	}
	if s := d.watch.decoded.Load(); s != nil && s.version == cm.ResourceVersion {
		return s
	}
	st, err := d.opts.Store.decode(cm)
	s := &decodedStatus{version: cm.ResourceVersion, st: st, err: err}
	d.watch.decoded.Store(s)
	return s
}

// requested reports whether the status ConfigMap carries a request that no sync has answered:
// a request id that is not the last one handled.
func (d *Daemon) requested(cm *corev1.ConfigMap) bool {
	id := cm.Annotations[keys.SyncRequestedAt]
	return id != "" && id != d.LastStatus().LastHandledRequest
}

// pendingRequest is the request that a sync starting now answers: the ConfigMap as the
// informer last saw it, when it carries a request not yet handled, with its resourceVersion
// then (every request written at or before it was made before this sync starts); the zero
// Request when none is pending.
func (d *Daemon) pendingRequest() Request {
	cm, ok := d.watched()
	if !ok || cm == nil || !d.requested(cm) {
		return Request{}
	}
	return Request{ID: cm.Annotations[keys.SyncRequestedAt], Version: cm.ResourceVersion}
}

// takeRequest takes the queued wake-ups and returns the pending request (pendingRequest): one
// sync answers every request made before it starts.
func (d *Daemon) takeRequest() Request {
	for {
		select {
		case <-d.requests:
		default:
			return d.pendingRequest()
		}
	}
}

// RequestSync asks for a sync now through the status ConfigMap, so that whichever replica
// leads handles it; the status answers the request once a sync that started after it has
// ended (Status.Answers).
func (d *Daemon) RequestSync(ctx context.Context) (Request, error) {
	return d.opts.Store.Request(ctx, NewRequestID())
}

// Status is the daemon's status, from memory: the leader's own record once it has synced,
// else the status ConfigMap as the informer (WatchStatus) last saw it, so that reading it makes
// no request to the API server. A daemon whose informer does not run reads the ConfigMap.
// Either way it carries the outage of the API server that this replica sees, if any
// (Status.APIServer).
func (d *Daemon) Status(ctx context.Context) (Status, error) {
	if d.running.Load() && d.synced.Load() {
		return d.LastStatus(), nil
	}
	var st Status
	var err error
	if s := d.watchedStatus(); s != nil {
		st, err = s.st, s.err
	} else {
		st, _, err = d.opts.Store.Read(ctx)
	}
	if err == nil {
		st.APIServer = d.api.down.Load()
	}
	return st, err
}
