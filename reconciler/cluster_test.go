package reconciler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/test/clusterfixture"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// TestQuotaRejectsPodOverGPUQuota: the ResourceQuota gpuctl renders is enforced by the API
// server: requests.nvidia.com/gpu counts GPUs.
func TestQuotaRejectsPodOverGPUQuota(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	e.sync(renderFiles(t, map[string]string{"q.yaml": "kind: quota\nversion: v0.1\nmetadata: {name: team}\nusers:\n  quota-team: {gpu: 2, cpu: 8, memory: 16Gi}\n"}))
	pod := func(name string, gpus int64) *corev1.Pod {
		rl := corev1.ResourceList{keys.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI),
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl}}}}}
	}
	// The quota controller must have computed the quota's usage before admission counts it.
	computed, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	if err := clusterfixture.QuotaComputed(computed, e.kube, "quota-team", "team"); err != nil {
		t.Fatalf("the quota controller never computed the quota: %v", err)
	}
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := e.kube.CoreV1().Pods("quota-team").Create(e.ctx, pod("fits", 2), metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("a pod within the quota was never admitted: %v", err)
	}
	_, err = e.kube.CoreV1().Pods("quota-team").Create(e.ctx, pod("over", 1), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") || !strings.Contains(err.Error(), "requests.nvidia.com/gpu") {
		t.Fatalf("a pod over the GPU quota was not rejected: %v", err)
	}
}

// TestPoolPlacementAndNodeLabels: a pool file labels its nodes; a job of that pool runs on
// them; a default-pool job stays off them; removing the node from the pool removes only the
// labels gpuctl gave it.
func TestPoolPlacementAndNodeLabels(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	pool := "kind: pool\nversion: v0.1\nmetadata: {name: place-pool}\nnodes:\n  gpu-h100-0: {gpu-type: H100-94G}\n  no-such-node: {}\n"
	job := "kind: training\nversion: v0.1\njob: {name: placed, namespace: default}\nenvironment: {image: x}\nresources: {pool: place-pool, gpu: 2, cpu: 1, memory: 1Gi}\n"
	other := "kind: training\nversion: v0.1\njob: {name: unpooled, namespace: default}\nenvironment: {image: x}\nresources: {gpu: 0, cpu: 1, memory: 1Gi}\n"
	plan, _ := e.sync(renderFiles(t, map[string]string{"pool.yaml": pool, "job.yaml": job, "other.yaml": other}))
	if c := find(plan, "Node", "no-such-node"); c.Action != reconciler.ActionSkipped || !strings.Contains(c.Reason, "not found") {
		t.Errorf("missing node: %s %q", c.Action, c.Reason)
	}
	node, _ := e.kube.CoreV1().Nodes().Get(e.ctx, "gpu-h100-0", metav1.GetOptions{})
	if node.Labels[keys.Pool] != "place-pool" {
		t.Fatalf("node labels %v", node.Labels)
	}
	if c := find(plan, "Node", "gpu-h100-0"); !strings.Contains(c.Reason, "node labeler") {
		t.Errorf("gpu-type should be left to the node labeler: %q", c.Reason)
	}
	if want := "pool place-pool declares gpu-type h100-94g on node gpu-h100-0, but the node labeler found h100-80g"; len(plan.Warnings) != 1 || !strings.HasPrefix(plan.Warnings[0], want) {
		t.Errorf("warnings %q, want one starting %q", plan.Warnings, want)
	}
	if node.Labels[keys.GPUType] != "h100-80g" {
		t.Errorf("the labeler's gpu-type was overwritten: %s", node.Labels[keys.GPUType])
	}
	for name, check := range map[string]func(string) bool{
		"placed":   func(n string) bool { return n == "gpu-h100-0" },
		"unpooled": func(n string) bool { return n != "gpu-h100-0" && n != "" },
	} {
		n := scheduledNode(t, e, "default", name)
		if !check(n) {
			t.Errorf("job %s ran on node %q", name, n)
		}
	}

	// the node leaves the pool: the pool label goes, the labeler's and kwok's labels stay
	pool2 := "kind: pool\nversion: v0.1\nmetadata: {name: place-pool}\nnodes:\n  no-such-node: {}\n"
	e.opts.MaxPrune = 1
	e = newEnvSame(t, e)
	plan, _ = e.sync(renderFiles(t, map[string]string{"pool.yaml": pool2}))
	if c := find(plan, "Node", "gpu-h100-0"); c.Action != reconciler.ActionUpdate {
		t.Fatalf("node change %s", c.Action)
	}
	node, _ = e.kube.CoreV1().Nodes().Get(e.ctx, "gpu-h100-0", metav1.GetOptions{})
	if _, ok := node.Labels[keys.Pool]; ok {
		t.Fatalf("pool label not removed: %v", node.Labels)
	}
	for _, k := range []string{keys.GPUType, keys.GPUCount, "type", corev1.LabelHostname} {
		if node.Labels[k] == "" {
			t.Errorf("label %s was removed: %v", k, node.Labels)
		}
	}
}

