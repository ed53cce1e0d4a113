package kueuepause

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// WorkloadResource is Kueue's Workload, the unit it admits: one a Job.
var WorkloadResource = schema.GroupVersionResource{Group: keys.KueueGroup, Version: keys.KueueVersion, Resource: "workloads"}

// WaitForWorkload bounds how long Sync waits for Kueue to make the Workload of a paused Job
// it has just been given (Kueue makes it within moments of the Job).
var WaitForWorkload = 10 * time.Second

// Paused reports whether a Job is paused by its file (annotation keys.Paused).
func Paused(job *unstructured.Unstructured) bool {
	return job.GetAnnotations()[keys.Paused] == keys.PausedValue
}

// Sync makes the Workloads of jobs (the queue-managed Jobs that a sync applied) follow their
// pause: deactivates the Workload of each paused one (waiting up to WaitForWorkload for Kueue
// to make it), and activates again the Workloads that Sync deactivated of those no longer
// paused. Jobs that are not in jobs are not looked at (a sync of a part of the repository
// leaves the others alone). It reads the Workloads labelled keys.Paused, and those of the
// namespaces that have a paused Job.
func Sync(ctx context.Context, dyn dynamic.Interface, fieldManager string, jobs []*unstructured.Unstructured) error {
	if len(jobs) == 0 {
		return nil
	}
	applied := map[types.NamespacedName]bool{} // Job -> paused
	pausedIn := map[string][]string{}          // namespace -> paused Jobs
	for _, j := range jobs {
		applied[types.NamespacedName{Namespace: j.GetNamespace(), Name: j.GetName()}] = Paused(j)
		if Paused(j) {
			pausedIn[j.GetNamespace()] = append(pausedIn[j.GetNamespace()], j.GetName())
		}
	}
	wl := dyn.Resource(WorkloadResource)
	var errs []error
	marked, err := wl.List(ctx, metav1.ListOptions{LabelSelector: keys.Paused})
	switch {
	case apierrors.IsNotFound(err):
		return nil // Kueue's API is not served: no Workload holds these Jobs
	case apierrors.IsForbidden(err) && len(pausedIn) == 0:
		return nil // credentials that may not read Workloads, and nothing to pause
	case err != nil:
		return fmt.Errorf("Kueue Workloads: %w", err)
	}
	for i := range marked.Items {
		w := &marked.Items[i]
		paused, ok := applied[types.NamespacedName{Namespace: w.GetNamespace(), Name: owner(w)}]
		if !ok || paused {
			continue
		}
		if err := follow(ctx, wl.Namespace(w.GetNamespace()), fieldManager, w, false); err != nil {
			errs = append(errs, fmt.Errorf("Kueue Workload of Job %s/%s: %w", w.GetNamespace(), owner(w), err))
		}
	}
	namespaces := make([]string, 0, len(pausedIn))
	for ns := range pausedIn {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	// One deadline for every namespace: teams' paused Jobs whose Workloads never come hold a
	// sync up WaitForWorkload at most, not that much per team.
	deadline := time.Now().Add(WaitForWorkload)
	for _, ns := range namespaces {
		if err := deactivate(ctx, wl.Namespace(ns), fieldManager, pausedIn[ns], deadline); err != nil {
			errs = append(errs, fmt.Errorf("Kueue Workloads of namespace %s: %w", ns, err))
		}
	}
	return errors.Join(errs...)
}

// deactivate deactivates the Workloads of a namespace's paused Jobs, waiting until deadline for
// Kueue to make those it has not made yet.
func deactivate(ctx context.Context, ri dynamic.ResourceInterface, fieldManager string, jobs []string, deadline time.Time) error {
	want := map[string]bool{}
	for _, j := range jobs {
		want[j] = true
	}
	for {
		list, err := ri.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var errs []error
		seen := map[string]bool{}
		for i := range list.Items {
			w := &list.Items[i]
			if job := owner(w); want[job] {
				seen[job] = true
				if err := follow(ctx, ri, fieldManager, w, true); err != nil {
					errs = append(errs, fmt.Errorf("Job %s: %w", job, err))
				}
			}
		}
		if len(seen) == len(want) || len(errs) > 0 || time.Now().After(deadline) {
			return errors.Join(errs...)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// follow deactivates a paused Job's active Workload, or activates the Workload that Sync
// deactivated of a Job no longer paused.
func follow(ctx context.Context, ri dynamic.ResourceInterface, fieldManager string, wl *unstructured.Unstructured, paused bool) error {
	active, found, _ := unstructured.NestedBool(wl.Object, "spec", "active")
	active = active || !found // Kueue's default
	_, marked := wl.GetLabels()[keys.Paused]
	var patch string
	switch {
	case paused && active:
		patch = `{"metadata":{"labels":{"` + keys.Paused + `":"` + keys.PausedValue + `"}},"spec":{"active":false}}`
	case !paused && marked && !active:
		patch = `{"metadata":{"labels":{"` + keys.Paused + `":null}},"spec":{"active":true}}`
	case !paused && marked:
		patch = `{"metadata":{"labels":{"` + keys.Paused + `":null}}}`
	default:
		return nil
	}
	_, err := ri.Patch(ctx, wl.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: fieldManager})
	return err
}

// owner is the name of the Job that owns a Workload, or "".
func owner(wl *unstructured.Unstructured) string {
	for _, ref := range wl.GetOwnerReferences() {
		if ref.Kind == "Job" && (ref.APIVersion == "batch/v1") {
			return ref.Name
		}
	}
	return ""
}
