package detector

import (
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestCompressAllKeepsUnchanged: a revision's objects that the revision before held with the
// same applied-hash keep their compressed form; the others are compressed anew, and every one
// decodes to its object.
func TestCompressAllKeepsUnchanged(t *testing.T) {
	obj := func(name, hash, image string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "a", "annotations": map[string]any{keys.AppliedHash: hash}},
			"data":     map[string]any{"image": image}}}
		return u
	}
	before := []*unstructured.Unstructured{obj("same", "h1", "x"), obj("edited", "h2", "x")}
	raws, _, err := compressAll(before, nil)
	if err != nil {
		t.Fatal(err)
	}
	prev := &desiredState{objects: map[string]*desiredObject{}}
	for i, u := range before {
		prev.objects[object.RefOf(u).Key()] = &desiredObject{ref: object.RefOf(u), hash: "h" + string(rune('1'+i)), raw: raws[i]}
	}
	after := []*unstructured.Unstructured{obj("same", "h1", "x"), obj("edited", "h3", "y"), obj("new", "h4", "z")}
	got, same, err := compressAll(after, prev)
	if err != nil {
		t.Fatal(err)
	}
	if &got[0][0] != &raws[0][0] || same[0] != prev.objects[object.RefOf(before[0]).Key()] {
		t.Error("the unchanged object was compressed again, or is not the revision before's")
	}
	if same[1] != nil || same[2] != nil {
		t.Error("an edited or new object is taken from the revision before")
	}
	if &got[1][0] == &raws[1][0] {
		t.Error("the edited object kept the compressed form of its old configuration")
	}
	for i, u := range after {
		d, err := (&desiredObject{ref: object.RefOf(u), raw: got[i]}).decode()
		if err != nil {
			t.Fatal(err)
		}
		if d.Object["data"].(map[string]any)["image"] != u.Object["data"].(map[string]any)["image"] {
			t.Errorf("%s decodes to %v", u.GetName(), d.Object)
		}
	}
}

// TestPriorityClassEditIsEvaluated: an update of a PriorityClass (generation 1 whatever
// changes) is evaluated; a Deployment's status update (same generation and metadata) is not.
func TestPriorityClassEditIsEvaluated(t *testing.T) {
	meta := func(rv string) any {
		m, _ := slimMetadata(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", ResourceVersion: rv, Generation: 1}})
		return m
	}
	if !specOrMetaChanged(schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"}, meta("5"), meta("6")) {
		t.Error("an edited PriorityClass is not evaluated")
	}
	if specOrMetaChanged(schema.GroupKind{Group: "apps", Kind: "Deployment"}, meta("5"), meta("6")) {
		t.Error("a Deployment's status update is evaluated")
	}
}