// scheduledNode waits for the pod of a Job to be scheduled and returns its node.
func scheduledNode(t *testing.T, e *env, ns, job string) string {
	t.Helper()
	var node string
	_ = wait.PollUntilContextTimeout(e.ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		pods, err := e.kube.CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
		if err != nil || len(pods.Items) == 0 {
			return false, nil
		}
		node = pods.Items[0].Spec.NodeName
		return node != "", nil
	})
	return node
}

// TestConflictReported: a field changed by another manager (kubectl edit) is reported with
// that manager's name and not overwritten while the revision leaves the object unchanged,
// unless forced; a revision that changes the object takes it back (Git wins).
func TestConflictReported(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	files := func(replicas int) map[string]string {
		return map[string]string{"svc.yaml": "kind: compute\nversion: v0.1\njob: {name: web, namespace: default}\nenvironment: {image: nginx}\nservice: {replicas: " + itoa(replicas) + "}\n"}
	}
	e.sync(renderFiles(t, files(1)))
	edit := func(replicas int32) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // as kubectl edit does
			d, err := e.kube.AppsV1().Deployments("default").Get(e.ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Spec.Replicas = &replicas
			_, err = e.kube.AppsV1().Deployments("default").Update(e.ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	replicas := func() int32 {
		d, err := e.kube.AppsV1().Deployments("default").Get(e.ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas
	}
	edit(5)
	plan, err := e.manager.Plan(e.ctx, renderFiles(t, files(1)))
	if err != nil {
		t.Fatal(err)
	}
	c := find(plan, "Deployment", "web")
	if len(c.Conflicts) != 1 || c.Conflicts[0].Manager != "kubectl-edit" || c.Conflicts[0].Field != ".spec.replicas" {
		t.Fatalf("conflicts %+v", c.Conflicts)
	}
	cs, err := e.manager.Apply(e.ctx, plan, nil)
	if err == nil || !strings.Contains(err.Error(), `.spec.replicas is owned by "kubectl-edit"`) || len(cs.Failed()) != 1 {
		t.Fatalf("apply of a conflict: %v", err)
	}
	if n := replicas(); n != 5 {
		t.Fatalf("the conflicting field was overwritten: %d", n)
	}
	// a revision that changes the object: Git wins on the fields it declares
	plan, _ = e.sync(renderFiles(t, files(2)))
	if c := find(plan, "Deployment", "web"); len(c.TakeBack) != 1 || c.TakeBack[0].Manager != "kubectl-edit" {
		t.Fatalf("take back %+v", c.TakeBack)
	}
	if n := replicas(); n != 2 {
		t.Fatalf("a revision that changes replicas left them at %d", n)
	}
	// forced: taken back on an unchanged revision too
	edit(5)
	e.opts.Force = true
	e = newEnvSame(t, e)
	e.sync(renderFiles(t, files(2)))
	if n := replicas(); n != 2 {
		t.Fatalf("forced apply left replicas at %d", n)
	}
}

// TestAPIServerGoesAwayMidSync: writes start failing part-way; the sync reports errors,
// prunes nothing, the inventory still covers everything applied, and the next sync converges.
func TestAPIServerGoesAwayMidSync(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	e.opts.Concurrency = 1
	e = newEnvSame(t, e)
	files := map[string]string{"q.yaml": "kind: quota\nversion: v0.1\nmetadata: {name: q}\nusers:\n  flaky: {gpu: 4}\n"}
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		files[n+".yaml"] = "kind: compute\nversion: v0.1\njob: {name: " + n + ", namespace: flaky}\nenvironment: {image: nginx}\nservice: {port: 80}\n"
	}
	objs := renderFiles(t, files)
	plan, err := e.manager.Plan(e.ctx, objs)
	if err != nil {
		t.Fatal(err)
	}
	e.count.failAfter.Store(int64(e.count.writes.Load()) + 9) // the inventory, then 8 objects
	cs, err := e.manager.Apply(e.ctx, plan, nil)
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("expected connection errors, got %v", err)
	}
	if len(cs.Failed()) == 0 || len(cs.Failed()) == len(cs.Results) {
		t.Fatalf("%d of %d failed; expected a partial sync", len(cs.Failed()), len(cs.Results))
	}
	inv, err := e.kube.CoreV1().ConfigMaps(keys.SystemNamespace).Get(e.ctx, e.opts.InventoryName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gks := inv.Annotations[keys.ApplySetGroupKinds]
	for _, want := range []string{"Deployment.apps", "Service", "Namespace", "ResourceQuota", "PriorityClass.scheduling.k8s.io"} {
		if !strings.Contains(gks, want) {
			t.Errorf("inventory group-kinds %q lack %s", gks, want)
		}
	}

	healthy := newEnvSame(t, e)
	plan, cs = healthy.sync(objs)
	if len(cs.Failed()) != 0 || plan.Count(reconciler.ActionCreate) == 0 {
		t.Fatalf("recovery sync: %d failed, %d created", len(cs.Failed()), plan.Count(reconciler.ActionCreate))
	}
	plan, _ = healthy.sync(objs)
	if plan.HasChanges() {
		t.Fatalf("not converged:\n%s", actions(plan))
	}
}
