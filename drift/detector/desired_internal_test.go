package detector

import (
	"bytes"
	"compress/flate"
	"reflect"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
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
	raws, _, err := compressAll(before, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	prev := &desiredState{objects: map[string]*desiredObject{}}
	for i, u := range before {
		prev.objects[object.RefOf(u).Key()] = &desiredObject{ref: object.RefOf(u), hash: "h" + string(rune('1'+i)), raw: raws[i]}
	}
	after := []*unstructured.Unstructured{obj("same", "h1", "x"), obj("edited", "h3", "y"), obj("new", "h4", "z")}
	got, same, err := compressAll(after, nil, prev)
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

// TestCompressionUsesTheDictionary: a Job manifest as gpuctl applies it compresses to at most
// 60 % of what flate makes of it alone, a training workload's Job to at most 45 % (the preset
// dictionary holds what such objects share), and each decodes to itself.
func TestCompressionUsesTheDictionary(t *testing.T) {
	quantities := map[string]any{"cpu": "4", "memory": "32Gi", keys.ResourceGPU: "2"}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "sft-qwen-7b", "namespace": "team-a",
			"labels":      map[string]any{keys.ManagedBy: keys.ManagedByValue, keys.ApplySetPartOf: "applyset-3vOT9S2ZbXoaP0Hj5m4B7g-v1", keys.JobType: "training"},
			"annotations": map[string]any{keys.AppliedHash: "9c1f3e2d7a5b4c6d8e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d", keys.Source: "team-a/sft-qwen.yaml"}},
		"spec": map[string]any{"backoffLimit": int64(0), "template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{keys.JobType: "training"}},
			"spec": map[string]any{"restartPolicy": "Never", "priorityClassName": keys.PriorityClassHigh,
				"containers": []any{map[string]any{"name": "main", "image": "registry.example.com/llama-factory:v0.8.0",
					"command":   []any{"llamafactory-cli", "train", "--stage", "sft", "--model", "Qwen/Qwen2-7B"},
					"resources": map[string]any{"limits": quantities, "requests": quantities}}}}}}}}
	compressesTo(t, u, 60)
	// A training workload as the render writes it, applied: at most 45 %.
	fs, err := render.MemFS("/repo", map[string]string{"team-a/sft.yaml": "kind: training\nversion: v0.1\n" +
		"job: {name: sft-qwen-7b, suspend: true, description: first try}\n" +
		"environment: {image: registry.example.com/llama-factory:v0.8.0, command: [llamafactory-cli, train, --seed, '7']}\n" +
		"resources: {gpu: 1, cpu: 1, memory: 1Gi}\n"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := render.New(render.Options{}).Render(fs, "/repo")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Objects {
		if o.GetKind() == "Job" {
			object.SetLabel(o, keys.ApplySetPartOf, "applyset-3vOT9S2ZbXoaP0Hj5m4B7g-v1")
			object.SetAnnotation(o, keys.AppliedHash, "9c1f3e2d7a5b4c6d8e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d")
			compressesTo(t, o, 45)
		}
	}
}

// compressesTo fails unless the compressor makes of u at most percent of what flate makes of
// it alone, and what it makes decodes to u.
func compressesTo(t *testing.T, u *unstructured.Unstructured, percent int) {
	t.Helper()
	raw, err := (&compressor{}).compress(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	js, err := object.AppendJSON(nil, u.Object)
	if err != nil {
		t.Fatal(err)
	}
	var alone bytes.Buffer
	w, _ := flate.NewWriter(&alone, flate.BestCompression)
	_, _ = w.Write(js)
	_ = w.Close()
	if len(raw) > alone.Len()*percent/100 {
		t.Errorf("%s: %d bytes of JSON compressed to %d bytes, %d without the dictionary: want at most %d %%", u.GetName(), len(js), len(raw), alone.Len(), percent)
	}
	d, err := (&desiredObject{ref: object.RefOf(u), raw: raw}).decode()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Object, u.Object) {
		t.Errorf("%s decodes to %v", u.GetName(), d.Object)
	}
}
