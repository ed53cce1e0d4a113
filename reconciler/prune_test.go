package reconciler_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// TestPruneKeepsMetadata: a plan keeps of each member it prunes its kind and metadata alone
// (issue 32: pruning 10,000 Jobs held every Job whole, with its managedFields, and peaked at
// 325 MiB), yet counts the GPUs the prunes free and decides each prune as before; with
// Options.WholePrunes (gpuctl diff, which shows what goes) the same plan keeps them whole.
func TestPruneKeepsMetadata(t *testing.T) {
	opts := reconciler.DefaultOptions()
	opts.MaxPrune = 1
	e := newEnv(t, opts)
	ns := "prunemeta"
	files := teamFiles(ns, "pytorch:1", 2) // a Job of 1 GPU, a Deployment of 2 × 1 GPU
	e.sync(renderFiles(t, files))
	// Another training job keeps the PriorityClasses desired (shared with other inventories).
	kept := map[string]string{"quota.yaml": files["quota.yaml"], "keep.yaml": strings.ReplaceAll(files["train.yaml"], "name: sft", "name: keep")}

	opts.WholePrunes = true
	whole, err := newEnv(t, opts).manager.Plan(e.ctx, renderFiles(t, kept))
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := e.sync(renderFiles(t, kept))

	const wantActions = "delete Service prunemeta/svc-chat\ndelete Deployment prunemeta/chat\ncreate Job prunemeta/keep\ndelete Job prunemeta/sft"
	for name, p := range map[string]*reconciler.Plan{"whole": whole, "metadata": plan} {
		if got := actions(p); got != wantActions {
			t.Errorf("%s plan:\n%s\nwant\n%s", name, got, wantActions)
		}
		if !strings.HasSuffix(p.Summary(), "GPUs: -2 in default") {
			t.Errorf("%s plan's summary %q: want the 3 GPUs the prunes free, less the 1 of the new Job", name, p.Summary())
		}
	}
	for _, kind := range []string{"Job", "Deployment", "Service"} {
		c := find(plan, kind, map[string]string{"Job": "sft", "Deployment": "chat", "Service": "svc-chat"}[kind])
		if c.Live == nil {
			t.Fatalf("%s: no live object", c.Object)
		}
		for field := range c.Live.Object {
			if field != "apiVersion" && field != "kind" && field != "metadata" {
				t.Errorf("%s: the plan kept its %s", c.Object, field)
			}
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(c.Live.Object, "metadata", "managedFields"); found {
			t.Errorf("%s: the plan kept its managedFields", c.Object)
		}
		if c.Live.GetLabels()[keys.ManagedBy] != keys.ManagedByValue || c.Live.GetAnnotations()[keys.Source] == "" || c.Live.GetUID() == "" {
			t.Errorf("%s: metadata %v", c.Object, c.Live.Object["metadata"])
		}
		if w := find(whole, c.Object.Kind, c.Object.Name); w.Live == nil || w.Live.Object["spec"] == nil {
			t.Errorf("%s with WholePrunes: live object %v, want it whole", c.Object, w.Live)
		}
	}
	if _, err := e.kube.BatchV1().Jobs(ns).Get(e.ctx, "sft", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("job not pruned: %v", err)
	}
	if _, err := e.kube.AppsV1().Deployments(ns).Get(e.ctx, "chat", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deployment not pruned: %v", err)
	}
}

// TestMultiKueueCopyIsNotPruned: in a MultiKueue worker, Kueue's copy of a manager's job
// carries the manager's gpuctl labels (the inventory label, managed-by, its source), which may
// be this cluster's too: the worker's sync does not prune it (the manager's job, in Git there),
// and says nothing of it. The same Job without MultiKueue's two labels is pruned, and so is a
// Deployment or Service that a tenant gave the two labels (MultiKueue copies Jobs and JobSets).
// In a cluster that is no worker (render.Result.MultiKueueWorker unset: Plan, or a render for
// a cluster that multiKueue does not list), the labels are believed of nothing: a Job that
// gpuctl applied and a tenant's kubectl gave both is pruned once its file leaves Git.
func TestMultiKueueCopyIsNotPruned(t *testing.T) {
	opts := reconciler.DefaultOptions()
	opts.MaxPrune = 1
	e := newEnv(t, opts)
	ns := "mkcopy"
	files := teamFiles(ns, "pytorch:1", 1)
	e.sync(renderFiles(t, files))
	sft, err := e.kube.BatchV1().Jobs(ns).Get(e.ctx, "sft", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, extra := range map[string]map[string]string{
		"copy":  {keys.MultiKueueOrigin: "multikueue", keys.KueuePrebuiltWorkload: "job-copy-1a2b3"},
		"stray": nil,
	} {
		j := sft.DeepCopy()
		j.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: ns, Labels: sft.Labels, Annotations: map[string]string{
			keys.Source: "clusters/hub/teams/" + ns + "/" + name + ".yaml"}}
		j.Spec.Selector, j.Spec.ManualSelector = nil, nil
		for _, k := range []string{"batch.kubernetes.io/controller-uid", "controller-uid", "batch.kubernetes.io/job-name", "job-name"} {
			delete(j.Spec.Template.Labels, k) // the Job controller's, set again for this Job
		}
		j.Labels = map[string]string{}
		for k, v := range sft.Labels {
			j.Labels[k] = v
		}
		for k, v := range extra {
			j.Labels[k] = v
		}
		if _, err := e.kube.BatchV1().Jobs(ns).Create(e.ctx, j, metav1.CreateOptions{FieldManager: "kueue-multikueue"}); err != nil {
			t.Fatal(err)
		}
	}
	// A tenant's kubectl puts MultiKueue's labels on the Deployment and Service that gpuctl
	// applied, and the file goes from Git: MultiKueue copies no Deployment or Service (nor
	// any kind but a Job or JobSet), so the labels keep neither from its prune.
	forged := []byte(`{"metadata":{"labels":{"` + keys.MultiKueueOrigin + `":"multikueue","` + keys.KueuePrebuiltWorkload + `":"job-chat-1a2b3"}}}`)
	if _, err := e.kube.AppsV1().Deployments(ns).Patch(e.ctx, "chat", types.MergePatchType, forged, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.kube.CoreV1().Services(ns).Patch(e.ctx, "svc-chat", types.MergePatchType, forged, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	delete(files, "serve.yaml")
	notWorker, err := e.manager.Plan(e.ctx, renderFiles(t, files))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"copy", "stray"} {
		if c := find(notWorker, "Job", name); c.Action != reconciler.ActionDelete {
			t.Errorf("outside a MultiKueue worker, the Job %s: %q, want delete\n%s", name, c.Action, actions(notWorker))
		}
	}
	// The sync of a worker's render (as render.Render sets it for a worker that multiKueue lists).
	plan, err := e.manager.PlanRender(e.ctx, &render.Result{Objects: renderFiles(t, files), MultiKueueWorker: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.manager.Apply(e.ctx, plan, nil); err != nil {
		t.Fatal(err)
	}
	for kind, name := range map[string]string{"Deployment": "chat", "Service": "svc-chat"} {
		if c := find(plan, kind, name); c.Action != reconciler.ActionDelete {
			t.Errorf("the %s with forged MultiKueue labels, gone from Git: %q, want delete\n%s", kind, c.Action, actions(plan))
		}
	}
	if c := find(plan, "Job", "copy"); c.Action != "" {
		t.Errorf("the sync plans %s of the MultiKueue copy: %s", c.Action, c.Reason)
	}
	if c := find(plan, "Job", "stray"); c.Action != reconciler.ActionDelete {
		t.Errorf("the Job with gpuctl's labels and no MultiKueue label: %q, want delete\n%s", c.Action, actions(plan))
	}
	if _, err := e.kube.BatchV1().Jobs(ns).Get(e.ctx, "copy", metav1.GetOptions{}); err != nil {
		t.Fatalf("the MultiKueue copy: %v", err)
	}
	if _, err := e.kube.BatchV1().Jobs(ns).Get(e.ctx, "stray", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the stray Job: %v, want it pruned", err)
	}
}
