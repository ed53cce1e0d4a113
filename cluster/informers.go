package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// managedSelector selects the workloads that gpuctl renders (labelled g8s.host/managed-by=gpuctl).
const managedSelector = keys.ManagedBy + "=" + keys.ManagedByValue

// lastApplied is kubectl's client-side apply annotation: a copy of the object that the reader
// never reads, so the caches leave it out.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// InformerObjects are Objects answered from the caches of shared informers that watch the
// cluster: once their first lists have completed, a read sends no request. The daemon makes
// them once (LazyInformers) for the Reader of its API and web page.
//
// They cache gpuctl's Jobs, Deployments and StatefulSets (labelled
// g8s.host/managed-by=gpuctl), every pod, ReplicaSet, node, ResourceQuota and event, the pool
// registry's ConfigMaps in one namespace, and, when the cluster serves Kueue's API (discovery,
// asked at the start and then every 5 minutes until it does), Kueue's Workloads and
// ClusterQueues, and when it serves JobSets (asked the same way), gpuctl's JobSets (multiNode:
// jobset), each without its managedFields (and a workload's pod template with only what the
// Reader reads of it: slimTemplate); they need list and watch on those. Until the first lists
// complete, a read waits for them (or for its context to end), for at most 30 s.
//
// Lazy ones (LazyInformers) start with the first read and stop after a while without one: a
// copy of every pod, event and workload of the cluster is most of the heap of a daemon whose
// API nobody reads (issue #18, bar 6), and a read after the stop starts them again.
type InformerObjects struct {
	namespace string
	client    kubernetes.Interface
	dyn       dynamic.Interface
	ctx       context.Context // until which informers may run
	after     <-chan struct{} // they list once it is closed (nil: at once)
	idle      time.Duration   // 0: never stopped

	mu       sync.Mutex
	cur      *informerSet // nil while none runs
	lastRead atomic.Int64 // unix nanoseconds of the last read
	starts   atomic.Int64 // informer sets started
}

// informerSet is one start of the informers, until its context is cancelled.
type informerSet struct {
	synced chan struct{}
	err    error // why the first lists did not complete; set before synced is closed
	cancel context.CancelFunc

	jobs         batchlisters.JobLister
	deployments  appslisters.DeploymentLister
	statefulSets appslisters.StatefulSetLister
	replicaSets  appslisters.ReplicaSetLister
	pods         corelisters.PodLister
	nodes        corelisters.NodeLister
	configMaps   corelisters.ConfigMapLister
	quotas       corelisters.ResourceQuotaLister
	events       corelisters.EventLister
	kueue        atomic.Pointer[kueueCache]  // nil while the cluster serves no Kueue API
	jobSets      atomic.Pointer[jobSetCache] // nil while the cluster serves no JobSet API
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
	o := LazyInformers(ctx, after, client, dyn, namespace, 0)
	o.running()
	return o
}

// LazyInformers are InformerObjects whose informers start with the first read (listing once
// after is closed, as StartInformersAfter's) and stop once idle passes without a read (0:
// never); the next read starts them again, and waits for their first lists.
func LazyInformers(ctx context.Context, after <-chan struct{}, client kubernetes.Interface, dyn dynamic.Interface, namespace string, idle time.Duration) *InformerObjects {
	if namespace == "" {
		namespace = keys.SystemNamespace
	}
	return &InformerObjects{namespace: namespace, client: client, dyn: dyn, ctx: ctx, after: after, idle: idle}
}

// running returns the running informers, started when none runs, and counts a read.
func (o *InformerObjects) running() *informerSet {
	o.lastRead.Store(time.Now().UnixNano())
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cur == nil {
		o.cur = o.start()
	}
	return o.cur
}

