package reconciler

import (
	"context"
	"errors"
	"maps"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/managedfields"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/reconciler/kueuepause"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
)

// What the engine leaves to Kueue. A queue-managed Job (QueueManaged) is written by two
// managers: gpuctl creates it suspended (spec.suspend: true); Kueue admits it with an Update
// that sets spec.suspend to false and adds node selectors, labels and annotations to its pod
// template, and preempts it by setting spec.suspend back to true.
//
// Kueue's additions to the pod template are fields gpuctl does not declare: server-side apply
// leaves them alone, and plan, diff and drift compare only the fields gpuctl sets. spec.suspend
// is the one field both write, and the rule for it is here, used by Plan (the local no-op test,
// the dry-run and its diff), Apply, ApplyOne, InSync and Drift:
//
//   - gpuctl applies spec.suspend while its field manager owns it: from the create until
//     Kueue writes another value (an Update that changes a field takes it from the managers
//     that applied it). A Job not yet admitted stays suspended.
//   - Once gpuctl no longer owns it, spec.suspend is Kueue's: it is left out of what gpuctl
//     applies, compares and reports as drift, whatever its value. A sync never suspends an
//     admitted Job, nor resumes a preempted one. (Kueue itself suspends a Job that runs
//     without admission, whoever resumed it.)
//   - It is never left out while gpuctl owns it: server-side apply removes a field that its
//     manager stops applying, the Job's suspend would fall back to false, and the Job would
//     start without admission. A live object read without its managedFields counts as owned.
//   - The race: gpuctl reads the Job suspended, Kueue admits it, gpuctl applies suspend: true
//     — with force it would suspend the admitted Job. So an apply that carries spec.suspend of
//     an existing queue-managed Job carries the resourceVersion it was decided on as a
//     precondition; when the Job changed meanwhile, it is read and decided again (applyOver).

// QueueManaged reports whether Kueue admits the object: a batch Job labelled
// keys.KueueQueueName.
func QueueManaged(u *unstructured.Unstructured) bool {
	if u == nil || !isJob(u) {
		return false
	}
	return object.HasLabel(u, keys.KueueQueueName)
}

func isJob(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == "batch" && gvk.Kind == "Job"
}

// syncPausedWorkloads makes Kueue hold the plan's paused queue-managed Jobs (job.suspend:
// true), which spec.suspend alone does not: their Workloads are deactivated, and activated
// again once they are resumed (package kueuepause).
func (m *Manager) syncPausedWorkloads(ctx context.Context, plan *Plan) error {
	var jobs []*unstructured.Unstructured
	for _, c := range plan.Changes {
		if c.Desired != nil && c.Error == "" && c.Action != ActionDelete && QueueManaged(c.Desired) {
			defer c.whole()() // Sync reads spec.suspend
			jobs = append(jobs, c.Desired)
		}
	}
	return kueuepause.Sync(ctx, m.dyn, m.opts.FieldManager, jobs)
}

// suspendPath is the field that gpuctl and Kueue both write.
var suspendPath = []string{"spec", "suspend"}

