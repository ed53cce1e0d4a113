package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"golang.org/x/sync/errgroup"
)

// ErrNoKueue is the answer of Objects.KueueWorkloads and KueueClusterQueues in a cluster that
// serves no Kueue API (kueue.x-k8s.io/v1beta2), or without a dynamic client to read it: the
// jobs then have no queue state.
var ErrNoKueue = errors.New("the cluster serves no Kueue API (" + keys.KueueGroup + "/" + keys.KueueVersion + ")")

// The Kueue resources that the read model reads, as unstructured objects.
var (
	kueueWorkloads     = schema.GroupVersionResource{Group: keys.KueueGroup, Version: keys.KueueVersion, Resource: "workloads"}
	kueueClusterQueues = schema.GroupVersionResource{Group: keys.KueueGroup, Version: keys.KueueVersion, Resource: "clusterqueues"}
)

// kueueRecheck is how long a Reader, and InformerObjects, take a cluster without Kueue's API to
// stay without it before they ask again (Kueue may be installed meanwhile).
const kueueRecheck = 5 * time.Minute

// unstructuredItems are the addresses of a list's items.
func unstructuredItems(l *unstructured.UnstructuredList, err error) ([]*unstructured.Unstructured, error) {
	if apierrors.IsNotFound(err) {
		return nil, ErrNoKueue // the API server does not know the resource
	}
	if err != nil {
		return nil, err
	}
	return pointers(l.Items), nil
}

// KueueWorkloads lists Kueue's Workloads with Dynamic; ErrNoKueue without it or without the API.
func (a APIObjects) KueueWorkloads(ctx context.Context, namespace string) ([]*unstructured.Unstructured, error) {
	if a.Dynamic == nil {
		return nil, ErrNoKueue
	}
	return unstructuredItems(a.Dynamic.Resource(kueueWorkloads).Namespace(namespace).List(ctx, metav1.ListOptions{}))
}

// KueueClusterQueues lists Kueue's ClusterQueues with Dynamic; ErrNoKueue without it or
// without the API.
func (a APIObjects) KueueClusterQueues(ctx context.Context) ([]*unstructured.Unstructured, error) {
	if a.Dynamic == nil {
		return nil, ErrNoKueue
	}
	return unstructuredItems(a.Dynamic.Resource(kueueClusterQueues).List(ctx, metav1.ListOptions{}))
}

// kueueCache holds the informers of Kueue's Workloads and ClusterQueues.
type kueueCache struct {
	workloads, clusterQueues cache.SharedIndexInformer
}

func (k *kueueCache) synced() bool {
	return k.workloads.HasSynced() && k.clusterQueues.HasSynced()
}

// servesKueue asks the API server's discovery whether it serves Kueue's Workloads and
// ClusterQueues.
func servesKueue(d discovery.DiscoveryInterface) bool {
	return serves(d, keys.KueueGroup+"/"+keys.KueueVersion, kueueWorkloads.Resource, kueueClusterQueues.Resource)
}

// serves asks the API server's discovery whether it serves each of the resources of a group
// version (a CRD's API, which a cluster may lack).
func serves(d discovery.DiscoveryInterface, groupVersion string, resources ...string) bool {
	list, err := d.ServerResourcesForGroupVersion(groupVersion)
	if err != nil || list == nil {
		return false
	}
	for _, name := range resources {
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == name }) {
			return false
		}
	}
	return true
}

// kueueSyncWait bounds how long the first lists of Kueue's objects are waited for (forbidden
// lists retry forever): past it, the jobs have no queue state until they complete.
const kueueSyncWait = 10 * time.Second

// startKueue starts the informers of Kueue's Workloads in namespace ("" for all) and of its
// ClusterQueues over dyn until ctx ends, calling handler (when not nil) on each change, and
// waits for their first lists for at most kueueSyncWait.
func startKueue(ctx context.Context, dyn dynamic.Interface, namespace string, handler cache.ResourceEventHandler) (*kueueCache, error) {
	wf := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace, nil)
	cf := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	k := &kueueCache{workloads: wf.ForResource(kueueWorkloads).Informer(),
		clusterQueues: cf.ForResource(kueueClusterQueues).Informer()}
	for _, inf := range []cache.SharedIndexInformer{k.workloads, k.clusterQueues} {
		if err := inf.SetTransform(trimObject); err != nil {
			return nil, err
		}
		if handler != nil {
			if _, err := inf.AddEventHandler(handler); err != nil {
				return nil, err
			}
		}
	}
	wf.Start(ctx.Done())
	cf.Start(ctx.Done())
	wait, cancel := context.WithTimeout(ctx, kueueSyncWait)
	defer cancel()
	cache.WaitForCacheSync(wait.Done(), k.synced)
	return k, nil
}

