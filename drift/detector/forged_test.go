package detector_test

import (
	"testing"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/drift/detector"
	"github.com/gpuctl/gpuctl/internal/keys"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestForgedInventoryLabelIsNotAHidingPlace: the shadow watches leave out the workloads that
// gpuctl applied. A team that forges the inventory's label on a GPU Job it made by hand, to
// keep it out of the shadow report, does not hide it: the engine never prunes it (it lacks
// gpuctl's own label), and the report names it a shadow.
func TestForgedInventoryLabelIsNotAHidingPlace(t *testing.T) {
	run := uniq()
	ns := "drift-forged-" + run
	h := newHarness(t, "forged-"+run, detector.Options{Mode: drift.ModeReport}, files(ns, "forged-pool", "gpu-t4-1"))
	rl := corev1.ResourceList{keys.ResourceGPU: resource.MustParse("1")}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "hidden", Namespace: ns,
		Labels: map[string]string{keys.ApplySetPartOf: h.engine.InventoryID()}},
		Spec: batchv1.JobSpec{Suspend: ptr(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{Limits: rl, Requests: rl}}}}}}}
	if _, err := h.kube.BatchV1().Jobs(ns).Create(h.ctx, job, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	h.waitReport("the forged Job as a shadow", has(drift.Shadow, "Job", "hidden"))
}
