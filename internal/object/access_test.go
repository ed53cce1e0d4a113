package object

import (
	"reflect"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The direct reads and writes of metadata (RefOf, KindOf, SetLabel, SetAnnotation,
// DropAppliedHash) must do what the unstructured getters and setters do, on well-formed
// objects and on the malformed ones a hostile file may hold — but for a metadata field that
// is not a map, which SetLabels leaves as it is (the label is not set) and SetLabel replaces.
func TestAccessIsTheGetters(t *testing.T) {
	shapes := []map[string]any{
		{},
		{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "a", "namespace": "ns"}},
		{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "n", "labels": map[string]any{"x": "1"}}},
		{"apiVersion": int64(3), "kind": []any{"Job"}, "metadata": "not a map"},
		{"kind": "Job", "metadata": map[string]any{"name": int64(7), "namespace": nil, "labels": "oops", "annotations": nil}},
		{"kind": "Job", "metadata": map[string]any{"name": "b", "annotations": map[string]any{keys.AppliedHash: "h"}}},
		{"kind": "Job", "metadata": map[string]any{"name": "c", "annotations": map[string]any{keys.AppliedHash: "h", "k": "v"}}},
		{"kind": "Job", "metadata": nil},
	}
	for i, shape := range shapes {
		u := &unstructured.Unstructured{Object: shape}
		want := Ref{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
		if got := RefOf(u); got != want {
			t.Errorf("shape %d: RefOf %+v, the getters %+v", i, got, want)
		}
		if KindOf(u) != u.GetKind() {
			t.Errorf("shape %d: KindOf %q, GetKind %q", i, KindOf(u), u.GetKind())
		}
		for _, field := range []string{"labels", "annotations"} {
			a, b := u.DeepCopy(), u.DeepCopy()
			if field == "labels" {
				SetLabel(a, "k", "v")
				l := b.GetLabels()
				if l == nil {
					l = map[string]string{}
				}
				l["k"] = "v"
				b.SetLabels(l)
				if a.GetLabels()["k"] != "v" || badMeta(u) == reflect.DeepEqual(a.GetLabels(), b.GetLabels()) {
					t.Errorf("shape %d: SetLabel gives %v, SetLabels %v", i, a.GetLabels(), b.GetLabels())
				}
				continue
			}
			SetAnnotation(a, "k", "v")
			an := b.GetAnnotations()
			if an == nil {
				an = map[string]string{}
			}
			an["k"] = "v"
			b.SetAnnotations(an)
			if a.GetAnnotations()["k"] != "v" || badMeta(u) == reflect.DeepEqual(a.GetAnnotations(), b.GetAnnotations()) {
				t.Errorf("shape %d: SetAnnotation gives %v, SetAnnotations %v", i, a.GetAnnotations(), b.GetAnnotations())
			}
		}
		d := u.DeepCopy()
		DropAppliedHash(d)
		if _, has := d.GetAnnotations()[keys.AppliedHash]; has {
			t.Errorf("shape %d: the applied-hash is still there", i)
		}
		if ann, ok := d.Object["metadata"].(map[string]any); ok {
			if a, isMap := ann["annotations"].(map[string]any); isMap && len(a) == 0 {
				t.Errorf("shape %d: an empty annotations map is left", i)
			}
		}
	}
}

// badMeta tells an object whose metadata field is there but not a map.
func badMeta(u *unstructured.Unstructured) bool {
	md, there := u.Object["metadata"]
	_, isMap := md.(map[string]any)
	return there && !isMap
}
