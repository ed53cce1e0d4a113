package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// LastLogLines is how many lines of the log of a failed attempt's pod describe shows.
const LastLogLines = 10

// loadHistory reads what the attempts of jobs in namespace need beyond their pods: the
// namespace's events, the nodes (what happened to a lost one) and, when a pod was preempted,
// the pods that may have preempted it (gpuctl's pods in every namespace, else those of the
// namespace: pods, already listed). Nodes and other namespaces that the credentials may not
// list are left out. shared holds the reads that the histories of several namespaces share
// (nil: none yet).
func (r *Reader) loadHistory(ctx context.Context, namespace string, events []*corev1.Event, pods []*corev1.Pod, shared *sharedReads) (*history, error) {
	objs := r.ObjectSource()
	if events == nil {
		var err error
		if events, err = objs.Events(ctx, namespace); err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
	}
	if shared == nil {
		shared = &sharedReads{}
	}
	h := &history{events: events, pods: pods, nodes: shared.nodeMap(ctx, objs)}
	preempted := false
	for _, e := range events {
		preempted = preempted || e.Reason == "Preempted" && e.InvolvedObject.Kind == "Pod"
	}
	if !preempted {
		return h, nil
	}
	if all := shared.managedPods(ctx, objs); all != nil {
		h.pods = append(all[:len(all):len(all)], pods...)
	}
	if jobs, err := objs.Jobs(ctx, namespace, workloadSelector("", "")); err == nil {
		h.priorities = map[string]string{}
		for _, j := range jobs {
			h.priorities[j.Namespace+"/"+j.Name] = j.Spec.Template.Spec.PriorityClassName
		}
	}
	return h, nil
}

// sharedReads are the reads that the histories of several namespaces share, each made once,
// when first needed: the nodes, and gpuctl's pods in every namespace. A read that fails (the
// credentials may not list them) leaves them out.
type sharedReads struct {
	nodes       map[string]*corev1.Node
	all         []*corev1.Pod
	nodesDone   bool
	allPodsDone bool
}

// nodeMap is the nodes by name, nil when they cannot be listed.
func (s *sharedReads) nodeMap(ctx context.Context, objs Objects) map[string]*corev1.Node {
	if !s.nodesDone {
		s.nodesDone = true
		if nodes, err := objs.Nodes(ctx); err == nil {
			s.nodes = map[string]*corev1.Node{}
			for _, n := range nodes {
				s.nodes[n.Name] = n
			}
		}
	}
	return s.nodes
}

// managedPods is gpuctl's pods in every namespace, nil when they cannot be listed.
func (s *sharedReads) managedPods(ctx context.Context, objs Objects) []*corev1.Pod {
	if !s.allPodsDone {
		s.allPodsDone = true
		if all, err := objs.Pods(ctx, metav1.NamespaceAll, managedPods, nil); err == nil {
			s.all = all
		}
	}
	return s.all
}

// needsHistory reports whether a Job's reason needs the events of its pods: it failed, a pod
// of it failed (counted or not), it has more pods than it runs at once, a pod of it was made
// after it started or counts earlier attempts (a replaced pod), or none is left while it has
// not finished. Other Jobs ran without a hitch so far, and their reason is Kueue's, if any; so
// is a Job that MultiKueue runs in a worker cluster (none of its pods is here).
func needsHistory(w workload, pods []*corev1.Pod) bool {
	j := w.job
	if j == nil || w.multiKueue {
		return false // a MultiKueue Job's pods and their events are in its worker cluster
	}
	if w.status == StatusFailed || j.Status.Failed > 0 {
		return true
	}
	if j.Status.StartTime == nil {
		return false
	}
	late := j.Status.StartTime.Add(10 * time.Second)
	own := 0
	for _, p := range pods {
		if p.Namespace == w.meta.Namespace && w.selector.Matches(labels.Set(p.Labels)) {
			own++
			retried := p.Annotations[batchv1.JobIndexFailureCountAnnotation] + p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation]
			if p.CreationTimestamp.After(late) || p.Status.Phase == corev1.PodFailed || strings.Trim(retried, "0") != "" {
				return true
			}
		}
	}
	return own > int(w.pods) || own == 0 && w.status != StatusSucceeded && !w.suspend
}

// setJobReasons sets the JobReason of the rows of each workload whose reason needs no events
// (Kueue's) or whose events history holds (the jobs in hist.need); byNS are the pods by
// namespace.
func setJobReasons(ws []workload, byNS map[string][]*corev1.Pod, hist histories, rows []JobPod) {
	reasons := map[string]string{}
	for _, w := range ws {
		var atts []Attempt
		if h := hist.byNS[w.meta.Namespace]; h != nil && hist.need[w.id()] {
			atts = h.attempts(w, byNS[w.meta.Namespace])
		}
		if why := jobReason(w.view(), atts); why != "" {
			reasons[w.id()] = why
		}
	}
	for i := range rows {
		rows[i].JobReason = reasons[rows[i].JobID]
	}
}

// histories are the events histories of the namespaces (byNS) of the jobs whose reasons need
// one (need, by workload id); empty without events at hand.
type histories struct {
	byNS map[string]*history
	need map[string]bool
}

// jobHistories reads the history of each namespace that has a Job that needs one (each asked
// once, of its namespace's pods: byNS).
func (r *Reader) jobHistories(ctx context.Context, ws []workload, byNS map[string][]*corev1.Pod) (histories, error) {
	out := histories{byNS: map[string]*history{}, need: map[string]bool{}}
	shared := &sharedReads{}
	for _, w := range ws {
		ns := w.meta.Namespace
		if !needsHistory(w, byNS[ns]) {
			continue
		}
		out.need[w.id()] = true
		if _, ok := out.byNS[ns]; ok {
			continue
		}
		h, err := r.loadHistory(ctx, ns, nil, byNS[ns], shared)
		if err != nil {
			return histories{}, err
		}
		out.byNS[ns] = h
	}
	return out, nil
}

// lastLog is the last lines of the log of the container that failed the job's last failed
// attempt, when its pod still exists; nil when there is none or it cannot be read.
func (r *Reader) lastLog(ctx context.Context, atts []Attempt, pods []*corev1.Pod) []LogLine {
	var failed *Attempt
	for i := range atts {
		if atts[i].Outcome == AttemptFailed && !atts[i].Gone {
			failed = &atts[i]
		}
	}
	if failed == nil {
		return nil
	}
	p := onePod(pods, failed.Pod)
	if len(p) == 0 {
		return nil
	}
	container := ""
	for _, c := range p[0].Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil && (t.ExitCode != 0 || t.Reason == "OOMKilled") {
			container = c.Name
			break
		}
	}
	if container == "" {
		return nil
	}
	tail := int64(LastLogLines)
	var out []LogLine
	err := r.streamLog(ctx, p[0], container, &corev1.PodLogOptions{Container: container, TailLines: &tail}, "",
		func(l LogLine) error { out = append(out, l); return nil })
	if err != nil {
		r.log().Debug("last log lines", "pod", p[0].Name, "err", err)
	}
	return out
}
