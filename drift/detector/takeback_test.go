package detector_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/drift/detector"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestScaleDoesNotBlockLaterSyncs: after `kubectl scale` of a managed
// Deployment, in report mode, a revision that leaves the Deployment unchanged syncs and leaves
// the replicas scaled; one that removes a file prunes it; one that changes the Deployment's
// image takes spec.replicas back from kubectl, says so in the status and records it in the
// drift history as taken-back.
func TestScaleDoesNotBlockLaterSyncs(t *testing.T) {
	run := uniq()
	ns := "drift-takeback-" + run
	web := func(image string) string {
		return "kind: compute\nversion: v0.1\njob: {name: web, namespace: " + ns + "}\nenvironment: {image: " + image + "}\nservice: {replicas: 1}\n"
	}
	cm := func(name, value string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: " + ns + "}\ndata: {k: " + value + "}\n"
	}
	h := newHarness(t, "takeback-"+run, detector.Options{Mode: drift.ModeReport},
		map[string]string{"web.yaml": web("nginx:1"), "other.yaml": cm("other", "a"), "gone.yaml": cm("gone", "a")}, ns)
	deployment := func() (int32, string) {
		d, err := h.kube.AppsV1().Deployments(ns).Get(h.ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image
	}
	sc := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 4}}
	if _, err := h.kube.AppsV1().Deployments(ns).UpdateScale(h.ctx, "web", sc, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	h.waitReport("the scaled Deployment", has(drift.Modified, "Deployment", "web"))
	applied := func(what string, change func()) daemon.Status {
		t.Helper()
		before, _, _ := h.status.Read(h.ctx)
		change()
		return h.waitStatus(what, func(s daemon.Status) bool {
			return s.Revision != before.Revision && s.Result != daemon.ResultPending && s.Result != ""
		})
	}

	st := applied("a revision that leaves the Deployment unchanged", func() { h.write("other.yaml", cm("other", "b")) })
	if st.Result != daemon.ResultSucceeded || st.AppliedRevision != st.Revision || len(st.TakenBack) != 0 {
		t.Fatalf("status %+v", st)
	}
	if n, _ := deployment(); n != 4 {
		t.Fatalf("report mode changed the scaled replicas to %d", n)
	}

	st = applied("a revision that removes a file", func() {
		if err := os.Remove(filepath.Join(h.dir, "gone.yaml")); err != nil {
			t.Fatal(err)
		}
	})
	if st.Result != daemon.ResultSucceeded {
		t.Fatalf("status %+v", st)
	}
	if _, err := h.kube.CoreV1().ConfigMaps(ns).Get(h.ctx, "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the removed file's ConfigMap was not pruned: %v", err)
	}

	st = applied("a revision that changes the Deployment", func() { h.write("web.yaml", web("nginx:2")) })
	if st.Result != daemon.ResultSucceeded || len(st.TakenBack) != 1 ||
		!strings.HasPrefix(st.TakenBack[0], "Deployment "+ns+`/web: took back .spec.replicas from "kubectl"`) {
		t.Fatalf("status: result %s, message %q, taken back %q, errors %q", st.Result, st.Message, st.TakenBack, st.Errors)
	}
	if n, image := deployment(); n != 1 || image != "nginx:2" {
		t.Fatalf("replicas %d, image %s; want Git's 1 and nginx:2", n, image)
	}
	h.waitReport("the drift taken back", hasNot(drift.Modified, "Deployment", "web"))
	var hist []drift.Entry
	h.poll("the stored history", func() (bool, string) {
		_, hist, _ = h.store.Read(h.ctx)
		return countChange(hist, drift.TakenBack) == 1, changes(hist)
	})
	for _, e := range hist {
		if e.Change == drift.TakenBack && (e.Item.Object.Name != "web" || len(e.Item.Fields) != 1 || e.Item.Fields[0].Path != "spec.replicas" ||
			e.Item.Manager != "kubectl" || toInt(e.Item.Fields[0].Live) != 4 || toInt(e.Item.Fields[0].Desired) != 1) {
			t.Fatalf("taken-back entry %+v", e.Item)
		}
	}
	if n := countChange(hist, drift.Resolved); n != 0 {
		t.Errorf("the taken-back drift is also recorded as resolved: %s", changes(hist))
	}
}
