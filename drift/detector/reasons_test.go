package detector_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/drift/detector"
	"github.com/gpuctl/gpuctl/internal/keys"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestResolvedReasons: each resolved history entry says why the item resolved: a shadow Job
// that ran to completion "completed", a deleted one "deleted", an edit put back by hand
// "matches Git again", an object marked to be ignored "marked g8s.host/drift: ignore".
func TestResolvedReasons(t *testing.T) {
	run := uniq()
	ns := "drift-reasons-" + run
	h := newHarness(t, "reasons-"+run, detector.Options{Mode: drift.ModeReport}, files(ns, "reasons-pool", "gpu-t4-1"))
	h.unlabel("gpu-t4-1")

	// A Job created suspended is seen as a shadow before it runs; resumed, it completes.
	rl := corev1.ResourceList{keys.ResourceGPU: *resource.NewQuantity(1, resource.DecimalSI), // the quota wants all three
		corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	job := gpuJob(metav1.ObjectMeta{Name: "quick", Namespace: ns}, rl)
	if _, err := h.kube.BatchV1().Jobs(ns).Create(h.ctx, job, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	r, _ := h.waitReport("the shadow job", has(drift.Shadow, "Job", "quick"))
	if it := item(r, drift.Shadow, "Job", "quick"); !strings.HasPrefix(it.Message, "requests 1 GPU in namespace") {
		t.Errorf("shadow message %q, want one GPU in the singular", it.Message)
	}
	if _, err := h.kube.BatchV1().Jobs(ns).Patch(h.ctx, "quick", types.MergePatchType, []byte(`{"spec":{"suspend":false}}`),
		metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
	h.shadowJob(ns, "gone", 1)
	h.waitReport("the second shadow job", has(drift.Shadow, "Job", "gone"))
	if err := h.kube.BatchV1().Jobs(ns).Delete(h.ctx, "gone", metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	h.edit("resourcequotas", ns, "team", `{"spec":{"hard":{"requests.nvidia.com/gpu":"64"}}}`)
	h.waitReport("the edited quota", has(drift.Modified, "ResourceQuota", "team"))
	h.edit("resourcequotas", ns, "team", `{"spec":{"hard":{"requests.nvidia.com/gpu":"8"}}}`)
	h.edit("deployments", ns, "web", `{"spec":{"replicas":3}}`)
	h.waitReport("the edited Deployment", has(drift.Modified, "Deployment", "web"))
	h.edit("deployments", ns, "web", `{"metadata":{"annotations":{"g8s.host/drift":"ignore"}}}`)

	want := map[string]string{
		"Job " + ns + "/quick":          "completed",
		"Job " + ns + "/gone":           "deleted",
		"ResourceQuota " + ns + "/team": "matches Git again",
		"Deployment " + ns + "/web":     "marked g8s.host/drift: ignore",
	}
	h.poll("a reason on each resolved entry", func() (bool, string) {
		_, hist, _ := h.det.Current()
		got := map[string]string{}
		for _, e := range hist {
			if e.Change == drift.Resolved {
				got[e.Item.Object.String()] = e.Reason
			}
		}
		for obj, reason := range want {
			if got[obj] != reason {
				j, _ := h.kube.BatchV1().Jobs(ns).Get(h.ctx, "quick", metav1.GetOptions{})
				return false, fmt.Sprintf("resolved entries (object: reason): %s; quick: %+v", format(got), j.Status)
			}
		}
		return true, ""
	})
}

func format(m map[string]string) string {
	s := ""
	for k, v := range m {
		s += k + ": " + v + "; "
	}
	return s
}

// TestForgedInventoryLabelIsNotAHidingPlace: the shadow watches leave out the workloads that
// gpuctl applied. A team that forges the inventory's label on a GPU Job it made by hand, to
// keep it out of the shadow report, does not hide it: the engine never prunes it (it lacks
// gpuctl's own label), and the report names it a shadow.
func TestForgedInventoryLabelIsNotAHidingPlace(t *testing.T) {
	run := uniq()
	ns := "drift-forged-" + run
	h := newHarness(t, "forged-"+run, detector.Options{Mode: drift.ModeReport}, files(ns, "forged-pool", "gpu-t4-1"))
	job := gpuJob(metav1.ObjectMeta{Name: "hidden", Namespace: ns,
		Labels: map[string]string{keys.ApplySetPartOf: h.engine.InventoryID()}}, oneGPU)
	if _, err := h.kube.BatchV1().Jobs(ns).Create(h.ctx, job, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	h.waitReport("the forged Job as a shadow", has(drift.Shadow, "Job", "hidden"))
}

// TestForgedGpuctlLabelsAreNotAHidingPlace: a team that forges both the inventory's label and
// gpuctl's on a GPU Job it made by hand (one that the shadow watches leave out as gpuctl's),
// and keeps the engine from pruning it with the prune annotation, does not hide it: it is not
// in Git, and the report names it a shadow after the next sync. gpuctl never deletes it as a
// shadow (what carries its labels is the engine's to prune).
func TestForgedGpuctlLabelsAreNotAHidingPlace(t *testing.T) {
	run := uniq()
	ns := "drift-forged2-" + run
	h := newHarness(t, "forged2-"+run, detector.Options{Mode: drift.ModeCorrect, DeleteShadow: true}, files(ns, "forged2-pool", "gpu-t4-1"))
	job := gpuJob(metav1.ObjectMeta{Name: "hidden", Namespace: ns,
		Labels:      map[string]string{keys.ApplySetPartOf: h.engine.InventoryID(), keys.ManagedBy: keys.ManagedByValue},
		Annotations: map[string]string{keys.Prune: keys.PruneDisabled}}, oneGPU)
	if _, err := h.kube.BatchV1().Jobs(ns).Create(h.ctx, job, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	h.write("note.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: note, namespace: "+ns+"}\ndata: {a: b}\n") // a sync
	h.waitReport("the forged Job as a shadow", has(drift.Shadow, "Job", "hidden"))
	if _, err := h.kube.BatchV1().Jobs(ns).Get(h.ctx, "hidden", metav1.GetOptions{}); err != nil {
		t.Fatalf("the forged Job was deleted as a shadow: %v", err)
	}
}

// TestWorkloadOfAGitObjectIsNotAShadow: a GPU Job whose controller is an object in Git (a
// CronJob's Job) is not a shadow; one whose controller is a CronJob made by hand is. (An owner
// reference that names no existing object, a forged UID, makes a Job that the garbage
// collector deletes.)
func TestWorkloadOfAGitObjectIsNotAShadow(t *testing.T) {
	run := uniq()
	ns := "drift-owned-" + run
	fs := files(ns, "owned-pool", "gpu-t4-1")
	fs["nightly.yaml"] = "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly, namespace: " + ns + "}\n" +
		"spec:\n  schedule: '0 3 * * *'\n  suspend: true\n  jobTemplate:\n    spec:\n      template:\n        spec:\n" +
		"          restartPolicy: Never\n          containers: [{name: c, image: x}]\n"
	h := newHarness(t, "owned-"+run, detector.Options{Mode: drift.ModeReport}, fs)
	var cron *batchv1.CronJob
	h.poll("the CronJob from Git", func() (bool, string) {
		var err error
		cron, err = h.kube.BatchV1().CronJobs(ns).Get(h.ctx, "nightly", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	job := func(name, owner string, uid types.UID) {
		t.Helper()
		j := gpuJob(metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "batch/v1", Kind: "CronJob", Name: owner, UID: uid, Controller: ptr(true)}}}, oneGPU)
		if _, err := h.kube.BatchV1().Jobs(ns).Create(h.ctx, j, metav1.CreateOptions{FieldManager: "kube-controller-manager"}); err != nil {
			t.Fatal(err)
		}
	}
	byHand := cron.DeepCopy()
	byHand.ObjectMeta = metav1.ObjectMeta{Name: "by-hand", Namespace: ns}
	byHand, err := h.kube.BatchV1().CronJobs(ns).Create(h.ctx, byHand, metav1.CreateOptions{FieldManager: "kubectl-create"})
	if err != nil {
		t.Fatal(err)
	}
	job("nightly-1", "nightly", cron.UID)
	job("by-hand-1", "by-hand", byHand.UID)
	r, _ := h.waitReport("the Job of the CronJob made by hand as a shadow", has(drift.Shadow, "Job", "by-hand-1"))
	if it := item(r, drift.Shadow, "Job", "nightly-1"); it != nil {
		t.Errorf("the Git CronJob's Job is a shadow: %s", it.Message)
	}
}

// oneGPU is what a Job of these tests requests and is limited to.
var oneGPU = corev1.ResourceList{keys.ResourceGPU: resource.MustParse("1")}

// gpuJob is a suspended Job with meta whose one container requests and is limited to rl.
func gpuJob(meta metav1.ObjectMeta, rl corev1.ResourceList) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: meta,
		Spec: batchv1.JobSpec{Suspend: ptr(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{Limits: rl, Requests: rl}}}}}}}
}

// TestMultiKueueCopyIsNotAShadow: MultiKueue's labels (multikueue-origin and
// prebuilt-workload-name) are believed only in a cluster that the configuration lists as a
// MultiKueue worker, where Kueue's copy of a manager's job is no shadow (see
// TestMultiKueueCopyInAWorker). This cluster is none: a GPU Job that a team member made by hand
// with both labels (and gpuctl's labels of another inventory, as a copy has) is a shadow, and
// is deleted in correct mode with --drift-delete-shadow, as are a Job with the origin label
// alone and a Deployment with both (MultiKueue copies Jobs and JobSets only).
func TestMultiKueueCopyIsNotAShadow(t *testing.T) {
	run := uniq()
	ns := "drift-mk-" + run
	h := newHarness(t, "mk-"+run, detector.Options{Mode: drift.ModeCorrect, DeleteShadow: true, Resync: 200 * time.Millisecond}, files(ns, "mk-pool", "gpu-t4-1"))
	forgedJob := gpuJob(metav1.ObjectMeta{Name: "copy", Namespace: ns, Labels: map[string]string{
		keys.ApplySetPartOf: "applyset-of-the-manager-v1", keys.ManagedBy: keys.ManagedByValue,
		keys.MultiKueueOrigin: "multikueue", keys.KueuePrebuiltWorkload: "job-copy-1a2b3"}}, oneGPU)
	half := gpuJob(metav1.ObjectMeta{Name: "half", Namespace: ns, Labels: map[string]string{keys.MultiKueueOrigin: "multikueue"}}, oneGPU)
	for _, j := range []*batchv1.Job{forgedJob, half} {
		if _, err := h.kube.BatchV1().Jobs(ns).Create(h.ctx, j, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
			t.Fatal(err)
		}
	}
	// A tenant's kubectl gives a Deployment of GPUs both labels: MultiKueue copies no
	// Deployment (its pods, whose template lacks them, run here), so it is a shadow as any.
	forged := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: ns, Labels: map[string]string{
		keys.MultiKueueOrigin: "multikueue", keys.KueuePrebuiltWorkload: "job-forged-1a2b3"}},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "forged"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "forged"}}, Spec: forgedJob.Spec.Template.Spec}}}
	forged.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if _, err := h.kube.AppsV1().Deployments(ns).Create(h.ctx, forged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ what, name string }{
		{"the Job with both MultiKueue labels, outside a worker", "copy"},
		{"the Job with the origin label alone", "half"},
		{"the Deployment with forged MultiKueue labels", "forged"},
	} {
		h.poll(w.what+" deleted as a shadow", func() (bool, string) {
			var err error
			if w.name == "forged" {
				_, err = h.kube.AppsV1().Deployments(ns).Get(h.ctx, w.name, metav1.GetOptions{})
			} else {
				_, err = h.kube.BatchV1().Jobs(ns).Get(h.ctx, w.name, metav1.GetOptions{})
			}
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
}
