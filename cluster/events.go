package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/render"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// EventList is the events of one job or of all jobs, the answer of GET /api/v1/jobs/{jobId}/events.
type EventList struct {
	// Items are oldest first, by the time each was last seen.
	Items []Event `json:"items"`
}

// Event is one Kubernetes event about a job's object or pod.
type Event struct {
	// LastSeen is when the event last happened; FirstSeen when it first did.
	LastSeen  time.Time `json:"lastSeen"`
	FirstSeen time.Time `json:"firstSeen"`
	// Type is Normal or Warning.
	Type   string `json:"type"`
	Reason string `json:"reason"`
	// JobID is the job the object belongs to.
	JobID     string `json:"jobId"`
	Namespace string `json:"namespace"`
	// Object is "<kind>/<name>" in lower case, as kubectl names it: pod/sft-0-x7k2p, job/sft.
	Object  string `json:"object"`
	Message string `json:"message"`
	// Count is how many times it happened.
	Count int32 `json:"count"`
}

// JobEvents returns the events of a job (id as Job takes it): those of its Job, Deployment or
// StatefulSet, of the ReplicaSets of a Deployment, and of its pods, oldest first.
func (r *Reader) JobEvents(ctx context.Context, id string) (EventList, error) {
	wl, err := r.findWorkload(ctx, id)
	if err != nil {
		return EventList{}, err
	}
	return r.eventsOf(ctx, wl.meta.Namespace, []workload{wl})
}

// Events returns the events of every job in a namespace ("" for all namespaces), oldest first.
func (r *Reader) Events(ctx context.Context, namespace string) (EventList, error) {
	all, err := r.listWorkloads(ctx, workloadSelector("", ""))
	if err != nil {
		return EventList{}, err
	}
	var ws []workload
	for _, wl := range all {
		if namespace == "" || wl.meta.Namespace == namespace {
			ws = append(ws, wl)
		}
	}
	if len(ws) == 0 {
		return EventList{Items: []Event{}}, nil
	}
	return r.eventsOf(ctx, namespace, ws)
}

// objectKey names an object of a namespace as an event's involvedObject does.
type objectKey struct{ namespace, kind, name string }

// eventsOf lists the events in namespace ("" for all) and keeps those of the workloads'
// objects and pods.
func (r *Reader) eventsOf(ctx context.Context, namespace string, ws []workload) (EventList, error) {
	events, err := r.ObjectSource().Events(ctx, namespace)
	if err != nil {
		return EventList{}, fmt.Errorf("list events: %w", err)
	}
	return r.eventsIn(ctx, namespace, ws, events)
}

// eventsIn keeps of events (those of namespace, "" for all) the events of the workloads'
// objects and pods: the pods that exist, and the gone pods of a Job, named as the Job
// controller names them (their events outlive them and tell why they ended).
func (r *Reader) eventsIn(ctx context.Context, namespace string, ws []workload, events []*corev1.Event) (EventList, error) {
	owners, err := r.ownedObjects(ctx, namespace, ws)
	if err != nil {
		return EventList{}, err
	}
	jobs := map[string][]workload{}
	for _, w := range ws {
		if w.object == "Job" {
			jobs[w.meta.Namespace] = append(jobs[w.meta.Namespace], w)
		}
	}
	events = slices.Clone(events)
	sortByName(events) // as the API server lists them, so that equal times keep one order
	out := EventList{Items: []Event{}}
	for _, e := range events {
		o := e.InvolvedObject
		job, ok := owners[objectKey{e.Namespace, o.Kind, o.Name}]
		if !ok && o.Kind == "Pod" {
			job, ok = goneJobPod(jobs[e.Namespace], o.Name, eventTime(e))
		}
		if !ok {
			continue
		}
		out.Items = append(out.Items, toEvent(e, job))
	}
	sort.SliceStable(out.Items, func(i, j int) bool {
		a, b := out.Items[i], out.Items[j]
		if !a.LastSeen.Equal(b.LastSeen) {
			return a.LastSeen.Before(b.LastSeen)
		}
		return a.FirstSeen.Before(b.FirstSeen)
	})
	return out, nil
}

// goneJobPod finds the Job of ws whose pods are named as name is (the longest name wins),
// created before the event of at.
func goneJobPod(ws []workload, name string, at time.Time) (string, bool) {
	best, longest := "", 0
	for _, w := range ws {
		if _, _, ok := podOfJob(w.meta.Name, name); ok && !at.Before(w.meta.CreationTimestamp.Time) && len(w.meta.Name) > longest {
			best, longest = w.id(), len(w.meta.Name)
		}
	}
	return best, best != ""
}

// ownedObjects maps the workloads, their pods and the ReplicaSets of Deployments to their job
// ids.
func (r *Reader) ownedObjects(ctx context.Context, namespace string, ws []workload) (map[objectKey]string, error) {
	owners := map[objectKey]string{}
	for _, wl := range ws {
		owners[objectKey{wl.meta.Namespace, wl.object, wl.meta.Name}] = wl.id()
	}
	pods, err := r.ObjectSource().Pods(ctx, namespace, labels.Everything(), nil)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	sets, err := r.ObjectSource().ReplicaSets(ctx, namespace, labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list replicasets: %w", err)
	}
	for _, wl := range ws {
		for _, p := range pods {
			if p.Namespace == wl.meta.Namespace && wl.selector.Matches(labels.Set(p.Labels)) {
				owners[objectKey{p.Namespace, "Pod", p.Name}] = wl.id()
			}
		}
		if wl.object == render.JobSetKind { // its child Job's events say why a rank failed
			owners[objectKey{wl.meta.Namespace, "Job", jobSetChildJob(wl.meta.Name)}] = wl.id()
		}
		if wl.object != "Deployment" {
			continue
		}
		for _, rs := range sets {
			if rs.Namespace == wl.meta.Namespace && wl.selector.Matches(labels.Set(rs.Spec.Template.Labels)) {
				owners[objectKey{rs.Namespace, "ReplicaSet", rs.Name}] = wl.id()
			}
		}
	}
	return owners, nil
}

// toEvent reduces a core/v1 Event, written through either events API, to an Event.
func toEvent(e *corev1.Event, jobID string) Event {
	first := e.FirstTimestamp.Time
	if first.IsZero() {
		first = e.EventTime.Time
	}
	if first.IsZero() {
		first = e.CreationTimestamp.Time
	}
	last := e.LastTimestamp.Time
	if e.Series != nil && e.Series.LastObservedTime.After(last) {
		last = e.Series.LastObservedTime.Time
	}
	if last.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil && e.Series.Count > count {
		count = e.Series.Count
	}
	return Event{
		LastSeen: last.UTC(), FirstSeen: first.UTC(), Type: e.Type, Reason: e.Reason,
		JobID: jobID, Namespace: e.Namespace,
		Object:  strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name,
		Message: strings.TrimSpace(e.Message), Count: max(count, 1),
	}
}
