package reconciler_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/reconciler"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func deployment(ns, name, image string, replicas int64) *unstructured.Unstructured {
	labels := map[string]any{"app": name}
	return object("apps/v1", "Deployment", ns, name, map[string]any{"spec": map[string]any{
		"replicas": replicas,
		"selector": map[string]any{"matchLabels": labels},
		"template": map[string]any{"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}}},
	}})
}

// kubectlScale scales a Deployment as `kubectl scale` does: an update of the scale
// subresource under field manager kubectl.
func kubectlScale(t *testing.T, e *env, ns, name string, replicas int32) {
	t.Helper()
	sc := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if _, err := e.kube.AppsV1().Deployments(ns).UpdateScale(e.ctx, name, sc, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
}

func replicasOf(t *testing.T, e *env, ns, name string) (int32, string) {
	t.Helper()
	d, err := e.kube.AppsV1().Deployments(ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image
}

// TestRevisionTakesBackWhatItChanges: after `kubectl scale`, a plan
// of the same revision reports the conflict with a diff of only the fields gpuctl sets (a
// forced dry-run: no server defaults shown as removals); its failed apply does not stop the
// prune of a removed file's object; report mode leaves the drift alone (Plan.LeaveDrift);
// and a revision that changes the Deployment takes spec.replicas back from kubectl, saying so.
func TestRevisionTakesBackWhatItChanges(t *testing.T) {
	opts := reconciler.DefaultOptions()
	opts.MaxPrune = 1
	e := newEnv(t, opts)
	ns := "takeback"
	objs := func(image string, gone bool) []*unstructured.Unstructured {
		out := []*unstructured.Unstructured{namespace(ns), deployment(ns, "web", image, 1), configMap(ns, "kept", map[string]any{"k": "v"})}
		if gone {
			out = append(out, configMap(ns, "gone", map[string]any{"k": "v"}))
		}
		return out
	}
	e.sync(objs("nginx:1", true))
	kubectlScale(t, e, ns, "web", 4)

	// the same Deployment, and a removed file
	plan := e.plan(objs("nginx:1", false))
	c := find(plan, "Deployment", "web")
	if len(c.Conflicts) != 1 || c.Conflicts[0].Manager != "kubectl" || c.Conflicts[0].Field != ".spec.replicas" || len(c.TakeBack) != 0 {
		t.Fatalf("conflicts %+v, take back %+v", c.Conflicts, c.TakeBack)
	}
	if len(c.Diff) != 1 || c.Diff[0].Path != "spec.replicas" || c.Diff[0].Old != int64(4) || c.Diff[0].New != int64(1) || c.Predicted == nil {
		t.Fatalf("diff of a conflict: %+v (predicted %v)", c.Diff, c.Predicted != nil)
	}
	cs, err := e.apply(plan)
	if err == nil || !strings.Contains(err.Error(), `.spec.replicas is owned by "kubectl"`) {
		t.Fatalf("apply: %v", err)
	}
	if r := result(cs, "ConfigMap", "gone"); r.Action != reconciler.ActionDelete || r.Error != "" {
		t.Fatalf("the removed file's object: %s %q %q", r.Action, r.Reason, r.Error)
	}
	if _, err := e.kube.CoreV1().ConfigMaps(ns).Get(e.ctx, "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a conflict on another object stopped the prune: %v", err)
	}
	if n, _ := replicasOf(t, e, ns, "web"); n != 4 {
		t.Fatalf("replicas %d after a revision that does not change the Deployment, want 4", n)
	}

	// report mode: the drift is left alone, the sync succeeds
	plan = e.plan(objs("nginx:1", false))
	if n := plan.LeaveDrift(); n != 1 {
		t.Fatalf("LeaveDrift skipped %d changes, want 1:\n%s", n, actions(plan))
	}
	if c := find(plan, "Deployment", "web"); c.Action != reconciler.ActionSkipped || !strings.Contains(c.Reason, "drift left as it is") || c.Error != "" {
		t.Fatalf("left drift: %s %q %q", c.Action, c.Reason, c.Error)
	}
	if _, err := e.apply(plan); err != nil {
		t.Fatalf("apply with the drift left alone: %v", err)
	}
	if n, _ := replicasOf(t, e, ns, "web"); n != 4 {
		t.Fatalf("report mode changed replicas to %d", n)
	}

	// a revision that changes the Deployment: Git wins on what it declares
	plan = e.plan(objs("nginx:2", false))
	c = find(plan, "Deployment", "web")
	if len(c.TakeBack) != 1 || c.TakeBack[0].Manager != "kubectl" || c.TakeBack[0].Field != ".spec.replicas" || len(c.Conflicts) != 0 {
		t.Fatalf("take back %+v, conflicts %+v", c.TakeBack, c.Conflicts)
	}
	if plan.LeaveDrift() != 0 {
		t.Fatal("LeaveDrift skipped a change that the revision makes")
	}
	cs, err = e.apply(plan)
	if err != nil {
		t.Fatalf("apply of a revision that changes a scaled Deployment: %v", err)
	}
	if tb := result(cs, "Deployment", "web").TakenBack; len(tb) != 1 || reconciler.TakenBackText(tb) != `.spec.replicas from "kubectl"` {
		t.Fatalf("result's taken back fields: %+v", tb)
	}
	if n, image := replicasOf(t, e, ns, "web"); n != 1 || image != "nginx:2" {
		t.Fatalf("replicas %d, image %s; want 1 and nginx:2", n, image)
	}
	if plan = e.plan(objs("nginx:2", false)); plan.HasChanges() {
		t.Fatalf("not converged:\n%s", actions(plan))
	}
}

// TestFailedNamespaceKeepsItsPrunes: a Namespace whose apply fails (a label another manager
// owns) keeps the objects in it from being pruned in that sync; the prune of an object in
// another namespace goes ahead.
func TestFailedNamespaceKeepsItsPrunes(t *testing.T) {
	opts := reconciler.DefaultOptions()
	opts.MaxPrune = 1
	e := newEnv(t, opts)
	team := func() *unstructured.Unstructured {
		u := namespace("prune-block-a")
		u.SetLabels(map[string]string{"team": "a"})
		return u
	}
	objs := func(all bool) []*unstructured.Unstructured {
		out := []*unstructured.Unstructured{team(), namespace("prune-block-b"),
			configMap("prune-block-a", "kept", map[string]any{"k": "v"}), configMap("prune-block-b", "kept", map[string]any{"k": "v"})}
		if all {
			out = append(out, configMap("prune-block-a", "old", map[string]any{"k": "v"}), configMap("prune-block-b", "old", map[string]any{"k": "v"}))
		}
		return out
	}
	e.sync(objs(true))
	// kubectl label --overwrite: the Namespace's label now belongs to kubectl-label
	patch := []byte(`{"metadata":{"labels":{"team":"b"}}}`)
	if _, err := e.kube.CoreV1().Namespaces().Patch(e.ctx, "prune-block-a", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-label"}); err != nil {
		t.Fatal(err)
	}
	plan := e.plan(objs(false))
	cs, err := e.apply(plan)
	if err == nil || !strings.Contains(err.Error(), `is owned by "kubectl-label"`) {
		t.Fatalf("apply: %v", err)
	}
	if _, err := e.kube.CoreV1().ConfigMaps("prune-block-b").Get(e.ctx, "old", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the prune in another namespace did not run: %v", err)
	}
	var r reconciler.Result
	for _, x := range cs.Results {
		if x.Object.String() == "ConfigMap prune-block-a/old" {
			r = x
		}
	}
	if r.Action != reconciler.ActionSkipped || r.Reason != "not pruned: the apply of Namespace prune-block-a failed in this sync" {
		t.Errorf("prune in the failed Namespace: %s %q", r.Action, r.Reason)
	}
	if _, err := e.kube.CoreV1().ConfigMaps("prune-block-a").Get(e.ctx, "old", metav1.GetOptions{}); err != nil {
		t.Errorf("an object in the failed Namespace was pruned: %v", err)
	}
}
