package reconciler_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// team files for one namespace: a training job and an inference service.
func teamFiles(ns, image string, replicas int) map[string]string {
	return map[string]string{
		"quota.yaml": "kind: quota\nversion: v0.1\nmetadata: {name: q}\nusers:\n  " + ns + ": {gpu: 16, cpu: 64, memory: 256Gi}\n",
		"train.yaml": "kind: training\nversion: v0.1\njob: {name: sft, namespace: " + ns + "}\nenvironment: {image: " + image + "}\nresources: {gpu: 1, cpu: 1, memory: 1Gi}\n",
		"serve.yaml": "kind: inference\nversion: v0.1\njob: {name: chat, namespace: " + ns + "}\nenvironment: {image: vllm}\nservice: {port: 8000, replicas: " + itoa(replicas) + "}\nresources: {gpu: 1, cpu: 1, memory: 1Gi}\n",
	}
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + string(rune('0'+i))) }

// TestLifecycle: create -> update -> no-op (zero writes, zero dry-runs) -> recreate on an
// immutable change -> prune.
func TestLifecycle(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	ns := "life"
	plan, _ := e.sync(renderFiles(t, teamFiles(ns, "pytorch:1", 1)))
	// The PriorityClasses may exist already (other tests' inventories): created or adopted.
	if n := plan.Count(reconciler.ActionCreate) + plan.Count(reconciler.ActionUpdate); n != 8 {
		t.Errorf("%d creates and updates, want 8:\n%s", n, actions(plan))
	}
	for _, want := range []string{"create Namespace life", "create ResourceQuota life/q", "create Job life/sft", "create Deployment life/chat", "create Service life/svc-chat"} {
		if !strings.Contains(actions(plan), want) {
			t.Errorf("first sync lacks %q:\n%s", want, actions(plan))
		}
	}
	if _, err := e.kube.BatchV1().Jobs(ns).Get(e.ctx, "sft", metav1.GetOptions{}); err != nil {
		t.Fatalf("job not created: %v", err)
	}

	// update: replicas 1 -> 3
	plan, _ = e.sync(renderFiles(t, teamFiles(ns, "pytorch:1", 3)))
	if got := actions(plan); got != "update Deployment life/chat" {
		t.Fatalf("second sync:\n%s", got)
	}
	ch := find(plan, "Deployment", "chat")
	if len(ch.Diff) != 1 || ch.Diff[0].Path != "spec.replicas" || ch.Diff[0].New != int64(3) {
		t.Fatalf("diff %+v", ch.Diff)
	}
	if plan.Summary() != "1 to update, 7 unchanged; GPUs: +2 in default" {
		t.Errorf("summary %q", plan.Summary())
	}

	// no-op: no write, no dry-run
	e.resetCounts()
	plan, _ = e.sync(renderFiles(t, teamFiles(ns, "pytorch:1", 3)))
	if plan.HasChanges() {
		t.Fatalf("no-op sync plans:\n%s", actions(plan))
	}
	if w, d := e.count.writes.Load(), e.count.dryRuns.Load(); w != 0 || d != 0 {
		t.Fatalf("no-op sync sent %d writes and %d dry-runs", w, d)
	}

	// recreate: a Job's pod template is immutable
	plan, _ = e.sync(renderFiles(t, teamFiles(ns, "pytorch:2", 3)))
	ch = find(plan, "Job", "sft")
	if ch.Action != reconciler.ActionRecreate || !strings.Contains(ch.Reason, "immutable") {
		t.Fatalf("job change %s (%s)", ch.Action, ch.Reason)
	}
	job, err := e.kube.BatchV1().Jobs(ns).Get(e.ctx, "sft", metav1.GetOptions{})
	if err != nil || job.Spec.Template.Spec.Containers[0].Image != "pytorch:2" {
		t.Fatalf("job not recreated: %v", err)
	}

	// prune: the inference service leaves Git
	files := teamFiles(ns, "pytorch:2", 3)
	delete(files, "serve.yaml")
	e.opts.MaxPrune = 1
	e = newEnvSame(t, e)
	plan, _ = e.sync(renderFiles(t, files))
	if got := actions(plan); got != "delete Service life/svc-chat\ndelete Deployment life/chat" {
		t.Fatalf("prune sync:\n%s", got)
	}
	if _, err := e.kube.AppsV1().Deployments(ns).Get(e.ctx, "chat", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("deployment not pruned: %v", err)
	}
}

