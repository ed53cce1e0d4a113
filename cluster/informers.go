package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// readWait bounds how long a read waits for the informers' first lists (an informer whose
// list is forbidden retries forever): past it, the read fails and says so.
const readWait = 30 * time.Second

// lastApplied is kubectl's client-side apply annotation: a copy of the object that the reader
// never reads, so the caches leave it out.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// InformerObjects are Objects answered from the caches of shared informers that watch the
// cluster: once their first lists have completed, a read sends no request. The daemon starts
// them once (StartInformers) for the Reader of its API and web page.
//
// They cache gpuctl's Jobs, Deployments and StatefulSets (labelled
// g8s.host/managed-by=gpuctl), every pod, ReplicaSet, node, ResourceQuota and event, the pool
// registry's ConfigMaps in one namespace, and, when the cluster serves Kueue's API (discovery,
// asked at the start and then every 5 minutes until it does), Kueue's Workloads and
// ClusterQueues, each without its managedFields (and a workload's pod template with only
// what the Reader reads of it: slimTemplate); they need list and watch on those. Until the first lists complete, a read waits for them (or for its
// context to end), for at most 30 s.
type InformerObjects struct {
	namespace string
	synced    chan struct{}
	err       error // why the first lists did not complete; set before synced is closed

	jobs         batchlisters.JobLister
	deployments  appslisters.DeploymentLister
	statefulSets appslisters.StatefulSetLister
	replicaSets  appslisters.ReplicaSetLister
	pods         corelisters.PodLister
	nodes        corelisters.NodeLister
	configMaps   corelisters.ConfigMapLister
	quotas       corelisters.ResourceQuotaLister
	events       corelisters.EventLister
	kueue        atomic.Pointer[kueueCache] // nil while the cluster serves no Kueue API
}

var _ Objects = (*InformerObjects)(nil)

// StartInformers starts the informers over client, with the pool registry in namespace ("" for
// keys.SystemNamespace), until ctx ends; those of Kueue's objects over dyn (none when nil). They
// list in the background; WaitForSync waits for their first lists.
func StartInformers(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, namespace string) *InformerObjects {
	return StartInformersAfter(ctx, nil, client, dyn, namespace)
}

// StartInformersAfter is StartInformers whose informers start listing once after is closed
// (at once when it is nil): a process that has more urgent work at its start (the
// reconciler's first sync, while the API it serves is not ready) lets it go first. Reads wait
// for the first lists as ever (WaitForSync).
func StartInformersAfter(ctx context.Context, after <-chan struct{}, client kubernetes.Interface, dyn dynamic.Interface, namespace string) *InformerObjects {
	if namespace == "" {
		namespace = keys.SystemNamespace
	}
	trim := informers.WithTransform(trimObject)
	all := informers.NewSharedInformerFactoryWithOptions(client, 0, trim)
	managed := informers.NewSharedInformerFactoryWithOptions(client, 0, trim,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = keys.ManagedBy + "=" + keys.ManagedByValue }))
	registry := informers.NewSharedInformerFactoryWithOptions(client, 0, trim, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = render.PoolRegistrySelector }))
	o := &InformerObjects{
		namespace:    namespace,
		synced:       make(chan struct{}),
		jobs:         managed.Batch().V1().Jobs().Lister(),
		deployments:  managed.Apps().V1().Deployments().Lister(),
		statefulSets: managed.Apps().V1().StatefulSets().Lister(),
		replicaSets:  all.Apps().V1().ReplicaSets().Lister(),
		pods:         all.Core().V1().Pods().Lister(),
		nodes:        all.Core().V1().Nodes().Lister(),
		quotas:       all.Core().V1().ResourceQuotas().Lister(),
		events:       all.Core().V1().Events().Lister(),
		configMaps:   registry.Core().V1().ConfigMaps().Lister(),
	}
	factories := []informers.SharedInformerFactory{all, managed, registry}
	go func() {
		defer close(o.synced)
		if after != nil {
			select {
			case <-after:
			case <-ctx.Done():
				o.err = fmt.Errorf("the informers did not start: %w", context.Cause(ctx))
				return
			}
		}
		for _, f := range factories {
			f.Start(ctx.Done())
		}
		for _, f := range factories {
			for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
				if !ok {
					o.err = fmt.Errorf("informer of %v: stopped before its first list completed", typ)
					return
				}
			}
		}
		if dyn != nil {
			o.err = o.firstKueue(ctx, client.Discovery(), dyn)
		}
	}()
	return o
}

