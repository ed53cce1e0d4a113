package reconciler_test

import (
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/managedfields"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/test/testcluster"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// kueueManager is the field manager of Kueue's Job reconciler.
const kueueManager = "kueue-job-controller"

// queueJob is a training Job as rendered with queueing: kueue — suspended, labelled with the
// LocalQueue (object and pod template) — or, with queued false, a plain suspended Job.
// revision is an annotation: a new one changes the Job without touching its template.
func queueJob(ns, name string, queued bool, revision string) *unstructured.Unstructured {
	podLabels := map[string]any{"app": name}
	if queued {
		podLabels[keys.KueueQueueName] = keys.KueueLocalQueue
	}
	u := object("batch/v1", "Job", ns, name, map[string]any{"spec": map[string]any{
		"suspend": true,
		"template": map[string]any{"metadata": map[string]any{"labels": podLabels},
			"spec": map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{
				"name": "main", "image": "busybox", "command": []any{"true"}}}}},
	}})
	if queued {
		u.SetLabels(map[string]string{keys.KueueQueueName: keys.KueueLocalQueue})
	}
	u.SetAnnotations(map[string]string{"example.com/revision": revision})
	return u
}

// jobOf reads a Job.
func jobOf(e *env, ns, name string) *batchv1.Job {
	e.t.Helper()
	j, err := e.kube.BatchV1().Jobs(ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

func suspended(j *batchv1.Job) bool { return j.Spec.Suspend != nil && *j.Spec.Suspend }

// gpuctlOwnsSuspend tells whether gpuctl's field manager owns a Job's spec.suspend.
func gpuctlOwnsSuspend(j *batchv1.Job) bool {
	return managedfields.Owns(j.ManagedFields, keys.FieldManager, "spec", "suspend")
}

// kueueUpdate changes a Job as Kueue's controller does: an Update (not an apply) under its
// field manager.
func kueueUpdate(e *env, ns, name string, change func(*batchv1.Job)) {
	e.t.Helper()
	updateJob(e, ns, name, kueueManager, change)
}

// updateJob changes a Job with an Update under a field manager, read again when the Job
// controller wrote its status meanwhile.
func updateJob(e *env, ns, name, manager string, change func(*batchv1.Job)) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		j := jobOf(e, ns, name)
		change(j)
		_, err := e.kube.BatchV1().Jobs(ns).Update(e.ctx, j, metav1.UpdateOptions{FieldManager: manager})
		return err
	})
	if err != nil {
		e.t.Fatalf("%s update of Job %s/%s: %v", manager, ns, name, err)
	}
}

// admit is Kueue's admission: in one Update of the suspended Job, spec.suspend false and the
// flavor's node selector, its pod-set label and the workload annotation on the pod template
// (the Job API allows these template changes only while the Job is suspended and never ran).
func admit(j *batchv1.Job) {
	j.Spec.Suspend = new(bool)
	ps := &j.Spec.Template
	if ps.Spec.NodeSelector == nil {
		ps.Spec.NodeSelector = map[string]string{}
	}
	ps.Spec.NodeSelector[keys.Pool] = "training-pool"
	ps.Labels["kueue.x-k8s.io/podset"] = "main"
	if ps.Annotations == nil {
		ps.Annotations = map[string]string{}
	}
	ps.Annotations["kueue.x-k8s.io/workload"] = "job-" + j.Name
}

// admitted checks that a Job still runs as Kueue admitted it: not suspended, with Kueue's
// template fields.
func admitted(t *testing.T, j *batchv1.Job, when string) {
	t.Helper()
	ps := j.Spec.Template
	if suspended(j) || ps.Spec.NodeSelector[keys.Pool] != "training-pool" || ps.Labels["kueue.x-k8s.io/podset"] != "main" ||
		ps.Annotations["kueue.x-k8s.io/workload"] != "job-"+j.Name {
		t.Fatalf("%s: suspend %v, node selector %v, template labels %v, annotations %v", when,
			suspended(j), ps.Spec.NodeSelector, ps.Labels, ps.Annotations)
	}
}

// unchangedJob checks that a plan leaves a Job alone: no change, no diff, no conflict.
func unchangedJob(t *testing.T, p *reconciler.Plan, name, when string) {
	t.Helper()
	c := find(p, "Job", name)
	if c.Action != reconciler.ActionUnchanged || len(c.Diff) > 0 || len(c.Conflicts) > 0 || len(c.TakeBack) > 0 {
		t.Fatalf("%s: Job %s: %s %q, diff %v, conflicts %v, take back %v", when, name, c.Action, c.Reason, c.Diff, c.Conflicts, c.TakeBack)
	}
}

