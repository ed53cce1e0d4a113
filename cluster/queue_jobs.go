package cluster

import (
	"context"
	"fmt"
	"sort"

	"github.com/gpuctl/gpuctl/internal/keys"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The statuses of a job that Kueue holds back (queueing: kueue).
const (
	// StatusQueued is a job that waits in its team's queue for quota.
	StatusQueued = "Queued"
	// StatusPreempted is a job that was preempted and waits in its queue again.
	StatusPreempted = "Preempted"
)

// jobStateOf is the queue state of a gpuctl workload: that of the Workload its Job or
// StatefulSet owns, else (a Deployment, whose pods Kueue queues one by one) that of the pod
// first in line, else of its first pod by name with a Workload. pods are the workload's
// namespace's; nil when none are at hand.
func (q *queues) jobStateOf(w *workload, pods []*corev1.Pod) *QueueState {
	if s := q.of(w.meta.UID, w); s != nil {
		return s
	}
	var best *QueueState
	for _, p := range sortedPods(pods, w.selector) {
		s := q.of(p.UID, w)
		switch {
		case s == nil:
		case best == nil, s.Waiting() && (!best.Waiting() || s.Position < best.Position):
			best = s
		}
	}
	return best
}

// sortedPods are the pods that sel selects, by name.
func sortedPods(pods []*corev1.Pod, sel labels.Selector) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// attach gives each workload its queue state (pods by namespace, nil when not at hand) and
// the status that follows: a pending job that Kueue holds back is Queued or Preempted, and
// its note (the reason of its row without pods) says where it stands in its queue.
func (q *queues) attach(ws []workload, byNS map[string][]*corev1.Pod) {
	if q == nil {
		return
	}
	for i := range ws {
		w := &ws[i]
		w.queues = q
		w.setQueue(q.jobStateOf(w, byNS[w.meta.Namespace]))
	}
}

// setQueue sets the workload's queue state and the status and note that follow from it: a
// pending workload, or a suspended Job whose pods are still being stopped, that Kueue holds
// back is Queued or Preempted; a pending one with quota reserved, or that MultiKueue
// dispatched to a worker cluster, says so in its note.
func (w *workload) setQueue(s *QueueState) {
	w.queue = s
	if s == nil || w.status != StatusPending && !(w.suspend && !w.terminal()) {
		return
	}
	if st := heldStatus(s); st != "" {
		w.status, w.note = st, s.Summary()
	} else if s.State == QueueReserved || s.Dispatch() != "" {
		w.note = s.Summary() // MultiKueue's worker runs it: its status is copied here soon
	}
}

// heldStatus is the status of a job or pod that Kueue holds back in a queue state, or "" for
// a state that does not hold it back.
func heldStatus(s *QueueState) string {
	switch s.State {
	case QueueQueued, QueueEvicted:
		return StatusQueued
	case QueuePreempted:
		return StatusPreempted
	}
	return ""
}

// queuedPodRow sets a pod row's queue state: the pod's own Workload's (a Deployment's pod,
// which Kueue gates until admitted) or else the job's. A pod that waits for its Workload's
// admission on no node is Queued (or Preempted), with where it stands as its reason.
func (w *workload) queuedPodRow(row *JobPod, p *corev1.Pod) {
	if w.queues == nil {
		return
	}
	row.Queue = w.queue
	s := w.queues.of(p.UID, w)
	if s == nil {
		return
	}
	row.Queue = s
	if st := heldStatus(s); st != "" && p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
		row.Status, row.Reason = st, s.Summary()
	}
}

// needPods reports whether the queue states of ws need their pods: a Deployment's pods each
// have their own Workload.
func (q *queues) needPods(ws []workload) bool {
	if q == nil {
		return false
	}
	for _, w := range ws {
		if w.object == "Deployment" {
			return true
		}
	}
	return false
}

// managedPodsByNS lists gpuctl's pods in all namespaces, by namespace.
func (r *Reader) managedPodsByNS(ctx context.Context) (map[string][]*corev1.Pod, error) {
	pods, err := r.ObjectSource().Pods(ctx, metav1.NamespaceAll,
		labels.SelectorFromSet(labels.Set{keys.ManagedBy: keys.ManagedByValue}), nil)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	return byNamespace(pods), nil
}

// byNamespace groups pods by namespace.
func byNamespace(pods []*corev1.Pod) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, p := range pods {
		out[p.Namespace] = append(out[p.Namespace], p)
	}
	return out
}
