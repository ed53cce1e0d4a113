package reconciler_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deferredRender renders files with cache as the daemon does (render.Options.Deferred): the
// workloads that the cache holds come as heads, their bodies in the result's Bodies.
func deferredRender(t *testing.T, cache *render.Cache, files map[string]string) *render.Result {
	t.Helper()
	fs, err := render.MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	res, err := render.New(render.Options{Cache: cache, Deferred: true}).Render(fs, "/repo")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// heads returns the names of res's objects that hold their head alone (no body decoded).
func heads(res *render.Result) []string {
	var out []string
	for _, u := range res.Objects {
		if _, body := u.Object["spec"]; !body && res.Bodies.Deferred(u) {
			out = append(out, u.GetKind()+" "+u.GetName())
		}
	}
	return out
}

// TestDeferredBodies: a plan of a deferred render (reconciler.PlanDeferred, the daemon's) reads
// the body of a workload only where it must, and decides as a plan of whole objects does:
// creates whole objects, leaves a no-op's workloads undecoded, finds a change made out of band
// and an edit, with the same applied-hashes as a plan of the same files rendered whole.
func TestDeferredBodies(t *testing.T) {
	ns := "deferred"
	e := forcingEnv(t, ns) // a field scaled by hand is taken back
	cache := render.NewCache(0)
	files := func(image string, replicas int) map[string]string {
		f := teamFiles(ns, image, replicas)
		delete(f, "quota.yaml") // the render would read the workloads' requests (checkQuotaRequests)
		return f
	}
	syncDeferred := func(res *render.Result) *reconciler.Plan {
		t.Helper()
		plan, err := e.manager.PlanDeferred(e.ctx, res.Objects, res.Bodies)
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		if _, err := e.manager.Apply(e.ctx, plan, nil); err != nil {
			t.Fatalf("apply: %v", err)
		}
		return plan
	}

	// The first render hands out heads already (what the cache will hand out from then on).
	res := deferredRender(t, cache, files("pytorch:1", 1))
	if got := heads(res); len(got) != 2 {
		t.Fatalf("heads handed out: %q, want the Job and the Deployment", got)
	}
	plan := syncDeferred(res)
	if !strings.Contains(actions(plan), "create Job deferred/sft") || !strings.Contains(actions(plan), "create Deployment deferred/chat") {
		t.Fatalf("first sync:\n%s", actions(plan))
	}
	if !strings.Contains(plan.Summary(), "GPUs: +2 in default") {
		t.Errorf("summary %q: the GPUs of the deferred workloads not counted", plan.Summary())
	}
	job, err := e.kube.BatchV1().Jobs(ns).Get(e.ctx, "sft", metav1.GetOptions{})
	if err != nil || len(job.Spec.Template.Spec.Containers) != 1 || job.Spec.Template.Spec.Containers[0].Image != "pytorch:1" {
		t.Fatalf("the Job was not created whole: %v", err)
	}
	if got := heads(res); len(got) != 2 {
		t.Errorf("after the sync, heads %q: the plan and the apply keep no body", got)
	}

	// A plan of the same files rendered whole agrees: the same applied-hashes, nothing to do.
	if p := e.plan(renderFiles(t, files("pytorch:1", 1))); p.HasChanges() {
		t.Fatalf("a plan of whole objects after the deferred sync:\n%s", actions(p))
	}
	for _, u := range res.Objects {
		if h := u.GetAnnotations()[keys.AppliedHash]; u.GetKind() == "Job" && h != job.Annotations[keys.AppliedHash] {
			t.Errorf("the live Job's applied-hash %q, the deferred object's %q", job.Annotations[keys.AppliedHash], h)
		}
	}

	// No-op from the cache: heads only, no write, no dry-run, and no body decoded.
	e.resetCounts()
	res = deferredRender(t, cache, files("pytorch:1", 1))
	if plan = syncDeferred(res); plan.HasChanges() {
		t.Fatalf("no-op:\n%s", actions(plan))
	}
	if w, d := e.count.writes.Load(), e.count.dryRuns.Load(); w != 0 || d != 0 {
		t.Fatalf("no-op sent %d writes and %d dry-runs", w, d)
	}
	if got := heads(res); len(got) != 2 {
		t.Errorf("no-op: heads %q after the plan", got)
	}
	if n := res.Bodies.Decoded(); n != 2 {
		// A plan without watches compares the values of each listed member (2); the hashes
		// are those the last plan made (prepare decoded none).
		t.Errorf("no-op: %d bodies decoded, want 2 (the compare of each listed workload)", n)
	}
	if p := e.plan(renderFiles(t, files("pytorch:1", 1))); p.HasChanges() {
		t.Fatalf("a plan of whole objects after a no-op of heads:\n%s", actions(p))
	}

	// Out of band: the Deployment scaled by hand is found (its body compared) and scaled back.
	d, err := e.kube.AppsV1().Deployments(ns).Get(e.ctx, "chat", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	five := int32(5)
	d.Spec.Replicas = &five
	if _, err := e.kube.AppsV1().Deployments(ns).Update(e.ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-scale"}); err != nil {
		t.Fatal(err)
	}
	plan = syncDeferred(deferredRender(t, cache, files("pytorch:1", 1)))
	if got := actions(plan); got != "update Deployment deferred/chat" {
		t.Fatalf("after a scale out of band:\n%s", got)
	}
	if d, err = e.kube.AppsV1().Deployments(ns).Get(e.ctx, "chat", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 1 {
		t.Fatalf("not scaled back to 1: %v", err)
	}

	// An edit: the edited workload is decoded and updated, the other stays a head.
	res = deferredRender(t, cache, files("pytorch:1", 3))
	plan = syncDeferred(res)
	if got := actions(plan); got != "update Deployment deferred/chat" {
		t.Fatalf("edit:\n%s", got)
	}
	if c := find(plan, "Deployment", "chat"); len(c.Diff) != 1 || c.Diff[0].Path != "spec.replicas" {
		t.Errorf("edit's diff %+v", c.Diff)
	}
	if got := heads(res); len(got) != 1 || got[0] != "Job sft" {
		t.Errorf("edit: heads %q, want the Job alone (the Deployment was updated)", got)
	}
	if n := res.Bodies.Decoded(); n != 3 {
		// The Deployment's new content hashed, then held for its dry-run and apply; the Job's
		// listed values compared.
		t.Errorf("edit: %d bodies decoded, want 3", n)
	}
	if d, err = e.kube.AppsV1().Deployments(ns).Get(e.ctx, "chat", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 3 {
		t.Fatalf("edit not applied: %v", err)
	}
}

// TestDeferredLeavesAForeignObject: a Deployment that someone else created where a deferred
// workload would go is refused (not taken over, not written), from a cold render and again
// from the cache when the plan knows the workload's hash already; force does not change that.
func TestDeferredLeavesAForeignObject(t *testing.T) {
	ns := "deferred-foreign"
	e := forcingEnv(t, ns)
	files := teamFiles(ns, "pytorch:1", 1)
	delete(files, "quota.yaml")
	foreign := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: ns, Labels: map[string]string{"app": "theirs"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "theirs"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "theirs"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "theirs:1"}}},
			},
		},
	}
	if _, err := e.kube.AppsV1().Deployments(ns).Create(e.ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cache := render.NewCache(0)
	for _, what := range []string{"cold", "cached"} {
		res := deferredRender(t, cache, files)
		plan, err := e.manager.PlanDeferred(e.ctx, res.Objects, res.Bodies)
		if err != nil {
			t.Fatalf("%s: plan: %v", what, err)
		}
		if got := failures(plan); !strings.Contains(got, "Deployment "+ns+"/chat: ") || !strings.Contains(got, reconciler.ErrNotCreatedByGpuctl.Error()) {
			t.Fatalf("%s: the foreign Deployment is not refused:\n%s", what, got)
		}
		_, _ = e.manager.Apply(e.ctx, plan, nil) // the refused change is skipped; the Job is created
		d, err := e.kube.AppsV1().Deployments(ns).Get(e.ctx, "chat", metav1.GetOptions{})
		if err != nil || d.Spec.Template.Spec.Containers[0].Image != "theirs:1" || d.Labels[keys.ManagedBy] != "" {
			t.Fatalf("%s: the foreign Deployment was written: %v", what, err)
		}
	}
}
