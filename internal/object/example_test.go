package object_test

import (
	"fmt"

	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func Example() {
	before := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "train", "namespace": "team-a"},
		"spec": map[string]any{"parallelism": int64(2), "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "main", "resources": map[string]any{
				"limits": map[string]any{"nvidia.com/gpu": "4"}}}}}}}}}
	after := before.DeepCopy()
	_ = unstructured.SetNestedField(after.Object, int64(3), "spec", "parallelism")
	_ = unstructured.SetNestedField(after.Object, map[string]any{"team": "a"}, "metadata", "labels")

	fmt.Println(object.RefOf(after))
	for _, d := range object.DiffFields(before.Object, after.Object) {
		fmt.Printf("%s: %s → %s\n", d.Path, object.Display(d.Old), object.Display(d.New))
	}
	fmt.Println("GPUs:", object.GPUs(before), "→", object.GPUs(after))
	// Output:
	// Job team-a/train
	// metadata.labels: <none> → {"team":"a"}
	// spec.parallelism: 2 → 3
	// GPUs: 8 → 12
}
