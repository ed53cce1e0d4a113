package object

import (
	"encoding/json"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRef(t *testing.T) {
	type testCase struct {
		obj                              map[string]any
		str, group, version, key, asJSON string
	}
	cases := map[string]testCase{
		"namespaced, with a group": {
			obj: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "team-a"}},
			str: "Deployment team-a/web", group: "apps", version: "v1", key: "apps/Deployment/team-a/web",
			asJSON: `{"apiVersion":"apps/v1","kind":"Deployment","namespace":"team-a","name":"web"}`},
		"cluster-scoped, core group": {
			obj: map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "gpu-1"}},
			str: "Node gpu-1", group: "", version: "v1", key: "/Node//gpu-1",
			asJSON: `{"apiVersion":"v1","kind":"Node","name":"gpu-1"}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := RefOf(&unstructured.Unstructured{Object: tc.obj})
			if r.String() != tc.str || r.Group() != tc.group || r.Version() != tc.version || r.Key() != tc.key {
				t.Errorf("%+v: %q, group %q, version %q, key %q", r, r.String(), r.Group(), r.Version(), r.Key())
			}
			if gvk := r.GroupVersionKind(); gvk.Group != tc.group || gvk.Version != tc.version || gvk.Kind != r.Kind {
				t.Errorf("GroupVersionKind %v", gvk)
			}
			if k := KeyOf(r.GroupKind(), r.Namespace, r.Name); k != tc.key {
				t.Errorf("KeyOf = %q, want %q", k, tc.key)
			}
			b, err := json.Marshal(r)
			if err != nil || string(b) != tc.asJSON {
				t.Errorf("JSON %s (%v), want %s", b, err, tc.asJSON)
			}
		})
	}
}

// TestKeyAcrossVersions: one object read through two API versions has one key.
func TestKeyAcrossVersions(t *testing.T) {
	a := Ref{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler", Namespace: "t", Name: "h"}
	b := a
	b.APIVersion = "autoscaling/v2"
	if a.Key() != b.Key() || a == b {
		t.Errorf("keys %q and %q", a.Key(), b.Key())
	}
	if KeyOf(schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}, "t", "h") != a.Key() {
		t.Error("KeyOf differs from Key")
	}
}

func TestCompare(t *testing.T) {
	refs := []Ref{
		{APIVersion: "v1", Kind: "Service", Namespace: "b", Name: "a"},
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "b", Name: "z"},
		{APIVersion: "v1", Kind: "Namespace", Name: "b"},
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "b", Name: "a"},
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "a", Name: "z"},
		{APIVersion: "apps/v1beta1", Kind: "Deployment", Namespace: "b", Name: "a"},
	}
	slices.SortFunc(refs, Compare)
	var got []string
	for _, r := range refs {
		got = append(got, r.APIVersion+" "+r.String())
	}
	want := []string{"v1 Namespace b", "apps/v1 Deployment a/z", "apps/v1 Deployment b/a", "apps/v1beta1 Deployment b/a",
		"apps/v1 Deployment b/z", "v1 Service b/a"}
	if !slices.Equal(got, want) {
		t.Errorf("order\n%q\nwant\n%q", got, want)
	}
}
