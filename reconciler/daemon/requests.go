package daemon

import (
	"context"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func diskFS() filesys.FileSystem { return filesys.MakeFsOnDisk() }

// watchRequests watches the status ConfigMap and queues each new sync request annotation.
func (d *Daemon) watchRequests(ctx context.Context) (stop func(), err error) {
	f := informers.NewSharedInformerFactoryWithOptions(d.opts.Store.Kube, 0,
		informers.WithNamespace(d.opts.Store.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + d.opts.Store.Name }))
	inf := f.Core().V1().ConfigMaps().Informer()
	handle := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		id := cm.Annotations[keys.SyncRequestedAt]
		if id != "" && id != d.LastStatus().LastHandledRequest {
			select {
			case d.requests <- id:
			default: // queue full: a sync is coming anyway
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
	f.Start(wctx.Done())
	syncCtx, syncCancel := context.WithTimeout(wctx, 30*time.Second)
	defer syncCancel()
	cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced)
	return func() { cancel(); f.Shutdown() }, nil
}

// RequestSync asks for a sync now through the status ConfigMap, so that whichever replica
// leads handles it; it returns the request id to wait for in Status.LastHandledRequest.
func (d *Daemon) RequestSync(ctx context.Context) (string, error) {
	id := time.Now().UTC().Format(time.RFC3339Nano)
	return id, d.opts.Store.Request(ctx, id)
}

// Status reads the recorded status (from any replica).
func (d *Daemon) Status(ctx context.Context) (Status, error) {
	st, _, err := d.opts.Store.Read(ctx)
	return st, err
}
