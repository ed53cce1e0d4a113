package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// jobSets is the resource of the JobSets that a multi-node training renders to with
// multiNode: jobset (render.JobSetAPIVersion), read as unstructured objects.
var jobSets = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

// jobSetNameLabel is the label with which the JobSet controller marks the pods of a JobSet.
const jobSetNameLabel = "jobset.sigs.k8s.io/jobset-name"

// JobSets lists JobSets with Dynamic: none without it, in a cluster that does not serve
// their API (the JobSet CRD is not installed), or for credentials that may not list them.
func (a APIObjects) JobSets(ctx context.Context, namespace string, sel labels.Selector) ([]*unstructured.Unstructured, error) {
	if a.Dynamic == nil {
		return nil, nil
	}
	l, err := a.Dynamic.Resource(jobSets).Namespace(namespace).List(ctx, selectorOptions(sel, nil))
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil // the API server does not know the resource, or the user may not list it
	}
	if err != nil {
		return nil, err
	}
	return pointers(l.Items), nil
}

// JobSets lists the cached JobSets of gpuctl (labelled g8s.host/managed-by=gpuctl) that sel
// selects; none in a cluster that does not serve their API, and none until their first list.
func (o *InformerObjects) JobSets(ctx context.Context, namespace string, sel labels.Selector) ([]*unstructured.Unstructured, error) {
	s, err := o.ready(ctx)
	if err != nil {
		return nil, err
	}
	return s.jobSets.Load().list(namespace, sel)
}

// jobSetCache is an informer of JobSets.
type jobSetCache struct {
	informer cache.SharedIndexInformer
}

// servesJobSets asks the API server's discovery whether it serves JobSets (their CRD is
// installed).
func servesJobSets(d discovery.DiscoveryInterface) bool {
	return serves(d, jobSets.GroupVersion().String(), jobSets.Resource)
}

// startJobSets starts an informer of the JobSets in namespace ("" for all) that selector
// selects over dyn until ctx ends, calling handler (when not nil) on each change, and waits
// for its first list for at most kueueSyncWait.
func startJobSets(ctx context.Context, dyn dynamic.Interface, namespace, selector string, handler cache.ResourceEventHandler) (*jobSetCache, error) {
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace,
		func(o *metav1.ListOptions) { o.LabelSelector = selector })
	c := &jobSetCache{informer: f.ForResource(jobSets).Informer()}
	if err := c.informer.SetTransform(trimJobSet); err != nil {
		return nil, err
	}
	if handler != nil {
		if _, err := c.informer.AddEventHandler(handler); err != nil {
			return nil, err
		}
	}
	f.Start(ctx.Done())
	wait, cancel := context.WithTimeout(ctx, kueueSyncWait)
	defer cancel()
	cache.WaitForCacheSync(wait.Done(), c.informer.HasSynced)
	return c, nil
}

// list is the cached JobSets of namespace ("" for all) that sel selects (nil: all), sorted by
// namespace and name; none while c is nil or its first list has not completed.
func (c *jobSetCache) list(namespace string, sel labels.Selector) ([]*unstructured.Unstructured, error) {
	if c == nil || !c.informer.HasSynced() {
		return nil, nil
	}
	all, err := cachedUnstructured(c.informer, namespace)
	if sel == nil || sel.Empty() {
		return all, err
	}
	out := all[:0]
	for _, u := range all {
		if sel.Matches(labels.Set(u.GetLabels())) {
			out = append(out, u)
		}
	}
	return out, err
}

// trimJobSet leaves out of a cached JobSet what fromJobSet does not read, as trimObject does of
// a Job: its managedFields, kubectl's last-applied annotation, and of each replicated Job's pod
// template all but what slimTemplate keeps. A JobSet whose template does not convert is kept whole.
func trimJobSet(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return trimObject(obj)
	}
	if _, err := trimObject(u); err != nil {
		return nil, err
	}
	rjs, _, _ := unstructured.NestedSlice(u.Object, "spec", "replicatedJobs")
	for _, rj := range rjs {
		m, _ := rj.(map[string]any)
		tmpl, ok, _ := unstructured.NestedMap(m, "template", "spec", "template")
		if !ok {
			continue
		}
		var t corev1.PodTemplateSpec
		if runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &t) != nil {
			continue
		}
		slimTemplate(&t)
		slim, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&t)
		if err != nil {
			continue
		}
		_ = unstructured.SetNestedMap(m, slim, "template", "spec", "template")
		unstructured.RemoveNestedField(m, "template", "spec", "podFailurePolicy")
	}
	if rjs != nil {
		_ = unstructured.SetNestedSlice(u.Object, rjs, "spec", "replicatedJobs")
	}
	return u, nil
}