// start starts a set of informers; with an idle bound, it stops them once no read came for
// that long.
func (o *InformerObjects) start() *informerSet {
	o.starts.Add(1)
	ctx, cancel := context.WithCancel(o.ctx)
	trim := informers.WithTransform(trimObject)
	all := informers.NewSharedInformerFactoryWithOptions(o.client, 0, trim)
	managed := informers.NewSharedInformerFactoryWithOptions(o.client, 0, trim,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = managedSelector }))
	registry := informers.NewSharedInformerFactoryWithOptions(o.client, 0, trim, informers.WithNamespace(o.namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = render.PoolRegistrySelector }))
	s := &informerSet{
		synced:       make(chan struct{}),
		cancel:       cancel,
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
		defer close(s.synced)
		if o.after != nil {
			select {
			case <-o.after:
			case <-ctx.Done():
				s.err = fmt.Errorf("the informers did not start: %w", context.Cause(ctx))
				return
			}
		}
		for _, f := range factories {
			f.Start(ctx.Done())
		}
		for _, f := range factories {
			for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
				if !ok {
					s.err = fmt.Errorf("informer of %v: stopped before its first list completed", typ)
					return
				}
			}
		}
		if o.dyn != nil {
			d := o.client.Discovery()
			s.err = errors.Join(s.firstKueue(ctx, d, o.dyn), whenServed(ctx, func() bool { return servesJobSets(d) }, func() error {
				c, err := startJobSets(ctx, o.dyn, "", managedSelector, nil)
				s.jobSets.Store(c)
				return err
			}))
		}
	}()
	if o.idle > 0 {
		go o.stopWhenIdle(ctx, s)
	}
	return s
}

// stopWhenIdle stops s once no read came for o.idle.
func (o *InformerObjects) stopWhenIdle(ctx context.Context, s *informerSet) {
	for {
		wait := time.Until(time.Unix(0, o.lastRead.Load()).Add(o.idle))
		if wait <= 0 {
			o.mu.Lock()
			if time.Since(time.Unix(0, o.lastRead.Load())) >= o.idle { // no read came meanwhile
				if o.cur == s {
					o.cur = nil
				}
				o.mu.Unlock()
				s.cancel()
				return
			}
			o.mu.Unlock()
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// trimObject leaves out of a cached object what no reader reads: its managedFields and
// kubectl's last-applied annotation, and of a workload's pod template all but what the model
// reads (slimTemplate), and a Job's failure and success policies. Tombstones pass unchanged.
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
		// The model reads a Job's limits (backoffLimit, backoffLimitPerIndex), never its
		// policies: a training Job's podFailurePolicy is ~250 bytes of heap each.
		o.Spec.PodFailurePolicy, o.Spec.SuccessPolicy = nil, nil
	case *appsv1.Deployment:
		slimTemplate(&o.Spec.Template)
	case *appsv1.StatefulSet:
		slimTemplate(&o.Spec.Template)
	}
	return obj, nil
}

// slimTemplate keeps of a cached workload's pod template what the model reads of it (see
// workload): each container's name and resources (an init container's restart policy too: a
// sidecar's requests add up), the node selector (the GPU type) and the PriorityClass (what a
// preempted job was preempted for). Images, commands,
// environment, volumes and the API server's defaults are most of a Job's heap in the cache
// (10,000 Jobs: issue #18, bar 6).
func slimTemplate(t *corev1.PodTemplateSpec) {
	spec := corev1.PodSpec{NodeSelector: t.Spec.NodeSelector, PriorityClassName: t.Spec.PriorityClassName}
	for _, c := range t.Spec.Containers {
		spec.Containers = append(spec.Containers, corev1.Container{Name: c.Name, Resources: c.Resources})
	}
	for _, c := range t.Spec.InitContainers {
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy})
	}
	*t = corev1.PodTemplateSpec{Spec: spec}
}

// WaitForSync waits until the informers' first lists have completed (starting them when none
// run): it returns nil once they have, or an error when they stopped before or ctx ended.
func (o *InformerObjects) WaitForSync(ctx context.Context) error {
	_, err := o.wait(ctx, o.running())
	return err
}

func (o *InformerObjects) wait(ctx context.Context, s *informerSet) (*informerSet, error) {
	select {
	case <-s.synced:
		return s, s.err
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the informers' first lists: %w", context.Cause(ctx))
	}
}

// ready returns the running informers (started when none run) once their first lists have
// completed, waiting for at most readWait.
func (o *InformerObjects) ready(ctx context.Context) (*informerSet, error) {
	s := o.running()
	select {
	case <-s.synced:
		return s, s.err
	default:
	}
	ctx, cancel := context.WithTimeoutCause(ctx, readWait,
		fmt.Errorf("the informers' first lists did not complete within %s (can the daemon list and watch them?)", readWait))
	defer cancel()
	return o.wait(ctx, s)
}

// everything is sel, or every label set when sel is nil.
func everything(sel labels.Selector) labels.Selector {
	if sel == nil {
		return labels.Everything()
	}
	return sel
}

