package object

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestDiffFields(t *testing.T) {
	live := map[string]any{"metadata": map[string]any{"name": "a", "resourceVersion": "7", "labels": map[string]any{"a": "1", "gone": "x"}},
		"spec": map[string]any{"replicas": int64(1), "list": []any{"a", "b"}}, "status": map[string]any{"ready": true}}
	next := map[string]any{"metadata": map[string]any{"name": "a", "resourceVersion": "8", "labels": map[string]any{"a": "2"}},
		"spec": map[string]any{"replicas": int64(3), "list": []any{"a"}}}
	got := DiffFields(live, next)
	want := []FieldDiff{
		{Path: "metadata.labels.a", Old: "1", New: "2"},
		{Path: "metadata.labels.gone", Old: "x"},
		{Path: "spec.list[1]", Old: "b"},
		{Path: "spec.replicas", Old: int64(1), New: int64(3)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i].Path != want[i].Path || got[i].Old != want[i].Old || got[i].New != want[i].New {
			t.Errorf("diff %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestDiffFieldsSetBy: only fields the desired object sets, or that disappear, are gpuctl's diff.
func TestDiffFieldsSetBy(t *testing.T) {
	live := map[string]any{"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1"}},
		"spec": map[string]any{"replicas": int64(1), "env": []any{map[string]any{"name": "A"}, map[string]any{"name": "B"}}}}
	next := map[string]any{"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1"},
		"annotations": map[string]any{"deployment.kubernetes.io/revision": "1"}}, // written by a controller
		"spec": map[string]any{"replicas": int64(3), "env": []any{map[string]any{"name": "A"}}}}
	desired := map[string]any{"metadata": map[string]any{"name": "a"},
		"spec": map[string]any{"replicas": int64(3), "env": []any{map[string]any{"name": "A"}}}}
	got := DiffFieldsSetBy(live, next, desired)
	var paths []string
	for _, d := range got {
		paths = append(paths, d.Path)
	}
	if want := "spec.env[1],spec.replicas"; strings.Join(paths, ",") != want {
		t.Fatalf("paths %v, want %s", paths, want)
	}

	// The annotations map appears (the live one held only the applied-hash, dropped for
	// display) with a controller's key beside gpuctl's: only gpuctl's key is its change.
	desired["metadata"].(map[string]any)["annotations"] = map[string]any{"team": "a"}
	next["metadata"].(map[string]any)["annotations"].(map[string]any)["team"] = "a"
	got = DiffFieldsSetBy(live, next, desired)
	if len(got) != 3 || got[0].Path != "metadata.annotations" || !reflect.DeepEqual(got[0].New, map[string]any{"team": "a"}) {
		t.Fatalf("diff %+v, want metadata.annotations with gpuctl's key only", got)
	}
}

// TestForDisplay: the copy leaves out what the API server writes and gpuctl's applied-hash
// (the annotations map too when nothing else is in it), keeps the rest, and leaves u as it
// was; DiffFields ignores the same fields.
func TestForDisplay(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "uid": "u1", "resourceVersion": "7", "generation": int64(2),
			"creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": []any{map[string]any{"manager": "x"}},
			"annotations": map[string]any{keys.AppliedHash: "abc"}, "labels": map[string]any{"a": "b"}},
		"data":   map[string]any{"k": "v"},
		"status": map[string]any{"phase": "x"},
	}}
	got := ForDisplay(u).Object
	want := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "labels": map[string]any{"a": "b"}}, "data": map[string]any{"k": "v"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ForDisplay = %v\nwant %v", got, want)
	}
	if u.GetUID() != "u1" || u.GetAnnotations()[keys.AppliedHash] != "abc" {
		t.Errorf("ForDisplay changed its argument: %v", u.Object)
	}
	v := u.DeepCopy()
	v.SetResourceVersion("8")
	v.SetAnnotations(map[string]string{keys.AppliedHash: "def"})
	_ = unstructured.SetNestedField(v.Object, "y", "status", "phase")
	if d := DiffFields(u.Object, v.Object); len(d) != 0 {
		t.Errorf("DiffFields sees the server's fields: %v", d)
	}
	if ForDisplay(nil) != nil {
		t.Error("ForDisplay(nil) != nil")
	}
}
