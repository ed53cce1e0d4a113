package reconciler

import (
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kueueJob is a Job as the renderer makes it with queueing: kueue (queue label, suspended),
// or without the label when queued is false.
func kueueJob(queued bool, suspend any) *unstructured.Unstructured {
	spec := map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "main", "image": "x:1"}}, "restartPolicy": "Never"}}}
	if suspend != nil {
		spec["suspend"] = suspend
	}
	u := obj(map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "j", "namespace": "alice"}, "spec": spec})
	if queued {
		u.SetLabels(map[string]string{keys.KueueQueueName: keys.KueueLocalQueue})
	}
	return u
}

// owning sets the managedFields of a live Job as the API server keeps them: gpuctl's Apply
// entry (its labels and template, and spec.suspend when listed in suspendOwners) and one
// Update entry for each other manager in suspendOwners, owning spec.suspend.
func owning(u *unstructured.Unstructured, suspendOwners ...string) *unstructured.Unstructured {
	raw := func(s string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(s)} }
	suspend := ""
	var others []metav1.ManagedFieldsEntry
	for _, m := range suspendOwners {
		if m == keys.FieldManager {
			suspend = `"f:suspend":{},`
			continue
		}
		others = append(others, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: raw(`{"f:metadata":{"f:labels":{"f:y":{}}},"f:spec":{"f:suspend":{}}}`)})
	}
	gpuctl := metav1.ManagedFieldsEntry{Manager: keys.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
		FieldsV1: raw(`{"f:metadata":{"f:labels":{"f:x":{}}},"f:spec":{` + suspend + `"f:template":{"f:spec":{"f:restartPolicy":{}}}}}`)}
	u.SetManagedFields(append([]metav1.ManagedFieldsEntry{gpuctl}, others...))
	return u
}

// TestSuspendLeftToKueue is the rule of kueue.go as a table: spec.suspend is left out of what
// gpuctl applies exactly when a queue-managed Job exists and gpuctl no longer owns the field;
// an apply that carries it over an existing queue-managed Job is guarded.
func TestSuspendLeftToKueue(t *testing.T) {
	const kueue = "kueue-job-controller"
	type testCase struct {
		desired, live *unstructured.Unstructured
		leftOut       bool // spec.suspend is not in what gpuctl applies
		guarded       bool
	}
	cases := map[string]testCase{
		"create":                         {desired: kueueJob(true, true), live: nil},
		"not yet admitted: gpuctl owns":  {desired: kueueJob(true, true), live: owning(kueueJob(true, true), keys.FieldManager), guarded: true},
		"admitted: Kueue owns":           {desired: kueueJob(true, true), live: owning(kueueJob(true, false), kueue), leftOut: true},
		"preempted: Kueue owns":          {desired: kueueJob(true, true), live: owning(kueueJob(true, true), kueue), leftOut: true},
		"shared: Kueue wrote true too":   {desired: kueueJob(true, true), live: owning(kueueJob(true, true), kueue, keys.FieldManager), guarded: true},
		"resumed by hand":                {desired: kueueJob(true, true), live: owning(kueueJob(true, false), "kubectl-edit"), leftOut: true},
		"another manager, not suspend":   {desired: kueueJob(true, true), live: withOther(owning(kueueJob(true, true), keys.FieldManager)), guarded: true},
		"managedFields not read":         {desired: kueueJob(true, true), live: kueueJob(true, false), guarded: true},
		"label only on the live Job":     {desired: kueueJob(false, true), live: owning(kueueJob(true, false), kueue), leftOut: true},
		"desired does not declare it":    {desired: kueueJob(true, nil), live: owning(kueueJob(true, false), kueue)},
		"no queue label: Git wins":       {desired: kueueJob(false, true), live: owning(kueueJob(false, false), "kubectl-edit")},
		"not a Job":                      {desired: withKind(kueueJob(true, true), "CronJob"), live: owning(withKind(kueueJob(true, false), "CronJob"), kueue)},
		"desired false, Kueue preempted": {desired: kueueJob(true, false), live: owning(kueueJob(true, true), kueue), leftOut: true},
	}
	m := &Manager{opts: DefaultOptions()}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.desired.DeepCopy()
			body, guarded := m.applied(tc.desired, tc.live)
			_, declared, _ := unstructured.NestedFieldNoCopy(tc.desired.Object, suspendPath...)
			_, applies, _ := unstructured.NestedFieldNoCopy(body.Object, suspendPath...)
			if leftOut := declared && !applies; leftOut != tc.leftOut || guarded != tc.guarded {
				t.Fatalf("left out %v, guarded %v; want %v, %v", leftOut, guarded, tc.leftOut, tc.guarded)
			}
			if applies && leftToKueue(tc.desired, tc.live, keys.FieldManager) {
				t.Fatal("applied and left to Kueue at once")
			}
			if !equalObjects(before, tc.desired) {
				t.Fatal("applied changed the desired object")
			}
			if tc.live != nil {
				// InSync compares what is applied: a live Job whose only difference is a
				// suspend left to Kueue is in sync.
				synced := tc.live.DeepCopy()
				if applies {
					_ = unstructured.SetNestedField(synced.Object, body.Object["spec"].(map[string]any)["suspend"], suspendPath...)
				}
				if !m.InSync(tc.desired, synced) {
					t.Fatal("not in sync though it holds every applied value")
				}
				if got := m.InSync(tc.desired, flipSuspend(synced)); got == applies {
					t.Fatalf("InSync with suspend flipped = %v, want %v", got, !applies)
				}
			}
		})
	}
}

// withOther adds an Update entry of another manager that owns a label, not spec.suspend.
func withOther(u *unstructured.Unstructured) *unstructured.Unstructured {
	u.SetManagedFields(append(u.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: "kubectl-label",
		Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:y":{}}}}`)}}))
	return u
}

func withKind(u *unstructured.Unstructured, kind string) *unstructured.Unstructured {
	u.SetKind(kind)
	return u
}

// flipSuspend returns a copy of a Job with spec.suspend negated (a missing one becomes true).
func flipSuspend(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	v, _, _ := unstructured.NestedBool(c.Object, suspendPath...)
	_ = unstructured.SetNestedField(c.Object, !v, suspendPath...)
	return c
}

func equalObjects(a, b *unstructured.Unstructured) bool { return hashOf(a) == hashOf(b) }

// TestWithResourceVersion: the precondition is set on a copy; the object applied without it
// is untouched.
func TestWithResourceVersion(t *testing.T) {
	u := kueueJob(true, true)
	g := withResourceVersion(u, "42")
	if g.GetResourceVersion() != "42" || u.GetResourceVersion() != "" || g.GetName() != "j" {
		t.Fatalf("guarded %q, original %q, name %q", g.GetResourceVersion(), u.GetResourceVersion(), g.GetName())
	}
}