// jobSet finds gpuctl's JobSet name of namespace; ok is false when there is none.
func (r *Reader) jobSet(ctx context.Context, namespace, name string) (w workload, ok bool, err error) {
	sets, err := r.ObjectSource().JobSets(ctx, namespace, workloadSelector("", ""))
	if err != nil {
		return workload{}, false, err
	}
	for _, u := range sets {
		if u.GetName() == name {
			return fromJobSet(u), true, nil
		}
	}
	return workload{}, false, nil
}

// fromJobSet is the workload of a JobSet that gpuctl rendered (render.buildJobSet): the pods
// of its one replicated Job, selected by the JobSet controller's label.
func fromJobSet(u *unstructured.Unstructured) workload {
	var spec batchv1.JobSpec
	var copies int64 = 1
	if rjs, _, _ := unstructured.NestedSlice(u.Object, "spec", "replicatedJobs"); len(rjs) > 0 {
		if rj, ok := rjs[0].(map[string]any); ok {
			if n, ok, _ := unstructured.NestedInt64(rj, "replicas"); ok {
				copies = n
			}
			if s, ok, _ := unstructured.NestedMap(rj, "template", "spec"); ok {
				_ = runtime.DefaultUnstructuredConverter.FromUnstructured(s, &spec) // a field it cannot read stays zero
			}
		}
	}
	meta := metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
		Labels: u.GetLabels(), Annotations: u.GetAnnotations(), CreationTimestamp: u.GetCreationTimestamp()}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{jobSetNameLabel: u.GetName()}}
	w := newWorkload(render.JobSetKind, meta, spec.Template, sel, int32(copies)*replicas(spec.Parallelism))
	manager, _, _ := unstructured.NestedString(u.Object, "spec", "managedBy")
	w.multiKueue = manager == keys.MultiKueueManager
	restarts, _, _ := unstructured.NestedInt64(u.Object, "status", "restarts")
	w.restarts = int32(restarts)
	w.status, w.note = jobSetStatus(u)
	if w.note == "" && restarts > 0 {
		w.note = "restarted " + humanize.Plural(restarts, "time")
	}
	return w
}

// jobSetStatus is a JobSet's status: its Completed condition → Succeeded, Failed → Failed
// (with the condition's message as the note), Suspended → Pending ("suspended"); otherwise
// Running while a child Job has active or ready pods, else Pending.
func jobSetStatus(u *unstructured.Unstructured) (status, note string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["status"] != string(metav1.ConditionTrue) {
			continue
		}
		msg, _ := m["message"].(string)
		switch m["type"] {
		case "Completed":
			return StatusSucceeded, ""
		case "Failed":
			return StatusFailed, oneLine(msg)
		case "Suspended":
			return StatusPending, "suspended"
		}
	}
	rjs, _, _ := unstructured.NestedSlice(u.Object, "status", "replicatedJobsStatus")
	for _, rj := range rjs {
		m, _ := rj.(map[string]any)
		active, _, _ := unstructured.NestedInt64(m, "active")
		ready, _, _ := unstructured.NestedInt64(m, "ready")
		if active+ready > 0 {
			return StatusRunning, ""
		}
	}
	return StatusPending, ""
}

// jobSetReason says why a JobSet stands where it does: how many times the JobSet controller
// restarted it and why (its last restart event about the JobSet, or about its child Job),
// and what failed it.
func jobSetReason(w workload, events []*corev1.Event) string {
	var parts []string
	if w.status == StatusFailed && w.note != "" {
		parts = append(parts, w.note)
	}
	if w.restarts > 0 {
		s := "Restarted " + humanize.Plural(w.restarts, "time")
		if why := lastRestartEvent(w, events); why != "" {
			s += " (" + why + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// lastRestartEvent is the message of the last event by which the JobSet controller restarted
// the JobSet (a Warning about the JobSet whose reason names a restart), "" when there is none.
func lastRestartEvent(w workload, events []*corev1.Event) string {
	var last *corev1.Event
	for _, e := range events {
		o := e.InvolvedObject
		if e.Namespace != w.meta.Namespace || o.Kind != render.JobSetKind || o.Name != w.meta.Name ||
			!strings.Contains(strings.ToLower(e.Reason), "restart") {
			continue
		}
		if last == nil || eventTime(last).Before(eventTime(e)) {
			last = e
		}
	}
	if last == nil {
		return ""
	}
	return oneLine(last.Reason + ": " + last.Message)
}

// jobSetChildJob is the name of the one child Job of gpuctl's JobSet name (render.buildJobSet).
func jobSetChildJob(name string) string {
	return fmt.Sprintf("%s-%s-0", name, render.JobSetReplicatedJob)
}
