package managedfields

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOwners(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "x"}},
		"spec": map[string]any{
			"replicas": int64(3),
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "sidecar", "image": "s:1"},
				map[string]any{"name": "main", "image": "m:2", "args": []any{"--a", "--b"},
					"ports": []any{map[string]any{"containerPort": int64(8080), "protocol": "TCP"}}},
			}}},
		},
	}
	t1 := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	t2 := metav1.NewTime(t1.Add(time.Hour))
	raw := func(s string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(s)} }
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "gpuctl", Operation: "Apply", Time: &t1, FieldsV1: raw(`{"f:metadata":{"f:labels":{"f:app":{}}},
			"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:name":{},
			"f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}`)},
		{Manager: "kubectl-edit", Operation: "Update", Time: &t2, FieldsV1: raw(`{"f:spec":{"f:replicas":{},
			"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{"f:image":{},"f:args":{"v:\"--b\"":{}}}}}}}}`)},
		{Manager: "gone", Operation: "Update", Time: &t1, FieldsV1: raw(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"nope\"}":{"f:image":{}}}}}}}`)},
	}
	owners := Owners(entries, obj)
	for path, want := range map[string]string{
		"spec.replicas":                                      "kubectl-edit",
		"spec.template.spec.containers[1].image":             "kubectl-edit",
		"spec.template.spec.containers[1].args[1]":           "kubectl-edit",
		"spec.template.spec.containers[1].name":              "gpuctl",
		"spec.template.spec.containers[1].ports[0]":          "gpuctl",
		"spec.template.spec.containers[1].ports[0].protocol": "gpuctl", // parent owned
		"metadata.labels.app":                                "gpuctl",
	} {
		o, ok := OwnerOf(owners, path, func(Owner) bool { return false })
		if !ok || o.Manager != want {
			t.Errorf("%s: owner %q (%v), want %q", path, o.Manager, ok, want)
		}
	}
	notGpuctl := func(o Owner) bool { return o.Manager == "gpuctl" }
	if o, ok := OwnerOf(owners, "spec.template.spec.containers[0].image", notGpuctl); ok {
		t.Errorf("sidecar image: owner %q, want none", o.Manager)
	}
	if o, ok := Latest(owners, notGpuctl); !ok || o.Manager != "kubectl-edit" || !o.Time.Equal(t2.Time) {
		t.Errorf("latest: %+v", o)
	}
	if len(owners[2].Paths) != 0 { // the list item it names is gone
		t.Errorf("fields of a missing list item resolved: %v", owners[2].Paths)
	}
}
