package detector_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/drift/detector"
	"github.com/gpuctl/gpuctl/internal/keys"
	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// shadowJob is a GPU Job created by hand (kubectl create) in a namespace.
func (h *harness) shadowJob(ns, name string, gpus int64) {
	h.t.Helper()
	rl := corev1.ResourceList{keys.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{Limits: rl, Requests: rl}}}}}}}
	if _, err := h.kube.BatchV1().Jobs(ns).Create(h.ctx, job, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		h.t.Fatal(err)
	}
}

// TestReportMode: out-of-band changes are reported with who made them, and left as they are:
// a kubectl-edit of a Deployment and of a quota, a deleted Job, a node label changed by hand,
// a GPU Job that is not in Git. Server defaults and status updates (a Job running to
// completion) are never drift; g8s.host/drift: ignore silences an object.
func TestReportMode(t *testing.T) {
	run := uniq()
	ns := "drift-report-" + run
	h := newHarness(t, "report-"+run, detector.Options{Mode: drift.ModeReport}, files(ns, "report-pool", "gpu-t4-0"))
	h.unlabel("gpu-t4-0")

	// No false drift while the Job runs to completion and controllers fill in status.
	h.poll("the training job to complete", func() (bool, string) {
		j, err := h.kube.BatchV1().Jobs(ns).Get(h.ctx, "train", metav1.GetOptions{})
		return err == nil && j.Status.Succeeded > 0, "job not complete"
	})
	time.Sleep(time.Second)
	if r, _, _ := h.det.Current(); len(r.Items) != 0 {
		t.Fatalf("drift without any out-of-band change: %s", itemsOf(r))
	}

	h.edit("deployments", ns, "web", `{"spec":{"replicas":3}}`)
	r, took := h.waitReport("the edited Deployment", has(drift.Modified, "Deployment", "web"))
	t.Logf("kubectl-edit reported after %s", took.Round(time.Millisecond))
	it := item(r, drift.Modified, "Deployment", "web")
	if len(it.Fields) != 1 || it.Fields[0].Path != "spec.replicas" || it.Manager != "kubectl-edit" || it.Fields[0].Operation != "Update" ||
		it.Fields[0].Time == nil || it.Source != "web.yaml" {
		t.Fatalf("item %+v", it)
	}
	if live, desired := it.Fields[0].Live, it.Fields[0].Desired; toInt(live) != 3 || toInt(desired) != 1 {
		t.Fatalf("replicas live %v desired %v, want 3 and 1", live, desired)
	}

	h.edit("resourcequotas", ns, "team", `{"spec":{"hard":{"requests.nvidia.com/gpu":"64"}}}`)
	r, _ = h.waitReport("the edited quota", has(drift.Modified, "ResourceQuota", "team"))
	if it := item(r, drift.Modified, "ResourceQuota", "team"); it.Fields[0].Path != "spec.hard.requests.nvidia.com/gpu" || it.Manager != "kubectl-edit" {
		t.Fatalf("quota item %+v", it)
	}

	h.edit("jobs", ns, "train", `{"spec":{"parallelism":2}}`) // a field gpuctl sets that a Job may change
	r, _ = h.waitReport("the edited Job", has(drift.Modified, "Job", "train"))
	if it := item(r, drift.Modified, "Job", "train"); it.Fields[0].Path != "spec.parallelism" || it.Manager != "kubectl-edit" || toInt(it.Fields[0].Live) != 2 {
		t.Fatalf("job item %+v", it)
	}
	if err := h.kube.BatchV1().Jobs(ns).Delete(h.ctx, "train", metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	h.waitReport("the deleted Job", func(r drift.Report) bool {
		it := item(r, drift.Deleted, "Job", "train")
		return it != nil && strings.Contains(it.Message, "deleted from the cluster") && it.Source == "train.yaml" &&
			item(r, drift.Modified, "Job", "train") == nil // one item per object: deleted replaces modified
	})

	h.edit("nodes", "", "gpu-t4-0", `{"metadata":{"labels":{"g8s.host/pool":"stolen"}}}`)
	r, _ = h.waitReport("the node label", has(drift.NodeLabel, "Node", "gpu-t4-0"))
	if it := item(r, drift.NodeLabel, "Node", "gpu-t4-0"); it.Manager != "kubectl-label" || it.Fields[0].Live != "stolen" || it.Fields[0].Desired != "report-pool" {
		t.Fatalf("node item %+v", it)
	}

	h.shadowJob(ns, "sneaky", 4)
	r, _ = h.waitReport("the shadow job", has(drift.Shadow, "Job", "sneaky"))
	if it := item(r, drift.Shadow, "Job", "sneaky"); it.GPUs != 4 || it.Manager != "kubectl-create" {
		t.Fatalf("shadow item %+v", it)
	}

	// Report mode leaves everything as it is, also through a sync of the same revision.
	time.Sleep(time.Second)
	h.d.SyncOnce(h.ctx, "")
	if _, err := h.kube.BatchV1().Jobs(ns).Get(h.ctx, "train", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("report mode recreated the deleted Job: %v", err)
	}
	if _, err := h.kube.BatchV1().Jobs(ns).Get(h.ctx, "sneaky", metav1.GetOptions{}); err != nil {
		t.Errorf("the shadow Job was deleted in report mode: %v", err)
	}
	if d, _ := h.kube.AppsV1().Deployments(ns).Get(h.ctx, "web", metav1.GetOptions{}); *d.Spec.Replicas != 3 {
		t.Errorf("report mode reverted the edit: replicas %d", *d.Spec.Replicas)
	}
	r, _ = h.waitReport("everything after the sync", func(r drift.Report) bool { return len(r.Items) == 5 })

	// Recorded in the cluster, in metrics, and as Events.
	stored, hist, err := h.store.Read(h.ctx)
	if err != nil || len(stored.Items) != 5 || stored.Mode != drift.ModeReport {
		t.Fatalf("stored report: %v, %s", err, itemsOf(stored))
	}
	if n := countChange(hist, drift.Detected); n < 5 {
		t.Errorf("history has %d detected entries, want 5 or more: %+v", n, hist)
	}
	var m dto.Metric
	if err := h.metrics.Drift.WithLabelValues("Deployment", "modified").Write(&m); err != nil || m.GetGauge().GetValue() != 1 {
		t.Errorf("gpuctl_drift_objects{Deployment,modified} = %v (%v)", m.GetGauge().GetValue(), err)
	}
	h.poll("the DriftModified event", func() (bool, string) {
		evs, err := h.kube.CoreV1().Events(ns).List(h.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=DriftModified"})
		return err == nil && len(evs.Items) > 0 && strings.Contains(evs.Items[0].Message, "kubectl-edit"), "no event"
	})

	// Reverting by hand resolves; the ignore annotation silences.
	h.edit("resourcequotas", ns, "team", `{"spec":{"hard":{"requests.nvidia.com/gpu":"8"}}}`)
	h.waitReport("the reverted quota", hasNot(drift.Modified, "ResourceQuota", "team"))
	h.edit("deployments", ns, "web", `{"metadata":{"annotations":{"g8s.host/drift":"ignore"}}}`)
	h.waitReport("the ignored Deployment", hasNot(drift.Modified, "Deployment", "web"))
	_, hist, _ = h.det.Current()
	if countChange(hist, drift.Resolved) < 2 {
		t.Errorf("history: %+v", hist)
	}
}

// TestCorrectMode: an edit is reverted and a deleted object recreated, each recorded as
// corrected; a node label is put back; a shadow workload is only reported.
func TestCorrectMode(t *testing.T) {
	run := uniq()
	ns := "drift-correct-" + run
	h := newHarness(t, "correct-"+run, detector.Options{Mode: drift.ModeCorrect}, files(ns, "correct-pool", "gpu-a100-1"))
	h.unlabel("gpu-a100-1")

	start := time.Now()
	h.edit("deployments", ns, "web", `{"spec":{"replicas":4}}`)
	h.poll("replicas back to 1", func() (bool, string) {
		d, err := h.kube.AppsV1().Deployments(ns).Get(h.ctx, "web", metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 1, "not corrected"
	})
	t.Logf("edit corrected after %s", time.Since(start).Round(time.Millisecond))
	h.waitReport("the corrected edit resolved", hasNot(drift.Modified, "Deployment", "web"))

	if err := h.kube.AppsV1().Deployments(ns).Delete(h.ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.poll("the Deployment recreated", func() (bool, string) {
		d, err := h.kube.AppsV1().Deployments(ns).Get(h.ctx, "web", metav1.GetOptions{})
		return err == nil && d.DeletionTimestamp == nil, "not recreated"
	})

	h.edit("nodes", "", "gpu-a100-1", `{"metadata":{"labels":{"g8s.host/pool":"elsewhere"}}}`)
	h.poll("the pool label put back", func() (bool, string) {
		n, err := h.kube.CoreV1().Nodes().Get(h.ctx, "gpu-a100-1", metav1.GetOptions{})
		return err == nil && n.Labels[keys.Pool] == "correct-pool", "label not corrected"
	})

	h.shadowJob(ns, "sneaky", 2)
	h.waitReport("the shadow job", has(drift.Shadow, "Job", "sneaky"))
	time.Sleep(time.Second)
	if _, err := h.kube.BatchV1().Jobs(ns).Get(h.ctx, "sneaky", metav1.GetOptions{}); err != nil {
		t.Fatalf("a shadow workload was deleted without --drift-delete-shadow: %v", err)
	}
	h.poll("three corrections in the history", func() (bool, string) {
		_, hist, _ := h.det.Current()
		return countChange(hist, drift.Corrected) >= 3, "history: " + changes(hist)
	})
}

// TestDeleteShadow: with --drift-delete-shadow a GPU Job that is not in Git is deleted.
func TestDeleteShadow(t *testing.T) {
	run := uniq()
	ns := "drift-shadow-" + run
	h := newHarness(t, "shadow-"+run, detector.Options{Mode: drift.ModeCorrect, DeleteShadow: true}, map[string]string{
		"web.yaml": "kind: compute\nversion: v0.1\njob: {name: web, namespace: " + ns + "}\nenvironment: {image: nginx}\nservice: {replicas: 1}\n"}, ns)
	h.shadowJob(ns, "sneaky", 1)
	h.poll("the shadow job deleted", func() (bool, string) {
		_, err := h.kube.BatchV1().Jobs(ns).Get(h.ctx, "sneaky", metav1.GetOptions{})
		return apierrors.IsNotFound(err), "still there"
	})
	h.poll("shadow-deleted in the history", func() (bool, string) {
		_, hist, _ := h.det.Current()
		return countChange(hist, drift.ShadowDeleted) == 1, changes(hist)
	})
	// A GPU Job in a namespace gpuctl does not manage is none of its business.
	h.shadowJob("default", "elsewhere", 1)
	t.Cleanup(func() { _ = h.kube.BatchV1().Jobs("default").Delete(h.ctx, "elsewhere", metav1.DeleteOptions{}) })
	time.Sleep(time.Second)
	if r, _, _ := h.det.Current(); item(r, drift.Shadow, "Job", "elsewhere") != nil {
		t.Fatalf("a job outside the managed namespaces was reported: %s", itemsOf(r))
	}
}

// TestPoolsAndControllers: a pool node that does not exist and a declared gpu-type that
// differs from the node labeler's are reported; a field written by a controller (replicas
// through the scale subresource, as an HPA does) is not drift.
func TestPoolsAndControllers(t *testing.T) {
	run := uniq()
	ns := "drift-pools-" + run
	h := newHarness(t, "pools-"+run, detector.Options{Mode: drift.ModeReport}, map[string]string{
		"pool.yaml": "kind: pool\nversion: v0.1\nmetadata: {name: pools-pool}\nnodes:\n  gpu-h100-0: {gpu-type: H100-94G}\n  ghost-node: {}\n",
		"web.yaml":  "kind: compute\nversion: v0.1\njob: {name: web, namespace: " + ns + "}\nenvironment: {image: nginx}\nservice: {replicas: 1}\n"}, ns)
	h.unlabel("gpu-h100-0")
	r, _ := h.waitReport("pool items", func(r drift.Report) bool {
		return item(r, drift.NodeMissing, "Node", "ghost-node") != nil && item(r, drift.GPUType, "Node", "gpu-h100-0") != nil
	})
	if it := item(r, drift.GPUType, "Node", "gpu-h100-0"); !strings.Contains(it.Message, "h100-94g") || !strings.Contains(it.Message, "h100-80g") {
		t.Errorf("gpu-type item %+v", it)
	}
	// A GPU pod placed on a pool node by hand, in a namespace gpuctl does not manage.
	rl := corev1.ResourceList{keys.ResourceGPU: resource.MustParse("2")}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "squatter-" + run, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "gpu-h100-0", Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Limits: rl, Requests: rl}}}}}
	if _, err := h.kube.CoreV1().Pods("default").Create(h.ctx, pod, metav1.CreateOptions{FieldManager: "kubectl-run"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.kube.CoreV1().Pods("default").Delete(h.ctx, pod.Name, metav1.DeleteOptions{}) })
	r, _ = h.waitReport("the pod on the pool node", has(drift.Shadow, "Pod", pod.Name))
	if it := item(r, drift.Shadow, "Pod", pod.Name); it.GPUs != 2 || it.Manager != "kubectl-run" || !strings.Contains(it.Message, "on node gpu-h100-0 of pool pools-pool") {
		t.Errorf("pod item %+v", it)
	}
	// The Deployment controller writes the object too (its status), so the scale update is
	// retried on a conflict, as an autoscaler does.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale, err := h.kube.AppsV1().Deployments(ns).GetScale(h.ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		scale.Spec.Replicas = 5
		_, err = h.kube.AppsV1().Deployments(ns).UpdateScale(h.ctx, "web", scale, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if r, _, _ := h.det.Current(); item(r, drift.Modified, "Deployment", "web") != nil {
		t.Fatalf("a controller's replicas reported as drift: %s", itemsOf(r))
	}
}

