package daemon

import (
	"context"
	"fmt"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/notify"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// The alerts of JobSets and of Kueue's ClusterQueues (docs/notifications.md), through
// Options.Dynamic and only when the cluster serves their kinds: a gpuctl JobSet (multiNode:
// jobset) that gains Failed=True sends JobFailed as a Job does (jobwatch.go), and a team's
// ClusterQueue (queueing: kueue) whose reserved GPUs reach its nominal quota sends
// QuotaReached, QuotaFreed when they fall below it. Their informers keep what the alerts read
// only (trimJobSet, trimClusterQueue).

// The kinds watched through the dynamic client.
var (
	jobSetsGVR       = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	clusterQueuesGVR = schema.GroupVersionResource{Group: keys.KueueGroup, Version: keys.KueueVersion, Resource: "clusterqueues"}
	workloadsGVR     = schema.GroupVersionResource{Group: keys.KueueGroup, Version: keys.KueueVersion, Resource: "workloads"}
)

// jobSetNameLabel is the label by which JobSet names the JobSet of each of its pods.
const jobSetNameLabel = "jobset.sigs.k8s.io/jobset-name"

// kueueInformers are the informers of gpuctl's JobSets and the teams' ClusterQueues, those of
// the kinds the daemon can read (readable); none without Options.Dynamic.
func (d *Daemon) kueueInformers(ctx context.Context, w *jobWatch) []cache.SharedIndexInformer {
	if d.opts.Dynamic == nil {
		return nil
	}
	managed := labels.SelectorFromSet(labels.Set{keys.ManagedBy: keys.ManagedByValue}).String()
	watches := []struct {
		gvr      schema.GroupVersionResource
		selector string
		trim     cache.TransformFunc
		h        cache.ResourceEventHandler
	}{
		{jobSetsGVR, managed, trimJobSetObject, cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: w.jobAdded, UpdateFunc: w.jobUpdated, DeleteFunc: w.jobDeleted}},
		{clusterQueuesGVR, keys.QuotaSelector.String() + "," + managed, trimClusterQueueObject, cache.ResourceEventHandlerFuncs{
			AddFunc: w.queueSeen, UpdateFunc: func(_, obj any) { w.queueSeen(obj) }, DeleteFunc: w.queueDeleted}},
	}
	var out []cache.SharedIndexInformer
	for _, x := range watches {
		if !d.readable(ctx, x.gvr) {
			continue
		}
		inf := dynamicinformer.NewFilteredDynamicInformer(d.opts.Dynamic, x.gvr, metav1.NamespaceAll, 0, cache.Indexers{},
			func(o *metav1.ListOptions) { o.LabelSelector = x.selector }).Informer()
		if err := inf.SetTransform(x.trim); err != nil {
			d.opts.Log.Error("job and quota alerts: cannot watch", "resource", x.gvr.String(), "err", err)
			continue
		}
		if _, err := inf.AddEventHandler(x.h); err != nil {
			d.opts.Log.Error("job and quota alerts: cannot watch", "resource", x.gvr.String(), "err", err)
			continue
		}
		out = append(out, inf)
	}
	return out
}

// readable reports whether the daemon can list the resource: the API server serves it (its
// CRD is installed) and the daemon's role may read it (deploy/jobset adds JobSets). Asked
// once, with one LIST of one item, when the replica starts leading; a kind installed later
// is watched from the next time a replica leads.
func (d *Daemon) readable(ctx context.Context, gvr schema.GroupVersionResource) bool {
	_, err := d.opts.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) && ctx.Err() == nil {
		d.opts.Log.Warn("job and quota alerts: cannot list", "resource", gvr.String(), "err", err)
	}
	return err == nil
}

// trimJobSetObject is the JobSet informer's transform: trimJobSet; tombstones pass unchanged.
func trimJobSetObject(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return trimJobSet(u), nil
	}
	return obj, nil
}

// trimJobSet keeps of a JobSet what its alerts read, as trimJob of a Job: its Failed=True
// condition is JobSet's own (reason FailedJobs, ReachedMaxRestarts, ...).
func trimJobSet(u *unstructured.Unstructured) *watchedJob {
	out := &watchedJob{name: u.GetName(), namespace: u.GetNamespace(), uid: u.GetUID(), resourceVersion: u.GetResourceVersion(),
		source: u.GetAnnotations()[keys.Source], multiKueueLabels: keys.MultiKueueCopy(u.GroupVersionKind().Group, u.GetKind(), u.GetLabels()), jobSet: true}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Failed" && m["status"] == "True" {
			reason, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			out.failed, out.failedReason, out.failedMessage = true, reason, jobMessage(msg)
		}
	}
	return out
}