// trimObject leaves out of a cached object what no reader reads: its managedFields and
// kubectl's last-applied annotation, and of a workload's pod template all but what the model
// reads (slimTemplate). Tombstones pass unchanged.
func trimObject(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a[lastApplied] != "" {
			delete(a, lastApplied)
		}
	}
	switch o := obj.(type) {
	case *batchv1.Job:
		slimTemplate(&o.Spec.Template)
	case *appsv1.Deployment:
		slimTemplate(&o.Spec.Template)
	case *appsv1.StatefulSet:
		slimTemplate(&o.Spec.Template)
	}
	return obj, nil
}

// slimTemplate keeps of a cached workload's pod template what the model reads of it (see
// workload): each container's name and resources (an init container's restart policy too: a
// sidecar's requests add up), and the node selector (the GPU type). Images, commands,
// environment, volumes and the API server's defaults are most of a Job's heap in the cache
// (10,000 Jobs: issue #18, bar 6).
func slimTemplate(t *corev1.PodTemplateSpec) {
	spec := corev1.PodSpec{NodeSelector: t.Spec.NodeSelector}
	for _, c := range t.Spec.Containers {
		spec.Containers = append(spec.Containers, corev1.Container{Name: c.Name, Resources: c.Resources})
	}
	for _, c := range t.Spec.InitContainers {
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy})
	}
	*t = corev1.PodTemplateSpec{Spec: spec}
}

// WaitForSync waits until the informers' first lists have completed: it returns nil once
// they have, or an error when they stopped before or ctx ended.
func (o *InformerObjects) WaitForSync(ctx context.Context) error {
	select {
	case <-o.synced:
		return o.err
	case <-ctx.Done():
		return fmt.Errorf("waiting for the informers' first lists: %w", context.Cause(ctx))
	}
}

// ready waits, for at most readWait, until the first lists have completed.
func (o *InformerObjects) ready(ctx context.Context) error {
	select {
	case <-o.synced:
		return o.err
	default:
	}
	ctx, cancel := context.WithTimeoutCause(ctx, readWait,
		fmt.Errorf("the informers' first lists did not complete within %s (can the daemon list and watch them?)", readWait))
	defer cancel()
	return o.WaitForSync(ctx)
}

// everything is sel, or every label set when sel is nil.
func everything(sel labels.Selector) labels.Selector {
	if sel == nil {
		return labels.Everything()
	}
	return sel
}

// listIn lists a lister's objects in namespace ("" for all), after the first lists.
func listIn[T any](ctx context.Context, o *InformerObjects, namespace string, sel labels.Selector,
	all func(labels.Selector) ([]T, error), in func(ns string, sel labels.Selector) ([]T, error)) ([]T, error) {
	if err := o.ready(ctx); err != nil {
		return nil, err
	}
	if namespace == "" {
		return all(everything(sel))
	}
	return in(namespace, everything(sel))
}

// Jobs lists the cached Jobs.
func (o *InformerObjects) Jobs(ctx context.Context, namespace string, sel labels.Selector) ([]*batchv1.Job, error) {
	return listIn(ctx, o, namespace, sel, o.jobs.List, func(ns string, s labels.Selector) ([]*batchv1.Job, error) {
		return o.jobs.Jobs(ns).List(s)
	})
}

// Job gets a cached Job.
func (o *InformerObjects) Job(ctx context.Context, namespace, name string) (*batchv1.Job, error) {
	if err := o.ready(ctx); err != nil {
		return nil, err
	}
	return o.jobs.Jobs(namespace).Get(name)
}

// Deployments lists the cached Deployments.
func (o *InformerObjects) Deployments(ctx context.Context, namespace string, sel labels.Selector) ([]*appsv1.Deployment, error) {
	return listIn(ctx, o, namespace, sel, o.deployments.List, func(ns string, s labels.Selector) ([]*appsv1.Deployment, error) {
		return o.deployments.Deployments(ns).List(s)
	})
}

