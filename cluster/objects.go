package cluster

import (
	"context"
	"sort"

	"github.com/gpuctl/gpuctl/render"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Objects are the list and get calls through which a Reader reads the cluster's objects:
// APIObjects asks the API server on every call (the CLI, with the user's credentials), and
// InformerObjects answers from the caches of shared informers (the daemon). Both answer the
// same for the same cluster, as far as the reader asks.
//
// A list returns the objects in namespace ("" for all) that sel selects (labels.Everything()
// for all); a get of an object that does not exist returns an error for which
// apierrors.IsNotFound is true. The objects returned may be shared with a cache: callers must
// not modify them.
type Objects interface {
	// Jobs, Deployments and StatefulSets list gpuctl's workloads, and Job, Deployment and
	// StatefulSet get one. The reader asks only for those labelled g8s.host/managed-by=gpuctl
	// (and checks the label of what it gets), so an implementation may see only those. Of
	// their pod templates it reads the containers' resources (and restart policies) and the
	// node selector alone, and an implementation may keep only those (InformerObjects).
	Jobs(ctx context.Context, namespace string, sel labels.Selector) ([]*batchv1.Job, error)
	Job(ctx context.Context, namespace, name string) (*batchv1.Job, error)
	Deployments(ctx context.Context, namespace string, sel labels.Selector) ([]*appsv1.Deployment, error)
	Deployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error)
	StatefulSets(ctx context.Context, namespace string, sel labels.Selector) ([]*appsv1.StatefulSet, error)
	StatefulSet(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error)
	// ReplicaSets lists ReplicaSets (a Deployment's, for its events).
	ReplicaSets(ctx context.Context, namespace string, sel labels.Selector) ([]*appsv1.ReplicaSet, error)
	// Pods lists pods that both selectors select; fsel (nil for all) may use only the fields
	// metadata.name, metadata.namespace, spec.nodeName and status.phase.
	Pods(ctx context.Context, namespace string, sel labels.Selector, fsel fields.Selector) ([]*corev1.Pod, error)
	// Nodes lists every node; Node gets one.
	Nodes(ctx context.Context) ([]*corev1.Node, error)
	Node(ctx context.Context, name string) (*corev1.Node, error)
	// PoolRegistry lists the ConfigMaps of the pool registry in the system namespace
	// (render.PoolRegistrySelector).
	PoolRegistry(ctx context.Context, namespace string) ([]*corev1.ConfigMap, error)
	// ResourceQuotas lists ResourceQuotas.
	ResourceQuotas(ctx context.Context, namespace string, sel labels.Selector) ([]*corev1.ResourceQuota, error)
	// Events lists the core/v1 events in namespace ("" for all).
	Events(ctx context.Context, namespace string) ([]*corev1.Event, error)
	// KueueWorkloads lists Kueue's Workloads in namespace ("" for all) and KueueClusterQueues
	// its ClusterQueues (kueue.x-k8s.io/v1beta2, unstructured); both fail with ErrNoKueue
	// when the cluster serves no Kueue API.
	KueueWorkloads(ctx context.Context, namespace string) ([]*unstructured.Unstructured, error)
	KueueClusterQueues(ctx context.Context) ([]*unstructured.Unstructured, error)
	// JobSets lists the JobSets (jobset.x-k8s.io/v1alpha2, unstructured) that sel selects:
	// none, and no error, when the cluster does not serve their API or the credentials may
	// not list them.
	JobSets(ctx context.Context, namespace string, sel labels.Selector) ([]*unstructured.Unstructured, error)
}

// ObjectSource is what the reader reads objects through: Objects, or APIObjects over Client.
func (r *Reader) ObjectSource() Objects {
	if r.Objects != nil {
		return r.Objects
	}
	return APIObjects{Client: r.Client, Dynamic: r.Dynamic}
}

// APIObjects are Objects read from the API server with one List or Get request per call.
type APIObjects struct {
	// Client sends the requests.
	Client kubernetes.Interface
	// Dynamic lists Kueue's objects; without it there are none (ErrNoKueue).
	Dynamic dynamic.Interface
}

