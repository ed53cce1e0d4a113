package reconciler

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }

func withHash(u *unstructured.Unstructured, h string) *unstructured.Unstructured {
	u.SetAnnotations(map[string]string{keys.AppliedHash: h})
	return u
}

func TestUpToDate(t *testing.T) {
	desired := func() map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "a"},
			"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "c", "image": "x:1",
					"resources": map[string]any{"limits": map[string]any{"cpu": "0.5", "memory": "1Gi"}}}}}}}}
	}
	type testCase struct {
		live     func(map[string]any)
		liveHash string
		want     bool
	}
	cases := map[string]testCase{
		"identical":                 {live: func(map[string]any) {}, want: true},
		"server defaults added":     {live: func(m map[string]any) { spec(m)["progressDeadlineSeconds"] = int64(600) }, want: true},
		"quantity normalized":       {live: func(m map[string]any) { limits(m)["cpu"] = "500m" }, want: true},
		"number as float":           {live: func(m map[string]any) { spec(m)["replicas"] = float64(2) }, want: true},
		"replicas changed by hand":  {live: func(m map[string]any) { spec(m)["replicas"] = int64(5) }, want: false},
		"image changed":             {live: func(m map[string]any) { container(m)["image"] = "x:2" }, want: false},
		"container added":           {live: func(m map[string]any) { addContainer(m) }, want: false},
		"desired changed since":     {live: func(map[string]any) {}, liveHash: "old", want: false},
		"strings never quantities":  {live: func(m map[string]any) { container(m)["image"] = "x:1.0" }, want: false},
		"field missing in live":     {live: func(m map[string]any) { delete(limits(m), "memory") }, want: false},
		"type changed (map to str)": {live: func(m map[string]any) { spec(m)["template"] = "x" }, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := obj(desired())
			h := appliedHash(d)
			d = withHash(d, h)
			lm := desired()
			tc.live(lm)
			lh := h
			if tc.liveHash != "" {
				lh = tc.liveHash
			}
			l := withHash(obj(lm), lh)
			if got := upToDate(d, l); got != tc.want {
				t.Fatalf("upToDate = %v, want %v", got, tc.want)
			}
		})
	}
}

func spec(m map[string]any) map[string]any { return m["spec"].(map[string]any) }
func container(m map[string]any) map[string]any {
	return spec(m)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
}
func limits(m map[string]any) map[string]any {
	return container(m)["resources"].(map[string]any)["limits"].(map[string]any)
}
func addContainer(m map[string]any) {
	ps := spec(m)["template"].(map[string]any)["spec"].(map[string]any)
	ps["containers"] = append(ps["containers"].([]any), map[string]any{"name": "sidecar"})
}

func TestAppliedHashIgnoresItself(t *testing.T) {
	a := obj(map[string]any{"kind": "X", "metadata": map[string]any{"name": "a"}})
	h := appliedHash(a)
	b := withHash(a.DeepCopy(), h)
	if appliedHash(b) != h {
		t.Fatal("the hash annotation changes the hash")
	}
	a.SetLabels(map[string]string{"x": "y"})
	if appliedHash(a) == h {
		t.Fatal("a new label does not change the hash")
	}
}

func TestDiffFields(t *testing.T) {
	live := map[string]any{"metadata": map[string]any{"name": "a", "resourceVersion": "7", "labels": map[string]any{"a": "1", "gone": "x"}},
		"spec": map[string]any{"replicas": int64(1), "list": []any{"a", "b"}}, "status": map[string]any{"ready": true}}
	next := map[string]any{"metadata": map[string]any{"name": "a", "resourceVersion": "8", "labels": map[string]any{"a": "2"}},
		"spec": map[string]any{"replicas": int64(3), "list": []any{"a"}}}
	got := diffFields(live, next)
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

// TestDiffOwned: only fields the desired object sets, or that disappear, are gpuctl's diff.
func TestDiffOwned(t *testing.T) {
	live := map[string]any{"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1"}},
		"spec": map[string]any{"replicas": int64(1), "env": []any{map[string]any{"name": "A"}, map[string]any{"name": "B"}}}}
	next := map[string]any{"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1"},
		"annotations": map[string]any{"deployment.kubernetes.io/revision": "1"}}, // written by a controller
		"spec": map[string]any{"replicas": int64(3), "env": []any{map[string]any{"name": "A"}}}}
	desired := map[string]any{"metadata": map[string]any{"name": "a"},
		"spec": map[string]any{"replicas": int64(3), "env": []any{map[string]any{"name": "A"}}}}
	got := diffOwned(live, next, desired)
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
	got = diffOwned(live, next, desired)
	if len(got) != 3 || got[0].Path != "metadata.annotations" || !reflect.DeepEqual(got[0].New, map[string]any{"team": "a"}) {
		t.Fatalf("diff %+v, want metadata.annotations with gpuctl's key only", got)
	}
}