// queues is Kueue's view from the cache, or nil until its first lists have completed.
func (k *kueueCache) queues() *queues {
	if k == nil || !k.synced() {
		return nil
	}
	wls, _ := cachedUnstructured(k.workloads, "")
	cqs, _ := cachedUnstructured(k.clusterQueues, "")
	return newQueues(wls, cqs)
}

// firstKueue starts the informers of Kueue's objects when discovery shows its API (and waits
// a while for their first lists); else it asks again every kueueRecheck in the background,
// and starts them once the API is there.
func (s *informerSet) firstKueue(ctx context.Context, d discovery.DiscoveryInterface, dyn dynamic.Interface) error {
	return whenServed(ctx, func() bool { return servesKueue(d) }, func() error {
		k, err := startKueue(ctx, dyn, "", nil)
		s.kueue.Store(k)
		return err
	})
}

// whenServed calls start when served says that the cluster serves an optional API (a CRD's),
// returning its error; else it asks served again every kueueRecheck in the background until
// ctx ends, and calls start (its error dropped: the next read finds no cache) once it does.
func whenServed(ctx context.Context, served func() bool, start func() error) error {
	if served() {
		return start()
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(kueueRecheck):
			}
			if served() {
				_ = start()
				return
			}
		}
	}()
	return nil
}

// kueueCached is the cache of Kueue's objects once synced, else ErrNoKueue.
func (o *InformerObjects) kueueCached(ctx context.Context) (*kueueCache, error) {
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	k := s.kueue.Load()
	if k == nil || !k.synced() {
		return nil, ErrNoKueue
	}
	return k, nil
}

// cachedUnstructured are the objects of an informer's store in namespace ("" for all),
// sorted by namespace and name.
func cachedUnstructured(inf cache.SharedIndexInformer, namespace string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	err := cache.ListAllByNamespace(inf.GetIndexer(), namespace, labels.Everything(), func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	})
	sortByName(out)
	return out, err
}

// KueueWorkloads lists the cached Workloads; ErrNoKueue while the cluster serves no Kueue API.
func (o *InformerObjects) KueueWorkloads(ctx context.Context, namespace string) ([]*unstructured.Unstructured, error) {
	k, err := o.kueueCached(ctx)
	if err != nil {
		return nil, err
	}
	return cachedUnstructured(k.workloads, namespace)
}

// KueueClusterQueues lists the cached ClusterQueues; ErrNoKueue while the cluster serves no
// Kueue API.
func (o *InformerObjects) KueueClusterQueues(ctx context.Context) ([]*unstructured.Unstructured, error) {
	k, err := o.kueueCached(ctx)
	if err != nil {
		return nil, err
	}
	return cachedUnstructured(k.clusterQueues, "")
}

// kueueAbsent reports whether the cluster was found without Kueue's API less than
// kueueRecheck ago.
func (r *Reader) kueueAbsent() bool {
	until := r.noKueueUntil.Load()
	return until != 0 && time.Now().UnixNano() < until
}

// markNoKueue remembers that the cluster serves no Kueue API, for kueueRecheck.
func (r *Reader) markNoKueue() { r.noKueueUntil.Store(time.Now().Add(kueueRecheck).UnixNano()) }

// loadQueues reads Kueue's Workloads in namespace ("" for all) and its ClusterQueues: nil
// (and no error) when the cluster serves no Kueue API or the credentials may not list
// Workloads. Without ClusterQueues (not readable) the jobs have their state and position but
// not their team's quota. A cluster found without Kueue is not asked again for kueueRecheck.
// When a Workload of namespace was preempted by one of another namespace, the Workloads of
// all namespaces are read to name it (left unnamed when the credentials may not).
func (r *Reader) loadQueues(ctx context.Context, namespace string) (*queues, error) {
	if r.kueueAbsent() {
		return nil, nil
	}
	objs := r.ObjectSource()
	var wls, cqs []*unstructured.Unstructured
	var cqErr error
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		wls, err = objs.KueueWorkloads(gctx, namespace)
		return err
	})
	g.Go(func() error {
		cqs, cqErr = objs.KueueClusterQueues(gctx)
		return nil
	})
	err := g.Wait()
	switch {
	case errors.Is(err, ErrNoKueue):
		r.markNoKueue()
		return nil, nil
	case apierrors.IsForbidden(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("list workloads.%s: %w", keys.KueueGroup, err)
	case cqErr != nil && !apierrors.IsForbidden(cqErr) && !errors.Is(cqErr, ErrNoKueue):
		return nil, fmt.Errorf("list clusterqueues.%s: %w", keys.KueueGroup, cqErr)
	}
	q := newQueues(wls, cqs)
	if namespace != "" && q.missesPreemptor() {
		if all, err := r.loadQueues(ctx, ""); err == nil && all != nil {
			return all, nil
		}
	}
	return q, nil
}