var _ Objects = APIObjects{}

// selectorOptions are the ListOptions of a label selector (nil for all) and a field selector.
func selectorOptions(sel labels.Selector, fsel fields.Selector) metav1.ListOptions {
	var o metav1.ListOptions
	if sel != nil && !sel.Empty() {
		o.LabelSelector = sel.String()
	}
	if fsel != nil && !fsel.Empty() {
		o.FieldSelector = fsel.String()
	}
	return o
}

// pointers are the addresses of a list's items.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// sortByName orders objects by namespace and name, as the API server lists them.
func sortByName[T metav1.Object](objs []T) {
	sort.Slice(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
}

// Jobs lists Jobs.
func (a APIObjects) Jobs(ctx context.Context, namespace string, sel labels.Selector) ([]*batchv1.Job, error) {
	l, err := a.Client.BatchV1().Jobs(namespace).List(ctx, selectorOptions(sel, nil))
	if err != nil {
		return nil, err
	}
	return pointers(l.Items), nil
}

// Job gets a Job.
func (a APIObjects) Job(ctx context.Context, namespace, name string) (*batchv1.Job, error) {
	return a.Client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Deployments lists Deployments.
func (a APIObjects) Deployments(ctx context.Context, namespace string, sel labels.Selector) ([]*appsv1.Deployment, error) {
	l, err := a.Client.AppsV1().Deployments(namespace).List(ctx, selectorOptions(sel, nil))
	if err != nil {
		return nil, err
	}
	return pointers(l.Items), nil
}

// Deployment gets a Deployment.
func (a APIObjects) Deployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	return a.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
}

// StatefulSets lists StatefulSets.
func (a APIObjects) StatefulSets(ctx context.Context, namespace string, sel labels.Selector) ([]*appsv1.StatefulSet, error) {
	l, err := a.Client.AppsV1().StatefulSets(namespace).List(ctx, selectorOptions(sel, nil))
	if err != nil {
		return nil, err
	}
	return pointers(l.Items), nil
}

// StatefulSet gets a StatefulSet.
func (a APIObjects) StatefulSet(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error) {
	return a.Client.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// ReplicaSets lists ReplicaSets.
func (a APIObjects) ReplicaSets(ctx context.Context, namespace string, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	l, err := a.Client.AppsV1().ReplicaSets(namespace).List(ctx, selectorOptions(sel, nil))
	if err != nil {
		return nil, err
	}
	return pointers(l.Items), nil
}

// Pods lists pods; the API server applies the field selector.
func (a APIObjects) Pods(ctx context.Context, namespace string, sel labels.Selector, fsel fields.Selector) ([]*corev1.Pod, error) {
	l, err := a.Client.CoreV1().Pods(namespace).List(ctx, selectorOptions(sel, fsel))
	if err != nil {
		return nil, err
	}
	return pointers(l.Items), nil
}

// Nodes lists the nodes.
func (a APIObjects) Nodes(ctx context.Context) ([]*corev1.Node, error) {
	l, err := a.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return pointers(l.Items), nil
}

// Node gets a node.
func (a APIObjects) Node(ctx context.Context, name string) (*corev1.Node, error) {
	return a.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

// PoolRegistry lists the registry's ConfigMaps.
func (a APIObjects) PoolRegistry(ctx context.Context, namespace string) ([]*corev1.ConfigMap, error) {
	l, err := a.Client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: render.PoolRegistrySelector})
	if err != nil {
		return nil, err
	}
	return pointers(l.Items), nil
}

// ResourceQuotas lists ResourceQuotas.
func (a APIObjects) ResourceQuotas(ctx context.Context, namespace string, sel labels.Selector) ([]*corev1.ResourceQuota, error) {
	l, err := a.Client.CoreV1().ResourceQuotas(namespace).List(ctx, selectorOptions(sel, nil))
	if err != nil {
		return nil, err
	}
	return pointers(l.Items), nil
}

// Events lists events.
func (a APIObjects) Events(ctx context.Context, namespace string) ([]*corev1.Event, error) {
	l, err := a.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return pointers(l.Items), nil
}
