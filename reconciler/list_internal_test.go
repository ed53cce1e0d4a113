package reconciler

import (
	"reflect"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestPruneCandidate: a member that no desired object names is kept as its apiVersion, kind
// and metadata without managedFields, with the GPUs of the whole object, from a typed page
// (built-in kinds) and from a page of the dynamic client (CRDs) alike; whole, it is kept as
// before.
func TestPruneCandidate(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	two := int32(2)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "u1", Labels: map[string]string{"a": "b"},
			Annotations: map[string]string{"c": "d"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "gpuctl"}}},
		Spec: batchv1.JobSpec{Parallelism: &two, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}}}},
		Status: batchv1.JobStatus{Active: 2},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	dyn := &unstructured.Unstructured{Object: obj}
	dyn.SetGroupVersionKind(gvk)
	wantMeta := map[string]any{"name": "j", "namespace": "ns", "uid": "u1", "labels": map[string]any{"a": "b"},
		"annotations": map[string]any{"c": "d"}}

	for _, p := range []*livePage{
		{typed: []runtime.Object{job.DeepCopy()}, items: make([]*unstructured.Unstructured, 1), gvk: gvk},
		{items: []*unstructured.Unstructured{dyn.DeepCopy()}, gvk: gvk},
	} {
		what := "typed page"
		if p.typed == nil {
			what = "dynamic page"
		}
		u, gpus, err := p.pruneCandidate(0, false)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if gpus != 2 {
			t.Errorf("%s: %d GPUs, want 2 (2 pods of 1)", what, gpus)
		}
		want := map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": wantMeta}
		if !reflect.DeepEqual(u.Object, want) {
			t.Errorf("%s: kept\n%v\nwant\n%v", what, u.Object, want)
		}
		if p.items[0] != nil {
			t.Errorf("%s: the page still holds the whole object", what)
		}
	}
	p := &livePage{typed: []runtime.Object{job.DeepCopy()}, items: make([]*unstructured.Unstructured, 1), gvk: gvk}
	u, _, err := p.pruneCandidate(0, true)
	if err != nil {
		t.Fatal(err)
	}
	if u.Object["spec"] == nil || len(u.GetManagedFields()) != 1 {
		t.Errorf("whole: kept %v, want the Job whole with its managedFields", u.Object)
	}
}
