package reconciler

import (
	"testing"

	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestVerifiedGeneration: a member with a generation is unchanged while its generation is (its
// status may move its resourceVersion), but a PriorityClass, whose generation stays 1 through
// every change, is unchanged only at the same resourceVersion.
func TestVerifiedGeneration(t *testing.T) {
	for _, c := range []struct {
		apiVersion, kind string
		gk               schema.GroupKind
		want             bool
	}{
		{"apps/v1", "Deployment", schema.GroupKind{Group: "apps", Kind: "Deployment"}, true},
		{"scheduling.k8s.io/v1", "PriorityClass", schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"}, false},
	} {
		live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": c.apiVersion, "kind": c.kind,
			"metadata": map[string]any{"name": "x", "uid": "u1", "resourceVersion": "5", "generation": int64(1)}}}
		var v verified
		v.note(live, "h")
		key := object.RefOf(live).Key()
		moved := Member{Name: "x", UID: "u1", ResourceVersion: "6", Generation: 1, MetaHash: object.MetaHash(nil, nil)}
		if got := v.unchanged(c.gk, key, moved, "h"); got != c.want {
			t.Errorf("%s at another resourceVersion, same generation: unchanged %v, want %v", c.kind, got, c.want)
		}
		moved.ResourceVersion = "5"
		if !v.unchanged(c.gk, key, moved, "h") || v.unchanged(c.gk, key, moved, "other") {
			t.Errorf("%s: the same member must be unchanged for its hash only", c.kind)
		}
	}
}
