package detector_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/drift/detector"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sync asks the daemon for a sync and returns its status.
func (h *harness) sync(id string) daemon.Status {
	h.t.Helper()
	if _, err := h.status.Request(h.ctx, id); err != nil {
		h.t.Fatal(err)
	}
	return h.waitStatus("sync "+id, func(s daemon.Status) bool { return s.LastHandledRequest == id })
}

// TestWatchedPlanIsNotStale: with the detector's watches, a no-op sync lists nothing and reads
// no member (a sync of the same revision renders nothing either); yet an object deleted or
// changed out of band is seen by the next sync, and a status update (controllers at work)
// costs no read.
func TestWatchedPlanIsNotStale(t *testing.T) {
	run := uniq()
	ns := "drift-watched-" + run
	f := files(ns, "watched-pool", "gpu-t4-1")
	delete(f, "pool.yaml")
	for i := range 5 {
		f[fmt.Sprintf("svc-%d.yaml", i)] = fmt.Sprintf("kind: compute\nversion: v0.1\njob: {name: svc-%d, namespace: %s}\nenvironment: {image: nginx}\nservice: {replicas: 1}\n", i, ns)
	}
	h := newHarness(t, "watched-"+run, detector.Options{Mode: drift.ModeReport}, f)

	// Once the watches hold the members (and the controllers have settled them), a requested
	// sync decides them all from the watches, with no request at all.
	var st daemon.Status
	h.poll("a sync planned from the watches alone", func() (bool, string) {
		st = h.sync("noop-" + uniq())
		return st.Plan != nil && st.Plan.Requests == 0 && st.Plan.Listed == 0 && st.Plan.Watched == st.Counts["unchanged"] &&
				st.Summary == fmt.Sprintf("no changes (%d unchanged)", st.Counts["unchanged"]),
			fmt.Sprintf("plan %+v, summary %q", st.Plan, st.Summary)
	})
	t.Logf("no-op from the watches: %+v", *st.Plan)
	n, noop := st.Counts["unchanged"], st.Summary

	// A status update of every Deployment (kwok runs their pods) changes no generation: still
	// nothing read.
	dep, err := h.kube.AppsV1().Deployments(ns).Get(h.ctx, "svc-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep.Status.ObservedGeneration = dep.Generation + 100 // a status nobody would write but the API server takes
	if _, err := h.kube.AppsV1().Deployments(ns).UpdateStatus(h.ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the watch event
	if st = h.sync("status-" + uniq()); st.Plan.Listed != 0 || st.Plan.Requests != 0 || st.Summary != noop {
		t.Fatalf("after a status update: plan %+v (want 0 requests), summary %q", *st.Plan, st.Summary)
	}
	// The same revision again, nothing changed: answered from the watches without a render.
	if !strings.Contains(st.Message, "nothing changed since") {
		t.Fatalf("a sync of the same revision with nothing changed was rendered and planned: %q", st.Message)
	}

	// Deleted out of band: the next sync creates it again.
	if err := h.kube.AppsV1().Deployments(ns).Delete(h.ctx, "svc-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitReport("the deleted Deployment", has(drift.Deleted, "Deployment", "svc-1"))
	if st = h.sync("deleted-" + uniq()); st.Counts["create"] != 1 || st.Plan.Listed != 0 {
		t.Fatalf("after a delete: counts %v, plan %+v, summary %q", st.Counts, *st.Plan, st.Summary)
	}
	if _, err := h.kube.AppsV1().Deployments(ns).Get(h.ctx, "svc-1", metav1.GetOptions{}); err != nil {
		t.Fatalf("svc-1 not created again: %v", err)
	}
	// A sync that rendered, planned, wrote and told the detector says where its time went.
	if s := st.Steps; s == nil || s.Render <= 0 || s.Plan != st.Plan.Duration || s.Apply <= 0 || s.Drift <= 0 ||
		s.Fetch+s.Render+s.Plan+s.Apply+s.Drift > st.Duration {
		t.Fatalf("steps %+v of a sync of %s", s, st.Duration)
	}

	// Changed out of band (the spec, and an annotation): the next sync sees each change.
	h.edit("deployments", ns, "svc-2", `{"spec":{"template":{"spec":{"containers":[{"name":"svc-2","image":"httpd"}]}}}}`)
	h.waitReport("the edited Deployment", has(drift.Modified, "Deployment", "svc-2"))
	if st = h.sync("edited-" + uniq()); st.Counts["unchanged"] != n-1 || st.Plan.Listed != 0 {
		t.Fatalf("after an edit: counts %v, plan %+v, summary %q", st.Counts, *st.Plan, st.Summary)
	}
	h.edit("deployments", ns, "svc-3", `{"metadata":{"annotations":{"`+keys.Source+`":"elsewhere.yaml"}}}`)
	h.waitReport("the re-annotated Deployment", has(drift.Modified, "Deployment", "svc-3"))
	if st = h.sync("annotated-" + uniq()); st.Counts["unchanged"] != n-2 {
		t.Fatalf("after an annotation edit: counts %v, plan %+v, summary %q", st.Counts, *st.Plan, st.Summary)
	}

	// The inventory changed out of band is read again (its watched copy is trusted only while
	// it is the one the engine last read or wrote).
	cm, err := h.kube.CoreV1().ConfigMaps(h.ns).Get(h.ctx, "gpuctl-inventory", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Annotations["example.com/note"] = "touched"
	if _, err := h.kube.CoreV1().ConfigMaps(h.ns).Update(h.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if st = h.sync("inventory-" + uniq()); st.Plan.Requests == 0 {
		t.Fatalf("the edited inventory was not read again: plan %+v", *st.Plan)
	}

	// A Deployment that someone else created in the namespace with the inventory's label (a
	// team can label what it creates): the same revision is not answered from the watches
	// alone (a member the last sync did not have), and it is not pruned (it lacks gpuctl's
	// managed-by label).
	intruder := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "intruder", Namespace: ns,
		Labels: map[string]string{keys.ApplySetPartOf: dep.Labels[keys.ApplySetPartOf], "app": "intruder"}},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "intruder"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "intruder"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
	if _, err := h.kube.AppsV1().Deployments(ns).Create(h.ctx, intruder, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the watch event
	if st = h.sync("intruder-" + uniq()); strings.Contains(st.Message, "nothing changed since") {
		t.Fatalf("a foreign member was not seen: %q, plan %+v", st.Message, *st.Plan)
	}
	if _, err := h.kube.AppsV1().Deployments(ns).Get(h.ctx, "intruder", metav1.GetOptions{}); err != nil {
		t.Fatalf("the foreign Deployment is gone: %v (summary %q)", err, st.Summary)
	}
}