// leftToKueue reports whether desired's spec.suspend is left to Kueue over live: the Job is
// queue-managed (desired or live labelled), exists, declares spec.suspend, and gpuctl's field
// manager no longer owns it.
func leftToKueue(desired, live *unstructured.Unstructured, manager string) bool {
	if live == nil || !(QueueManaged(desired) || QueueManaged(live)) {
		return false
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(desired.Object, suspendPath...); !found {
		return false
	}
	if len(live.GetManagedFields()) == 0 {
		return false // read without its managedFields: cannot tell, so gpuctl's
	}
	return !managedfields.Owns(live.GetManagedFields(), manager, suspendPath...)
}

// applied returns what gpuctl applies for desired over live (nil: it does not exist): desired
// itself, or a copy without spec.suspend when that is left to Kueue. guarded tells an apply
// that carries spec.suspend of an existing queue-managed Job: it must be made on live's
// resourceVersion (applyOver).
func (m *Manager) applied(desired, live *unstructured.Unstructured) (body *unstructured.Unstructured, guarded bool) {
	if !leftToKueue(desired, live, m.opts.FieldManager) {
		_, declares, _ := unstructured.NestedFieldNoCopy(desired.Object, suspendPath...)
		return desired, declares && live != nil && (QueueManaged(desired) || QueueManaged(live))
	}
	// A shallow copy: the object and its spec are new maps, the rest is shared and only read.
	out := &unstructured.Unstructured{Object: maps.Clone(desired.Object)}
	spec := maps.Clone(desired.Object["spec"].(map[string]any)) // spec.suspend was found: a map
	delete(spec, "suspend")
	out.Object["spec"] = spec
	return out, false
}

// InSync reports whether live holds every value gpuctl applies for desired (as Plan prepared
// it): applying it would change nothing gpuctl sets. The fields left to Kueue are not compared
// (see QueueManaged). live must carry its managedFields, as read from the API server.
func (m *Manager) InSync(desired, live *unstructured.Unstructured) bool {
	return m.inSync(desired, live, nil)
}

// inSync is InSync of a live object read as typed (nil: live is whole), live then holding its
// metadata alone (and its managedFields where leftToKueue reads them): the values are those of
// typed (object.ContainsTyped), the rest is read from live.
func (m *Manager) inSync(desired, live *unstructured.Unstructured, typed runtime.Object) bool {
	body, _ := m.applied(desired, live)
	var ok bool
	if typed != nil {
		ok = object.ContainsTyped(body, typed)
	} else {
		ok = object.Contains(body, live)
	}
	if !m.noting.Load() {
		return ok // no watched view (the CLI): nothing reads what was found up to date
	}
	if h := object.AnnotationOf(desired, keys.AppliedHash); ok && h != "" && object.AnnotationOf(live, keys.AppliedHash) == h {
		m.verified.note(live, h) // a plan from the watches trusts it while it does not change
	}
	return ok
}

// maxRereads bounds how often an apply guarded by a resourceVersion reads the object again.
const maxRereads = 5

// applyOver applies desired over live, the object it was decided on, with ri (see applied).
// A guarded apply that finds the object changed since reads it and decides again.
func (m *Manager) applyOver(ctx context.Context, ri dynamic.ResourceInterface, desired, live *unstructured.Unstructured, force bool) error {
	opts := metav1.ApplyOptions{FieldManager: m.opts.FieldManager, Force: force}
	for attempt := 1; ; attempt++ {
		body, guarded := m.applied(desired, live)
		if guarded {
			body = withResourceVersion(body, live.GetResourceVersion())
		}
		res, err := ri.Apply(ctx, desired.GetName(), body, opts)
		if err == nil && m.noting.Load() {
			m.upToDate(desired, res) // remembered when it is (InSync)
		}
		if !guarded || !isStale(err) || attempt == maxRereads {
			return err
		}
		if live, err = ri.Get(ctx, desired.GetName(), metav1.GetOptions{}); apierrors.IsNotFound(err) {
			live = nil // deleted meanwhile: created as desired
		} else if err != nil {
			return err
		}
	}
}

// withResourceVersion returns a shallow copy of u whose metadata.resourceVersion is rv: the
// API server refuses its apply with a Conflict when the object has another.
func withResourceVersion(u *unstructured.Unstructured, rv string) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
	md, _ := u.Object["metadata"].(map[string]any)
	md = maps.Clone(md)
	if md == nil {
		md = map[string]any{}
	}
	md["resourceVersion"] = rv
	out.Object["metadata"] = md
	return out
}

// isStale tells a write refused because the object changed since it was read (a Conflict
// that is not about fields of other managers).
func isStale(err error) bool {
	var se *apierrors.StatusError
	if !apierrors.IsConflict(err) || !errors.As(err, &se) {
		return false
	}
	if se.ErrStatus.Details != nil {
		for _, c := range se.ErrStatus.Details.Causes {
			if c.Type == metav1.CauseTypeFieldManagerConflict {
				return false
			}
		}
	}
	return true
}

// trimLive drops what a plan does not keep of a live object: its status, and its
// managedFields — but a Job's, whose ownership of spec.suspend decides what gpuctl applies.
func trimLive(u *unstructured.Unstructured) {
	if !isJob(u) {
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	}
	delete(u.Object, "status")
}