// Deployment gets a cached Deployment.
func (o *InformerObjects) Deployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	if err := o.ready(ctx); err != nil {
		return nil, err
	}
	return o.deployments.Deployments(namespace).Get(name)
}

// StatefulSets lists the cached StatefulSets.
func (o *InformerObjects) StatefulSets(ctx context.Context, namespace string, sel labels.Selector) ([]*appsv1.StatefulSet, error) {
	return listIn(ctx, o, namespace, sel, o.statefulSets.List, func(ns string, s labels.Selector) ([]*appsv1.StatefulSet, error) {
		return o.statefulSets.StatefulSets(ns).List(s)
	})
}

// StatefulSet gets a cached StatefulSet.
func (o *InformerObjects) StatefulSet(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error) {
	if err := o.ready(ctx); err != nil {
		return nil, err
	}
	return o.statefulSets.StatefulSets(namespace).Get(name)
}

// ReplicaSets lists the cached ReplicaSets.
func (o *InformerObjects) ReplicaSets(ctx context.Context, namespace string, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	return listIn(ctx, o, namespace, sel, o.replicaSets.List, func(ns string, s labels.Selector) ([]*appsv1.ReplicaSet, error) {
		return o.replicaSets.ReplicaSets(ns).List(s)
	})
}

// Pods lists the cached pods, applying the field selector as the API server would.
func (o *InformerObjects) Pods(ctx context.Context, namespace string, sel labels.Selector, fsel fields.Selector) ([]*corev1.Pod, error) {
	pods, err := listIn(ctx, o, namespace, sel, o.pods.List, func(ns string, s labels.Selector) ([]*corev1.Pod, error) {
		return o.pods.Pods(ns).List(s)
	})
	if err != nil || fsel == nil || fsel.Empty() {
		return pods, err
	}
	out := pods[:0]
	for _, p := range pods {
		if fsel.Matches(podFields(p)) {
			out = append(out, p)
		}
	}
	return out, nil
}

// podFields are the fields of a pod that Objects.Pods may select on.
func podFields(p *corev1.Pod) fields.Set {
	return fields.Set{"metadata.name": p.Name, "metadata.namespace": p.Namespace,
		"spec.nodeName": p.Spec.NodeName, "status.phase": string(p.Status.Phase)}
}

// Nodes lists the cached nodes.
func (o *InformerObjects) Nodes(ctx context.Context) ([]*corev1.Node, error) {
	if err := o.ready(ctx); err != nil {
		return nil, err
	}
	return o.nodes.List(labels.Everything())
}

// Node gets a cached node.
func (o *InformerObjects) Node(ctx context.Context, name string) (*corev1.Node, error) {
	if err := o.ready(ctx); err != nil {
		return nil, err
	}
	return o.nodes.Get(name)
}

// errOtherRegistry is a read of a pool registry in a namespace that the informers do not watch.
var errOtherRegistry = errors.New("the informers watch the pool registry of another namespace")

// PoolRegistry lists the cached registry ConfigMaps; namespace must be the one given to
// StartInformers.
func (o *InformerObjects) PoolRegistry(ctx context.Context, namespace string) ([]*corev1.ConfigMap, error) {
	if namespace != o.namespace {
		return nil, fmt.Errorf("pool registry in %s: %w (%s)", namespace, errOtherRegistry, o.namespace)
	}
	if err := o.ready(ctx); err != nil {
		return nil, err
	}
	return o.configMaps.ConfigMaps(namespace).List(labels.Everything())
}

// ResourceQuotas lists the cached ResourceQuotas.
func (o *InformerObjects) ResourceQuotas(ctx context.Context, namespace string, sel labels.Selector) ([]*corev1.ResourceQuota, error) {
	return listIn(ctx, o, namespace, sel, o.quotas.List, func(ns string, s labels.Selector) ([]*corev1.ResourceQuota, error) {
		return o.quotas.ResourceQuotas(ns).List(s)
	})
}

// Events lists the cached events.
func (o *InformerObjects) Events(ctx context.Context, namespace string) ([]*corev1.Event, error) {
	return listIn(ctx, o, namespace, nil, o.events.List, func(ns string, s labels.Selector) ([]*corev1.Event, error) {
		return o.events.Events(ns).List(s)
	})
}