func newEnvSame(t *testing.T, e *env) *env { return newEnv(t, e.opts) }

func find(p *reconciler.Plan, kind, name string) *reconciler.Change {
	for _, c := range p.Changes {
		if c.Object.Kind == kind && c.Object.Name == name {
			return c
		}
	}
	return &reconciler.Change{}
}

// TestPruneSafety: unlabelled and opted-out members are never deleted; an empty render and an
// over-budget prune are refused and change nothing.
func TestPruneSafety(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	ns := "safety"
	files := map[string]string{"quota.yaml": "kind: quota\nversion: v0.1\nmetadata: {name: q}\nusers:\n  " + ns + ": {gpu: 4}\n"}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		files[n+".yaml"] = "kind: compute\nversion: v0.1\njob: {name: " + n + ", namespace: " + ns + "}\nenvironment: {image: nginx}\n"
	}
	e.sync(renderFiles(t, files))

	// opt one out, strip the ownership label from another
	for name, patch := range map[string]string{
		"a": `{"metadata":{"annotations":{"` + keys.Prune + `":"` + keys.PruneDisabled + `"}}}`,
		"b": `{"metadata":{"labels":{"` + keys.ManagedBy + `":null}}}`,
	} {
		if _, err := e.kube.AppsV1().Deployments(ns).Patch(e.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// empty render: refused, nothing written
	e.resetCounts()
	plan, err := e.manager.Plan(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.manager.Apply(e.ctx, plan, nil); !errors.Is(err, reconciler.ErrRefused) || !strings.Contains(err.Error(), "--allow-empty") {
		t.Fatalf("empty render: %v", err)
	}
	if e.count.writes.Load() != 0 {
		t.Fatalf("a refused plan wrote %d times", e.count.writes.Load())
	}

	// removing all but e: 4 deletes (c, d, f, g) of 12 members, over 25 %: refused
	keep := map[string]string{"quota.yaml": files["quota.yaml"], "e.yaml": files["e.yaml"]}
	plan, _ = e.manager.Plan(e.ctx, renderFiles(t, keep))
	if plan.Refused == nil || !strings.Contains(plan.Refused.Error(), "budget") {
		t.Fatalf("over-budget prune not refused: %v\n%s", plan.Refused, actions(plan))
	}
	if _, err := e.manager.Apply(e.ctx, plan, nil); !errors.Is(err, reconciler.ErrRefused) || e.count.writes.Load() != 0 {
		t.Fatalf("over-budget apply: %v, %d writes", err, e.count.writes.Load())
	}

	// with the budget lifted: c, d, f, g go; a (opted out) and b (unlabelled) stay
	e.opts.MaxPrune = 1
	e = newEnvSame(t, e)
	plan, _ = e.sync(renderFiles(t, keep))
	for name, want := range map[string]reconciler.Action{"a": reconciler.ActionSkipped, "b": reconciler.ActionSkipped, "c": reconciler.ActionDelete, "d": reconciler.ActionDelete, "g": reconciler.ActionDelete} {
		if got := find(plan, "Deployment", name).Action; got != want {
			t.Errorf("deployment %s: %s, want %s", name, got, want)
		}
		_, err := e.kube.AppsV1().Deployments(ns).Get(e.ctx, name, metav1.GetOptions{})
		if gone := apierrors.IsNotFound(err); gone != (want == reconciler.ActionDelete) {
			t.Errorf("deployment %s: gone=%v, want %v", name, gone, want == reconciler.ActionDelete)
		}
	}
}