func countChange(hist []drift.Entry, c drift.Transition) int {
	n := 0
	for _, e := range hist {
		if e.Change == c {
			n++
		}
	}
	return n
}

func changes(hist []drift.Entry) string {
	var s []string
	for _, e := range hist {
		s = append(s, string(e.Change)+" "+e.Item.Object.String())
	}
	return strings.Join(s, ", ")
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	case int:
		return int64(n)
	}
	return -1
}

func ptr[T any](v T) *T { return &v }

// TestCorrectionLoopGuard: a writer that changes a field back after every correction is
// fought five times, then left alone, and the report says why.
func TestCorrectionLoopGuard(t *testing.T) {
	run := uniq()
	ns := "drift-guard-" + run
	h := newHarness(t, "guard-"+run, detector.Options{Mode: drift.ModeCorrect}, map[string]string{
		"web.yaml": "kind: compute\nversion: v0.1\njob: {name: web, namespace: " + ns + "}\nenvironment: {image: nginx}\nservice: {replicas: 1}\n"}, ns)
	for i := 0; ; i++ {
		h.edit("deployments", ns, "web", `{"spec":{"replicas":4}}`)
		stopped := false
		h.poll("a correction or the guard", func() (bool, string) {
			r, _, _ := h.det.Current()
			if it := item(r, drift.Modified, "Deployment", "web"); it != nil && it.Correction == "stopped" {
				stopped = true
				return true, ""
			}
			d, err := h.kube.AppsV1().Deployments(ns).Get(h.ctx, "web", metav1.GetOptions{})
			return err == nil && *d.Spec.Replicas == 1, "neither"
		})
		if stopped {
			if i != 5 {
				t.Fatalf("the guard stopped after %d corrections, want 5", i)
			}
			break
		}
		if i == 6 {
			t.Fatal("corrected more than 5 times in a row")
		}
	}
	r, _, _ := h.det.Current()
	if it := item(r, drift.Modified, "Deployment", "web"); !strings.Contains(it.Error, "changed back") || !strings.Contains(it.Error, "kubectl-edit") {
		t.Fatalf("item %+v", it)
	}
	if d, _ := h.kube.AppsV1().Deployments(ns).Get(h.ctx, "web", metav1.GetOptions{}); *d.Spec.Replicas != 4 {
		t.Fatalf("corrected after the guard stopped: replicas %d", *d.Spec.Replicas)
	}
}