// listIn lists a lister's objects in namespace ("" for all).
func listIn[T any](namespace string, sel labels.Selector, all func(labels.Selector) ([]T, error), in func(ns string, sel labels.Selector) ([]T, error)) ([]T, error) {
	if namespace == "" {
		return all(everything(sel))
	}
	return in(namespace, everything(sel))
}

// Jobs lists the cached Jobs.
func (o *InformerObjects) Jobs(ctx context.Context, namespace string, sel labels.Selector) ([]*batchv1.Job, error) {
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	return listIn(namespace, sel, s.jobs.List, func(ns string, sel labels.Selector) ([]*batchv1.Job, error) { return s.jobs.Jobs(ns).List(sel) })
}

// Job gets a cached Job.
func (o *InformerObjects) Job(ctx context.Context, namespace, name string) (*batchv1.Job, error) {
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	return s.jobs.Jobs(namespace).Get(name)
}

// Deployments lists the cached Deployments.
func (o *InformerObjects) Deployments(ctx context.Context, namespace string, sel labels.Selector) ([]*appsv1.Deployment, error) {
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	return listIn(namespace, sel, s.deployments.List, func(ns string, sel labels.Selector) ([]*appsv1.Deployment, error) {
		return s.deployments.Deployments(ns).List(sel)
	})
}

// Deployment gets a cached Deployment.
func (o *InformerObjects) Deployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	return s.deployments.Deployments(namespace).Get(name)
}

// StatefulSets lists the cached StatefulSets.
func (o *InformerObjects) StatefulSets(ctx context.Context, namespace string, sel labels.Selector) ([]*appsv1.StatefulSet, error) {
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	return listIn(namespace, sel, s.statefulSets.List, func(ns string, sel labels.Selector) ([]*appsv1.StatefulSet, error) {
		return s.statefulSets.StatefulSets(ns).List(sel)
	})
}

// StatefulSet gets a cached StatefulSet.
func (o *InformerObjects) StatefulSet(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error) {
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	return s.statefulSets.StatefulSets(namespace).Get(name)
}

// ReplicaSets lists the cached ReplicaSets.
func (o *InformerObjects) ReplicaSets(ctx context.Context, namespace string, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	return listIn(namespace, sel, s.replicaSets.List, func(ns string, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
		return s.replicaSets.ReplicaSets(ns).List(sel)
	})
}

// Pods lists the cached pods, applying the field selector as the API server would.
func (o *InformerObjects) Pods(ctx context.Context, namespace string, sel labels.Selector, fsel fields.Selector) ([]*corev1.Pod, error) {
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	pods, err := listIn(namespace, sel, s.pods.List, func(ns string, sel labels.Selector) ([]*corev1.Pod, error) { return s.pods.Pods(ns).List(sel) })
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
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	return s.nodes.List(labels.Everything())
}

// Node gets a cached node.
func (o *InformerObjects) Node(ctx context.Context, name string) (*corev1.Node, error) {
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	return s.nodes.Get(name)
}

// errOtherRegistry is a read of a pool registry in a namespace that the informers do not watch.
var errOtherRegistry = errors.New("the informers watch the pool registry of another namespace")

// PoolRegistry lists the cached registry ConfigMaps; namespace must be the one given to
// StartInformers.
func (o *InformerObjects) PoolRegistry(ctx context.Context, namespace string) ([]*corev1.ConfigMap, error) {
	if namespace != o.namespace {
		return nil, fmt.Errorf("pool registry in %s: %w (%s)", namespace, errOtherRegistry, o.namespace)
	}
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	return s.configMaps.ConfigMaps(namespace).List(labels.Everything())
}

// ResourceQuotas lists the cached ResourceQuotas.
func (o *InformerObjects) ResourceQuotas(ctx context.Context, namespace string, sel labels.Selector) ([]*corev1.ResourceQuota, error) {
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	return listIn(namespace, sel, s.quotas.List, func(ns string, sel labels.Selector) ([]*corev1.ResourceQuota, error) {
		return s.quotas.ResourceQuotas(ns).List(sel)
	})
}

// Events lists the cached events.
func (o *InformerObjects) Events(ctx context.Context, namespace string) ([]*corev1.Event, error) {
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	return listIn(namespace, nil, s.events.List, func(ns string, sel labels.Selector) ([]*corev1.Event, error) { return s.events.Events(ns).List(sel) })
}
