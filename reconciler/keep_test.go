package reconciler_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// legacyShape turns the rendered training Job of objs into what a gpuctl before job.retries
// rendered: a NonIndexed Job with backoffLimit 0, no podFailurePolicy and no spec digest.
func legacyShape(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() != "Job" {
			continue
		}
		for _, f := range []string{"completionMode", "completions", "parallelism", "podFailurePolicy", "backoffLimitPerIndex"} {
			unstructured.RemoveNestedField(u.Object, "spec", f)
		}
		if err := unstructured.SetNestedField(u.Object, int64(0), "spec", "backoffLimit"); err != nil {
			t.Fatal(err)
		}
		a := u.GetAnnotations()
		delete(a, keys.SpecDigest)
		u.SetAnnotations(a)
		return objs
	}
	t.Fatal("no Job rendered")
	return nil
}

// TestKeepJobWhoseFileDidNotChange: a training Job that an earlier gpuctl created in another
// shape (immutable fields) is kept as it is, not recreated (which would run a finished job
// again), while its file does not change; a later sync sends no request for it; a change of
// its file recreates it.
func TestKeepJobWhoseFileDidNotChange(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	ns := "keep"
	files := teamFiles(ns, "pytorch:1", 1)
	e.sync(legacyShape(t, renderFiles(t, files))) // what the earlier gpuctl applied
	jobs := e.kube.BatchV1().Jobs(ns)
	old, err := jobs.Get(e.ctx, "sft", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The upgrade's first sync: the Job is kept, and the digest of its file recorded on it.
	desired := renderFiles(t, files)
	plan, _ := e.sync(desired)
	ch := find(plan, "Job", "sft")
	if ch.Action != reconciler.ActionUpdate || !strings.Contains(ch.Reason, "kept as it is") || !strings.Contains(ch.Reason, "spec.completionMode") {
		t.Fatalf("Job sft: %s (%s), want an update that keeps it, naming the immutable field\n%s", ch.Action, ch.Reason, actions(plan))
	}
	now, err := jobs.Get(e.ctx, "sft", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.UID != old.UID || now.Spec.CompletionMode != nil && *now.Spec.CompletionMode != "NonIndexed" {
		t.Fatalf("Job sft recreated (uid %s → %s, completionMode %v): the upgrade ran it again", old.UID, now.UID, now.Spec.CompletionMode)
	}
	if now.Annotations[keys.SpecDigest] == "" || now.Annotations[keys.KeptHash] == "" {
		t.Errorf("Job sft annotations %v, want the spec digest and the kept hash", now.Annotations)
	}
	job := desired[jobIndex(t, desired)] // as the plan prepared it
	live, err := e.manager.Get(e.ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if diffs, err := e.manager.Drift(e.ctx, job, live); err != nil || len(diffs) > 0 {
		t.Errorf("drift of the kept Job: %v, %v; want none", diffs, err)
	}

	// The next sync decides it unchanged without a dry-run.
	e.resetCounts()
	plan, _ = e.sync(renderFiles(t, files))
	if plan.HasChanges() {
		t.Fatalf("sync after the keep plans:\n%s", actions(plan))
	}
	if w, d := e.count.writes.Load(), e.count.dryRuns.Load(); w != 0 || d != 0 {
		t.Errorf("sync after the keep sent %d writes and %d dry-runs, want none", w, d)
	}

	// A comment in the file changes nothing either.
	withComment := teamFiles(ns, "pytorch:1", 1)
	withComment["train.yaml"] = "# resumes from /output\n" + withComment["train.yaml"]
	if plan, _ = e.sync(renderFiles(t, withComment)); plan.HasChanges() {
		t.Fatalf("a comment in the file plans:\n%s", actions(plan))
	}

	// A change of the file recreates the Job: the user asked for another run.
	plan, _ = e.sync(renderFiles(t, teamFiles(ns, "pytorch:2", 1)))
	if ch = find(plan, "Job", "sft"); ch.Action != reconciler.ActionRecreate {
		t.Fatalf("Job sft after its file changed: %s (%s), want recreate", ch.Action, ch.Reason)
	}
	again, err := jobs.Get(e.ctx, "sft", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.UID == old.UID || again.Spec.CompletionMode == nil || *again.Spec.CompletionMode != "Indexed" {
		t.Errorf("Job sft after its file changed: uid %s (was %s), completionMode %v; want a new Indexed Job", again.UID, old.UID, again.Spec.CompletionMode)
	}
}

// jobIndex is the index of the one Job in objs.
func jobIndex(t *testing.T, objs []*unstructured.Unstructured) int {
	t.Helper()
	for i, u := range objs {
		if u.GetKind() == "Job" {
			return i
		}
	}
	t.Fatal("no Job rendered")
	return -1
}