// watchedQueue is what the informer keeps of a team's ClusterQueue: its name (the team's
// namespace), uid and resourceVersion, and its GPUs: the nominal quota of nvidia.com/gpu over
// its flavors, and what its workloads reserve of it (status.flavorsReservation, borrowed
// quota included).
type watchedQueue struct {
	name, resourceVersion string
	uid                   types.UID
	nominal, reserved     resource.Quantity
}

// GetObjectMeta makes a watchedQueue an object the informer keys (meta.Accessor).
func (q *watchedQueue) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: q.name, UID: q.uid, ResourceVersion: q.resourceVersion}
}

// trimClusterQueueObject is the ClusterQueue informer's transform: trimClusterQueue;
// tombstones pass unchanged.
func trimClusterQueueObject(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return trimClusterQueue(u), nil
	}
	return obj, nil
}

// trimClusterQueue sums a ClusterQueue's GPUs over its flavors (watchedQueue).
func trimClusterQueue(u *unstructured.Unstructured) *watchedQueue {
	out := &watchedQueue{name: u.GetName(), uid: u.GetUID(), resourceVersion: u.GetResourceVersion()}
	groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "resourceGroups")
	for _, g := range groups {
		flavors, _, _ := unstructured.NestedSlice(asMap(g), "flavors")
		for _, f := range flavors {
			addGPUs(&out.nominal, asMap(f), "nominalQuota")
		}
	}
	reserved, _, _ := unstructured.NestedSlice(u.Object, "status", "flavorsReservation")
	for _, f := range reserved {
		addGPUs(&out.reserved, asMap(f), "total")
	}
	return out
}

// addGPUs adds to sum the field of the nvidia.com/gpu entry of a flavor's resources.
func addGPUs(sum *resource.Quantity, flavor map[string]any, field string) {
	resources, _, _ := unstructured.NestedSlice(flavor, "resources")
	for _, r := range resources {
		m := asMap(r)
		if m["name"] != keys.ResourceGPU {
			continue
		}
		if s, ok := m[field].(string); ok {
			if q, err := resource.ParseQuantity(s); err == nil {
				sum.Add(q)
			}
		} else if n, ok := m[field].(int64); ok {
			sum.Add(*resource.NewQuantity(n, resource.DecimalSI))
		}
	}
}

// asMap is v as a JSON object, nil if it is not one.
func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// queueSeen sends QuotaReached when the workloads of a team's ClusterQueue reserve every GPU
// of its nominal quota (a team that borrows from the cohort is beyond it), and QuotaFreed when
// they no longer do. A quota reached when the daemon starts leading is told.
func (w *jobWatch) queueSeen(obj any) {
	q, ok := obj.(*watchedQueue)
	if !ok {
		return
	}
	full := q.nominal.Sign() > 0 && q.reserved.Cmp(q.nominal) >= 0
	ns, object := q.name, "ClusterQueue "+q.name
	switch {
	case full && !w.queueReached[ns]:
		w.queueReached[ns] = true
		msg := fmt.Sprintf("team %s reserves all %s of its %s GPUs: new jobs queue", ns, q.reserved.String(), q.nominal.String())
		if q.reserved.Cmp(q.nominal) > 0 {
			msg = fmt.Sprintf("team %s reserves %s GPUs, over its quota of %s (borrowed from the cohort): new jobs queue", ns, q.reserved.String(), q.nominal.String())
		}
		w.d.opts.Alerts.Send(notify.Event{Reason: notify.QuotaReached, Severity: notify.SeverityWarning, Namespace: ns,
			Object: object, Key: quotaKey(ns), Message: msg})
	case !full && w.queueReached[ns]:
		delete(w.queueReached, ns)
		w.freed(ns, object, fmt.Sprintf("team %s reserves %s of its %s GPUs", ns, q.reserved.String(), q.nominal.String()))
	}
}

// queueDeleted closes the condition of a reached ClusterQueue that is deleted.
func (w *jobWatch) queueDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if q, ok := obj.(*watchedQueue); ok && w.queueReached[q.name] {
		delete(w.queueReached, q.name)
		w.freed(q.name, "ClusterQueue "+q.name, "the ClusterQueue of team "+q.name+" was deleted")
	}
}

// workerOf is the worker cluster that ran a manager's Job that MultiKueue dispatched: the
// status.clusterName of the Workload that the Job owns; "" when it is not found (one LIST of
// the namespace's Workloads, made only for a failure, and none without Options.Dynamic).
func (w *jobWatch) workerOf(j *watchedJob) string {
	if w.d.opts.Dynamic == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(w.ctx, jobPodWait)
	defer cancel()
	list, err := w.d.opts.Dynamic.Resource(workloadsGVR).Namespace(j.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for _, wl := range list.Items {
		for _, o := range wl.GetOwnerReferences() {
			if o.UID == j.uid {
				name, _, _ := unstructured.NestedString(wl.Object, "status", "clusterName")
				return name
			}
		}
	}
	return ""
}