// TestKueueOwnsSuspendOnceItAdmits: the engine creates a queue-managed Job suspended and keeps
// it so until Kueue admits it; after Kueue's admission (an Update that resumes it and adds a
// node selector, a label and an annotation to its template) a plan sees no change, a sync —
// of the same revision or of one that changes the Job, even forced — leaves it running with
// Kueue's fields, and Drift reports nothing; Kueue's preemption is left as it is too.
func TestKueueOwnsSuspendOnceItAdmits(t *testing.T) {
	opts := reconciler.DefaultOptions()
	e := newEnv(t, opts)
	ns := "kueue-admit"
	objs := func(rev string) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{namespace(ns), queueJob(ns, "train", true, rev)}
	}
	e.sync(objs("1"))
	if j := jobOf(e, ns, "train"); !suspended(j) || !gpuctlOwnsSuspend(j) {
		t.Fatalf("created: suspend %v, owned by gpuctl %v", suspended(j), gpuctlOwnsSuspend(j))
	}

	kueueUpdate(e, ns, "train", admit)
	if j := jobOf(e, ns, "train"); gpuctlOwnsSuspend(j) { // what the rule rests on
		t.Fatalf("after Kueue's Update gpuctl still owns spec.suspend: %+v", j.ManagedFields)
	}
	e.resetCounts()
	plan, _ := e.sync(objs("1"))
	unchangedJob(t, plan, "train", "admitted, same revision")
	if n := e.count.dryRuns.Load() + e.count.writes.Load(); n != 0 {
		t.Fatalf("a sync of an admitted Job made %d dry-runs and writes; want none (decided locally)", n)
	}
	admitted(t, jobOf(e, ns, "train"), "after a sync of the same revision")

	live, err := e.manager.Get(e.ctx, find(plan, "Job", "train").Desired)
	if err != nil {
		t.Fatal(err)
	}
	if diffs, err := e.manager.Drift(e.ctx, find(plan, "Job", "train").Desired, live); err != nil || len(diffs) > 0 {
		t.Fatalf("drift of the admitted Job: %v %v", diffs, err)
	}

	// A revision that changes the Job is applied — and with force, which would take
	// spec.suspend back from Kueue if it were applied.
	e.opts.Force = true
	e = newEnvSame(t, e)
	plan, _ = e.sync(objs("2"))
	if c := find(plan, "Job", "train"); c.Action != reconciler.ActionUpdate || len(c.Diff) != 1 ||
		c.Diff[0].Path != "metadata.annotations.example.com/revision" || len(c.TakeBack) > 0 {
		t.Fatalf("a new revision of the admitted Job: %s, diff %+v, take back %+v", c.Action, c.Diff, c.TakeBack)
	}
	j := jobOf(e, ns, "train")
	admitted(t, j, "after a forced sync of a new revision")
	if j.Annotations["example.com/revision"] != "2" {
		t.Fatalf("the new revision was not applied: %v", j.Annotations)
	}
	if err := e.manager.ApplyOne(e.ctx, find(plan, "Job", "train").Desired, true); err != nil { // drift correction
		t.Fatal(err)
	}
	admitted(t, jobOf(e, ns, "train"), "after drift correction (ApplyOne with force)")

	// Preemption: Kueue suspends it again; a sync does not resume it.
	kueueUpdate(e, ns, "train", func(j *batchv1.Job) { j.Spec.Suspend = ptrTo(true) })
	plan, _ = e.sync(objs("2"))
	unchangedJob(t, plan, "train", "preempted")
	if j := jobOf(e, ns, "train"); !suspended(j) || gpuctlOwnsSuspend(j) {
		t.Fatalf("preempted Job after a sync: suspend %v, owned by gpuctl %v", suspended(j), gpuctlOwnsSuspend(j))
	}
}

