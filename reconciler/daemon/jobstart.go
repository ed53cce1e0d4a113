package daemon

import (
	"context"
	"fmt"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"sort"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/reconciler"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
)

// A Job whose pods the API server refuses is created, reported as applied, and never runs: a
// namespace's quota on cpu or memory refuses every pod whose containers do not request them
// ("failed quota: team-quota: must specify requests.cpu"). The Job has no condition for it;
// the Job controller records a FailedCreate event on the Job and retries with backoff. So,
// after an apply, the daemon looks at the events of the Jobs that this sync created, and
// reports as errors those that the quota refused.
//
// It costs one LIST of events per namespace of those Jobs (field selector: the Jobs' events),
// repeated every jobStartPoll until each Job has a SuccessfulCreate or a refusal, or
// jobStartWait has passed; nothing when the sync created no Job. The drift detector's
// informers watch the managed objects, not their events, so they cannot answer it.
//
// A Job that Kueue admits (reconciler.QueueManaged) is created suspended: it creates no pod
// until Kueue admits it, which may take hours, and waiting in its queue is not a failure. Such
// Jobs are not watched: the status counts them as queued (Status.Queued).
const (
	jobStartWait = 3 * time.Second
	jobStartPoll = 250 * time.Millisecond
)

// jobStartErrors returns, for each Job that cs created (or recreated) since applied and that
// the quota keeps from starting, "Job ns/name: cannot start: <the API server's reason>". The
// Jobs in queued are left to Kueue.
func (d *Daemon) jobStartErrors(ctx context.Context, cs *reconciler.ChangeSet, applied time.Time, queued map[object.Ref]bool) []string {
	jobs := createdJobs(cs, func(r object.Ref) bool { return !queued[r] })
	if len(jobs) == 0 || d.opts.Store == nil || d.opts.Store.Kube == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, jobStartWait)
	defer cancel()
	refused := map[object.Ref]string{}
	for {
		settled := 0
		for ns, names := range jobs {
			evs, err := d.opts.Store.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
				FieldSelector: fields.OneTermEqualSelector("involvedObject.kind", "Job").String()})
			if err != nil {
				d.opts.Log.Warn("list the events of created Jobs", "namespace", ns, "err", err)
				return sortedErrors(refused)
			}
			settled += settle(evs.Items, ns, names, applied.Add(-time.Second), refused)
		}
		if settled == countJobs(jobs) {
			return sortedErrors(refused)
		}
		select {
		case <-ctx.Done():
			return sortedErrors(refused)
		case <-time.After(jobStartPoll):
		}
	}
}

// reportJobs adds the Jobs a sync created to its status: those that cannot start as errors,
// and a note of them and of the queued ones (cs created them, and queued holds them) in the
// message. The result stays what the apply was: the revision is applied.
func reportJobs(st *Status, jobErrors []string, cs *reconciler.ChangeSet, queued map[object.Ref]bool) {
	for _, e := range jobErrors {
		st.Errors = appendBounded(st.Errors, e)
	}
	if n := len(jobErrors); n > 0 {
		st.Message += "; " + humanize.Plural(n, "Job") + " it created cannot start"
	}
	st.Queued = countJobs(createdJobs(cs, func(r object.Ref) bool { return queued[r] }))
	if st.Queued > 0 {
		verb := " are"
		if st.Queued == 1 {
			verb = " is"
		}
		st.Message += "; " + humanize.Plural(st.Queued, "Job") + " it created" + verb + " queued for Kueue's admission"
	}
}

// queuedJobs returns the Jobs among the desired objects that Kueue admits.
func queuedJobs(objects []*unstructured.Unstructured) map[object.Ref]bool {
	out := map[object.Ref]bool{}
	for _, u := range objects {
		if reconciler.QueueManaged(u) {
			out[object.RefOf(u)] = true
		}
	}
	return out
}

// createdJobs returns the Jobs that a change set created or recreated and that keep accepts:
// namespace -> names.
func createdJobs(cs *reconciler.ChangeSet, keep func(object.Ref) bool) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	if cs == nil {
		return out
	}
	for _, r := range cs.Results {
		o := r.Object
		if r.Error != "" || o.Group() != "batch" || o.Kind != "Job" ||
			(r.Action != reconciler.ActionCreate && r.Action != reconciler.ActionRecreate) || !keep(o) {
			continue
		}
		if out[o.Namespace] == nil {
			out[o.Namespace] = map[string]bool{}
		}
		out[o.Namespace][o.Name] = true
	}
	return out
}

func countJobs(jobs map[string]map[string]bool) int {
	n := 0
	for _, names := range jobs {
		n += len(names)
	}
	return n
}

// settle reads the events of a namespace's Jobs since a time: a Job is settled once it has
// created a pod or been refused by the quota (recorded in refused). It returns how many of
// names are settled.
func settle(evs []corev1.Event, ns string, names map[string]bool, since time.Time, refused map[object.Ref]string) int {
	settled := map[string]bool{}
	for _, ev := range evs {
		name := ev.InvolvedObject.Name
		if !names[name] || eventTime(ev).Before(since) {
			continue
		}
		switch {
		case ev.Reason == "SuccessfulCreate":
			settled[name] = true
		case ev.Reason == "FailedCreate" && strings.Contains(ev.Message, "failed quota:"):
			settled[name] = true
			ref := object.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: ns, Name: name}
			msg := ev.Message
			if _, after, ok := strings.Cut(msg, "is forbidden: "); ok {
				msg = after // the pod's generated name says nothing
			}
			refused[ref] = msg
		}
	}
	return len(settled)
}

// eventTime is when an event last happened.
func eventTime(ev corev1.Event) time.Time {
	t := ev.LastTimestamp.Time
	if ev.Series != nil && ev.Series.LastObservedTime.After(t) {
		t = ev.Series.LastObservedTime.Time
	}
	if ev.EventTime.After(t) {
		t = ev.EventTime.Time
	}
	return t
}

func sortedErrors(refused map[object.Ref]string) []string {
	out := make([]string, 0, len(refused))
	for ref, msg := range refused {
		out = append(out, fmt.Sprintf("%s: cannot start: %s", ref, msg))
	}
	sort.Strings(out)
	return out
}