// TestKueueSuspendStaysWhileGpuctlOwnsIt is the danger the rule avoids: while gpuctl's field
// manager owns spec.suspend (the Job is not admitted), an apply without it would remove it and
// start the Job. Another manager's write to other fields — or of the same value — leaves
// gpuctl the owner, and a sync of a changed revision keeps the Job suspended.
func TestKueueSuspendStaysWhileGpuctlOwnsIt(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	ns := "kueue-owned"
	objs := func(rev string) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{namespace(ns), queueJob(ns, "waits", true, rev), queueJob(ns, "control", true, rev)}
	}
	first, _ := e.sync(objs("1"))

	// The control shows the danger is real: applied without spec.suspend by the manager that
	// owns it, the Job loses its suspend and starts.
	dyn := dynamic.NewForConfigOrDie(testcluster.Current().RESTConfig())
	jobs := dyn.Resource(schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}).Namespace(ns)
	bare := find(first, "Job", "control").Desired.DeepCopy() // as gpuctl applied it
	unstructured.RemoveNestedField(bare.Object, "spec", "suspend")
	if _, err := jobs.Apply(e.ctx, "control", bare, metav1.ApplyOptions{FieldManager: keys.FieldManager, Force: true}); err != nil {
		t.Fatal(err)
	}
	if suspended(jobOf(e, ns, "control")) {
		t.Fatal("control: an apply without spec.suspend by its owner left the Job suspended; the danger this test guards against is gone")
	}

	// Kueue writes the Job (its labels, and suspend with the value it has): gpuctl keeps
	// ownership, and a sync of a new revision keeps the Job suspended.
	kueueUpdate(e, ns, "waits", func(j *batchv1.Job) {
		j.Labels["kueue.x-k8s.io/seen"] = "yes"
		j.Spec.Suspend = ptrTo(true)
	})
	if j := jobOf(e, ns, "waits"); !gpuctlOwnsSuspend(j) {
		t.Fatalf("an Update that keeps the value took spec.suspend from gpuctl: %+v", j.ManagedFields)
	}
	plan, _ := e.sync(objs("2"))
	if c := find(plan, "Job", "waits"); c.Action != reconciler.ActionUpdate {
		t.Fatalf("the new revision: %s %q", c.Action, c.Error)
	}
	if j := jobOf(e, ns, "waits"); !suspended(j) || !gpuctlOwnsSuspend(j) || j.Annotations["example.com/revision"] != "2" {
		t.Fatalf("not yet admitted Job after a sync: suspend %v, owned by gpuctl %v, annotations %v", suspended(j), gpuctlOwnsSuspend(j), j.Annotations)
	}
}

// TestKueueAdmitsBetweenPlanAndApply: the plan reads the Job suspended and owned by gpuctl;
// Kueue admits it before the apply, which is forced. The apply, made on the resourceVersion
// it was planned on, finds the Job changed, reads it again and leaves spec.suspend to Kueue:
// the admitted Job is not suspended again.
func TestKueueAdmitsBetweenPlanAndApply(t *testing.T) {
	opts := reconciler.DefaultOptions()
	opts.Force = true
	e := newEnv(t, opts)
	ns := "kueue-race"
	e.sync([]*unstructured.Unstructured{namespace(ns), queueJob(ns, "train", true, "1")})
	plan := e.plan([]*unstructured.Unstructured{namespace(ns), queueJob(ns, "train", true, "2")})
	if c := find(plan, "Job", "train"); c.Action != reconciler.ActionUpdate {
		t.Fatalf("planned: %s %q", c.Action, c.Error)
	}
	kueueUpdate(e, ns, "train", admit)
	if _, err := e.apply(plan); err != nil {
		t.Fatal(err)
	}
	j := jobOf(e, ns, "train")
	admitted(t, j, "admitted between plan and apply")
	if j.Annotations["example.com/revision"] != "2" {
		t.Fatalf("the revision was not applied: %v", j.Annotations)
	}
}

// TestSuspendWithoutQueueIsGit: without the queue label, spec.suspend is gpuctl's like any
// field: changed by hand it is a conflict and drift, and a forced sync takes it back.
func TestSuspendWithoutQueueIsGit(t *testing.T) {
	opts := reconciler.DefaultOptions()
	e := newEnv(t, opts)
	ns := "kueue-none"
	objs := []*unstructured.Unstructured{namespace(ns), queueJob(ns, "plain", false, "1")}
	e.sync(objs)
	updateJob(e, ns, "plain", "kubectl-edit", func(j *batchv1.Job) { j.Spec.Suspend = ptrTo(false) })
	plan := e.plan(objs)
	c := find(plan, "Job", "plain")
	if c.Action != reconciler.ActionUpdate || len(c.Conflicts) != 1 || c.Conflicts[0].Field != ".spec.suspend" ||
		len(c.Diff) != 1 || c.Diff[0].Path != "spec.suspend" {
		t.Fatalf("a Job resumed by hand: %s, conflicts %+v, diff %+v", c.Action, c.Conflicts, c.Diff)
	}
	live, err := e.manager.Get(e.ctx, c.Desired)
	if err != nil {
		t.Fatal(err)
	}
	if diffs, err := e.manager.Drift(e.ctx, c.Desired, live); err != nil || len(diffs) != 1 || diffs[0].Path != "spec.suspend" {
		t.Fatalf("drift: %+v %v", diffs, err)
	}
	e.opts.Force = true
	e = newEnvSame(t, e)
	e.sync(objs)
	if !suspended(jobOf(e, ns, "plain")) {
		t.Fatal("a forced sync did not take spec.suspend back")
	}
}

func ptrTo[T any](v T) *T { return &v }
